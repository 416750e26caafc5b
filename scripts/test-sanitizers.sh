#!/usr/bin/env bash
# The sanitizer job: the whole test suite built with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan/, beside the normal build/), then the scenario, trace
# and expert-load fuzzers for a minute each under both. Any sanitizer report stops the test that hit it
# (-fno-sanitize-recover=all, halt_on_error) and fails the job.
#
#   scripts/test-sanitizers.sh                     # what CI runs after scripts/test.sh
#   PODSIM_FUZZ_SECONDS=600 scripts/test-sanitizers.sh -R fuzz   # extra ctest arguments pass through
#
# clang, not gcc: clang's -fsanitize=undefined checks float-to-integer conversions that
# overflow (float-cast-overflow), gcc's does not. jemalloc is off (PODSIM_JEMALLOC=OFF): ASan
# finds its bugs through its own malloc. SimGrid and the other Debian libraries are not
# instrumented; their memory errors would go unseen, ours in calls into them do not.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --sanitizers
jobs=$(nproc 2>/dev/null || echo 2)
# No Python module here (PODSIM_PYTHON=OFF): an instrumented module cannot load into Debian's
# uninstrumented python3 (undefined __ubsan_* symbols); its C++ is the library the suite covers.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DPODSIM_SANITIZE=ON -DPODSIM_JEMALLOC=OFF -DPODSIM_PYTHON=OFF >/dev/null
cmake --build build-asan -j "$jobs"

# detect_leaks: LeakSanitizer at each test process's exit. Simulations run in forked children
# that leave with _exit (sim/engine/replay.cpp), so SimGrid's own allocations, which it frees
# only at process exit or never, are not checked; should a leak inside SimGrid or another
# uninstrumented library ever be reported, tests/sanitizers/lsan.supp is where it is named
# (by library, never by a podsim frame).
# detect_stack_use_after_return stays off: SimGrid switches actor stacks behind ASan's back.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0:print_summary=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export PODSIM_FUZZ_SECONDS="${PODSIM_FUZZ_SECONDS:-60}"

# Tests labelled `sanitizer-skip` are left out here (tests/CMakeLists.txt says which and why);
# the normal build runs them.
start=$(date +%s)
ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE sanitizer-skip "$@"
echo "podsim: the sanitizer job's tests took $(( $(date +%s) - start )) s"
