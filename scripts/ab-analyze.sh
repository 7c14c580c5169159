#!/bin/bash
# A/B timing of `vprof analyze` builds on one trace, interleaved (this machine's
# speed drifts within minutes, so only alternating runs compare).
#
#   scripts/ab-analyze.sh TRACE_DIR RUNS VPROF_A VPROF_B [...]
#   ARGS="--threads 2" scripts/ab-analyze.sh ...
#
# Prints, per binary, the minimum, first quartile and median task-clock
# (perf stat) over RUNS runs. The 16x benchmark trace is made with
#   VPROF_BENCH_PROFILE=files VPROF_BENCH_FILES=/tmp/bench16x build/tests/bench/vprof_bench_analyze
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 TRACE_DIR RUNS VPROF..." >&2
  exit 2
fi
trace=$1 runs=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  for k in $(seq $#); do
    bin=${!k}
    # shellcheck disable=SC2086
    perf stat -x, -e task-clock "$bin" analyze ${ARGS:-} "$trace" 2>&1 >/dev/null |
      awk -F, '/task-clock/ {print $1}' >> "$out/$k"
  done
done
for k in $(seq $#); do
  sort -g "$out/$k" | awk -v name="${!k}" '{v[NR] = $1}
    END {printf "%s: n=%d task-clock min %.1f q1 %.1f median %.1f ms\n", name, NR, v[1],
         v[int((NR + 3) / 4)], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
done
