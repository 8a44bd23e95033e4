# Writes src/support/version.h.in to OUTPUT with the current git revision (cmake -P script, run on
# every build by the tierjit_version_header target in the top CMakeLists.txt). configure_file
# rewrites OUTPUT only when its text changes, so an unchanged revision rebuilds nothing.
# Inputs: SOURCE_DIR (the repository), PROJECT_VERSION, INPUT, OUTPUT.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE TIERJIT_GIT_REV OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
configure_file(${INPUT} ${OUTPUT} @ONLY)
