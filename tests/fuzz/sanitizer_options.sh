# Sourced by scripts/fuzz.sh and scripts/test-asan.sh: run-time options of the sanitizer build.
# ASan: abort on the first report (a fuzz finding or a failed test); keep leak detection on.
# UBSan: reports are fatal already (-fno-sanitize-recover=undefined); print the stack with them.
# OMP_NUM_THREADS=1: one OpenMP thread outside Sessions too (the tests' Sessions use 1 already).
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
