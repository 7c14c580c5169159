#!/usr/bin/env bash
# CI: vprof gate on examples/minidb. Base: minidb as of the merge-base of
# HEAD and BASE_BRANCH (main); head: this tree's. Both are instrumented by
# this vprof at the same functions (scripts/lib/minidb-gate.sh) and run on the
# contended preset, interleaved: BASE_RUNS (15) runs of the base, one head
# run after every third of them (RUNS, 5). The base's runs are recorded as a
# history (`vprof gate --history DIR --record`) and the head's judged against
# it (docs/gate.md, "Against a history"): a permutation test over the runs,
# whose false-alarm rate is its --alpha (1%) whatever minidb's heavy tail
# does; the two-sided `--baseline-runs` gate said REGRESSION on an unchanged
# build here. Exit: the gate's (0 pass, 1 regression, 2 error).
# Reports in WORK_DIR: gate.txt, gate.json, junit.xml.
# Usage: scripts/gate-minidb.sh [WORK_DIR]
#   env: VPROF (build/src/vprof), BASE_REV (the merge-base), BASE_BRANCH (main),
#        BASE_RUNS (15), RUNS (5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/vprof-gate-minidb}
vprof=${VPROF:-$root/build/src/vprof}
base_runs=${BASE_RUNS:-15}
runs=${RUNS:-5}
source "$root/scripts/lib/minidb-gate.sh"

# The merge-base with main (a fresh clone may only have origin/main); with
# neither, HEAD against itself (the gate then checks only its own noise).
base_rev=${BASE_REV:-$(git -C "$root" merge-base HEAD "${BASE_BRANCH:-main}" 2>/dev/null ||
                       git -C "$root" merge-base HEAD "origin/${BASE_BRANCH:-main}" 2>/dev/null ||
                       git -C "$root" rev-parse HEAD)}
start=$(date +%s)
rm -rf "$work"
mkdir -p "$work/data" "$work/base-src"
git -C "$root" archive "$base_rev" examples/minidb | tar -x -C "$work/base-src"
minidb_gate_build "$work/base-src/examples/minidb" "$work/base"
minidb_gate_build "$root/examples/minidb" "$work/head"
base=() head=()
head_rev=$(git -C "$root" rev-parse HEAD)
every=$(( (base_runs + runs - 1) / runs ))
k=0 seed=0
while [ "${#base[@]}" -lt "$base_runs" ] || [ "${#head[@]}" -lt "$runs" ]; do
  k=$((k + 1)) seed=$((seed + 1))
  if [ "${#base[@]}" -lt "$base_runs" ]; then
    VPROF_BUILD_COMMIT=$base_rev minidb_gate_run "$work/base" "$work/base-$k.vprof" "$work/data" --seed "$seed"
    base+=("$work/base-$k.vprof")
  fi
  if [ "${#head[@]}" -lt "$runs" ] && { [ $((k % every)) = 0 ] || [ "${#base[@]}" -ge "$base_runs" ]; }; then
    seed=$((seed + 1))
    VPROF_BUILD_COMMIT=$head_rev minidb_gate_run "$work/head" "$work/head-$k.vprof" "$work/data" --seed "$seed"
    head+=("$work/head-$k.vprof")
  fi
done
"$vprof" gate --history "$work/history" --record --runs "${base[@]}" >/dev/null
rc=0
"$vprof" gate --history "$work/history" --history-runs "$base_runs" --runs "${head[@]}" \
  --name "minidb contended (base $(git -C "$root" rev-parse --short "$base_rev"))" \
  --junit "$work/junit.xml" --json "$work/gate.json" > "$work/gate.txt" 2>/dev/null || rc=$?
tail -2 "$work/gate.txt"
echo "gate-minidb: base $base_rev, $base_runs base runs as the history, $runs head runs, exit $rc, $(( $(date +%s) - start )) s"
exit $rc
