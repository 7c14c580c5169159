#!/bin/bash
# Does the planted function rank first under load? The long version: the planted
# server (tests/runtime/planted_server.cc)
# RUNS times under load, with preemption recorded and without (VPROF_PREEMPT=0),
# alternating; prints per run the first function in the ranking and the
# preemption share, and per setting how often the planted fn#4 came first.
#
#   scripts/planted-server.sh [BUILD_DIR] [RUNS] [REQUESTS] [SPINNERS]
#   defaults:                 build       10     2000       2
# For "the test suite running beside it" instead of spinners: SPINNERS=0 and
# run `cd build && ctest -j2` in another shell.
set -euo pipefail
build=${1:-build} runs=${2:-10} requests=${3:-2000} spinners=${4:-2}
vprof=$build/src/vprof server=$build/tests/runtime/planted_server
for f in "$vprof" "$server"; do
  [ -x "$f" ] || { echo "$0: $f: not built (cmake --build $build --target vprof planted_server)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A first=([1]=0 [0]=0)
for i in $(seq "$runs"); do
  for p in 1 0; do
    rm -rf "$work/t"
    VPROF_PREEMPT=$p VPROF_TRACE_DIR=$work/t "$server" "$requests" "$i" "$spinners" 2>/dev/null
    # -d 0: rank every factor (preemption may leave the functions under 5%).
    line=$("$vprof" analyze -d 0 --json - "$work/t" | python3 -c '
import json, sys
a = json.load(sys.stdin)
fn = next((f["functions"][0] for f in a["factors"] if f["kind"] != "cov" and f["functions"]), "-")
p = a["preemption"]
print(fn, "not-measured" if p is None else "%.1f%%" % (100 * p))')
    echo "run $i VPROF_PREEMPT=$p: first function ${line% *}, preemption ${line#* }"
    [ "${line%% *}" = "fn#4" ] && first[$p]=$((first[$p] + 1))
  done
done
echo "planted fn#4 first: ${first[1]}/$runs with preemption recorded, ${first[0]}/$runs without"
