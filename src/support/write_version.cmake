# Writes src/support/version.h.in to OUTPUT with the current git revision (cmake -P script, run on
# every build by the tierjit_version_header target in the top CMakeLists.txt). configure_file
# rewrites OUTPUT only when its text changes, so an unchanged revision rebuilds nothing.
# Inputs: SOURCE_DIR (the repository), PROJECT_VERSION, INPUT, OUTPUT.
# A build from a tree with uncommitted changes to tracked files says so ("<rev>-dirty"): its
# benchmark reports (peer_version, tierjit --version) are not those of <rev>. (Code cache keys
# do not use the revision: src/cache/key.cc hashes the code generator's sources.)
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE TIERJIT_GIT_REV OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(TIERJIT_GIT_REV)
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE TIERJIT_GIT_DIRTY OUTPUT_QUIET ERROR_QUIET)
  if(TIERJIT_GIT_DIRTY EQUAL 1)
    set(TIERJIT_GIT_REV "${TIERJIT_GIT_REV}-dirty")
  endif()
endif()
configure_file(${INPUT} ${OUTPUT} @ONLY)
