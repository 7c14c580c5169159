#!/usr/bin/env bash
# CI: vprof gate on examples/minidb. Base: minidb as of the
# merge-base of HEAD and BASE_BRANCH (main); head: this tree's. Both are
# instrumented by this vprof at the same functions (scripts/lib/minidb-gate.sh)
# and run RUNS times each, interleaved (base, head, base, ...), on the
# contended preset; then one gate decision. Exit: the gate's (0 pass, 1
# regression, 2 error), except that an inconclusive verdict (3: an interval on
# both sides of a threshold, usual for a few runs of minidb's heavy tail) is
# printed with the runs it would take and exits 0 unless INCONCLUSIVE=fail:
# this job checks the gate end to end and that nothing regressed surely.
# Reports in WORK_DIR: gate.md, gate.json, junit.xml.
# Usage: scripts/gate-minidb.sh [WORK_DIR]
#   env: VPROF (build/src/vprof), BASE_REV (the merge-base), BASE_BRANCH (main),
#        RUNS (5), CONFIDENCE (0.99: CI must not fail on noise; docs/gate.md)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/vprof-gate-minidb}
vprof=${VPROF:-$root/build/src/vprof}
runs=${RUNS:-5}
confidence=${CONFIDENCE:-0.99}
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
for k in $(seq 1 "$runs"); do
  VPROF_BUILD_COMMIT=$base_rev minidb_gate_run "$work/base" "$work/base-$k.vprof" "$work/data" --seed "$k"
  VPROF_BUILD_COMMIT=$head_rev minidb_gate_run "$work/head" "$work/head-$k.vprof" "$work/data" --seed "$k"
  base+=("$work/base-$k.vprof") head+=("$work/head-$k.vprof")
done
rc=0
"$vprof" gate --baseline-runs "${base[@]}" --runs "${head[@]}" \
  --confidence "$confidence" --name "minidb contended (base $(git -C "$root" rev-parse --short "$base_rev"))" \
  --junit "$work/junit.xml" --markdown "$work/gate.md" --json "$work/gate.json" > "$work/gate.txt" || rc=$?
tail -1 "$work/gate.txt"
echo "gate-minidb: base $base_rev, $runs runs a side, exit $rc, $(( $(date +%s) - start )) s"
if [ "$rc" -eq 3 ] && [ "${INCONCLUSIVE:-pass}" != fail ]; then
  echo "gate-minidb: inconclusive (not a regression); INCONCLUSIVE=fail makes it fail"
  exit 0
fi
exit $rc
