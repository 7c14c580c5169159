#!/usr/bin/env bash
# Windowed recording against a full recording on minidb (does it give the same
# answer? By hand; figures in docs/performance.md): RUNS interleaved pairs of
# the contended preset, one recorded in full and one with `vprof run --sample
# PCT`, each analyzed; prints per run the wall time, the trace's size, the
# counted intervals, the latency line and the top factors with their ci95.
# Usage: scripts/sample-minidb.sh [WORK_DIR]
#   env: VPROF (default build/src/vprof), RUNS (3), PCT (10), WINDOW_MS (50),
#        TXNS (20000), FUNCTIONS (scripts/lib/minidb-gate.sh's)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/vprof-sample-minidb}
vprof=${VPROF:-$root/build/src/vprof}
runs=${RUNS:-3} pct=${PCT:-10} window=${WINDOW_MS:-50} txns=${TXNS:-20000}
source "$root/scripts/lib/minidb-gate.sh"
mkdir -p "$work"
minidb_gate_build "$root/examples/minidb" "$work/build"
bench=$work/build/minidb/b/minidb_bench
one() {  # one: NAME [vprof run flags...]
  local name=$1
  shift
  rm -rf "$work/$name" "$work/data"
  mkdir -p "$work/data"
  local t0=$SECONDS
  VPROF_SAMPLE_WINDOW_MS=$window "$vprof" run "$@" --trace-dir "$work/$name" -- "$bench" --preset contended \
    --txns "$txns" --dir "$work/data" >/dev/null 2>&1
  local wall=$((SECONDS - t0)) size
  size=$(du -sm "$work/$name" | cut -f1)
  echo "== $name: ${wall} s, trace ${size} MB"
  "$vprof" analyze "$work/$name" --bootstrap 200 | grep -E '^windowed|^latency|^ +[0-9] +[a-z(]' | head -6
}
for i in $(seq 1 "$runs"); do
  one "full-$i"
  one "sampled-$i" --sample "$pct"
done
