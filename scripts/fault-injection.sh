#!/usr/bin/env bash
# The long version of the suite's fault-injection tests: kill `vprof instrument`
# and `vprof restore` at 200 random moments in their write windows (SIGKILL,
# SIGINT, SIGTERM, on a 30-file tree), and whole `vprof iterate` sessions at 30
# random moments; after each, the tree must be pristine or `vprof restore` must
# make it so, byte for byte. The suite runs 12 and 4 of these.
#   scripts/fault-injection.sh [ROUNDS [ITERATE_ROUNDS]]     (BUILD_DIR=build)
# Prints the seed of each run: VPROF_FAULT_SEED=N replays one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
rounds=${1:-200}
iterate_rounds=${2:-30}
cmake --build "$build" --target instrumenter_tests iterate_kill_tests vprof-clang >/dev/null
start=$SECONDS
VPROF_FAULT_ROUNDS=$rounds "$build/tests/instrumenter/instrumenter_tests" \
  --gtest_filter=TreeSafety.KilledAtRandomMomentsTheTreeAlwaysComesBack | grep -E 'fault injection|OK|FAILED|Failure' 
echo "instrument/restore: $((SECONDS - start)) s"
start=$SECONDS
VPROF_FAULT_ROUNDS=$iterate_rounds "$build/tests/iterate/iterate_kill_tests" | grep -E 'fault injection|OK|FAILED|Failure'
echo "iterate: $((SECONDS - start)) s"
