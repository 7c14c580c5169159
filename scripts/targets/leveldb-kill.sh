#!/usr/bin/env bash
# Kills a real session at random moments, nothing left to clean up after
# itself: `leveldb.sh profile` (vprof iterate --auto on db_bench, build ahead)
# and the session's own processes (its worker, its build, its run: they are
# in process groups of their own) all get SIGKILL, so no trap and no restore
# runs. After each kill, `vprof restore` alone must give back LevelDB's
# pristine bytes (after the db_bench patch is reversed), and in every other
# round the killed session is resumed first (`vprof iterate --auto`, not
# fresh) and must end on an answer before the tree is restored.
# The suite's IterateKill tests do the same on a small tree.
#   scripts/targets/leveldb-kill.sh [ROUNDS] [WORK_DIR]   (default 6, /tmp/vprof-leveldb-kill)
# Env: VPROF (default build/src/vprof), BENCH_NUM (5000), VPROF_KILL_SEED
#      (replays a run: each round's seed is printed), KILL_MAX_S (30: a
#      moment is drawn in [0, KILL_MAX_S) s after the session began; at
#      BENCH_NUM=5000 the session takes 25-40 s once db_bench is built).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-6}
work=${2:-/tmp/vprof-leveldb-kill}
vprof=${VPROF:-$here/build/src/vprof}
patchfile=$here/scripts/targets/patches/leveldb-db_bench-intervals.patch
seed=${VPROF_KILL_SEED:-$(date +%s)}
max_s=${KILL_MAX_S:-30}
RANDOM=$seed
echo "seed $seed (VPROF_KILL_SEED=$seed replays this run)"

kill_all() {
  pkill -9 -f "leveldb.sh profile $work" || true
  pkill -9 -f "$vprof iterate" || true
  pkill -9 -f "target db_bench" || true
  pkill -9 -f "db_bench --benchmarks" || true
  sleep 1
}
pristine() {
  (cd "$work/src" && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum) > "$work/kill.sha1"
  cmp -s "$work/pristine.sha1" "$work/kill.sha1"
}

failed=0
for round in $(seq 1 "$rounds"); do
  delay_ds=$((RANDOM % (max_s * 10)))
  log="$work.round$round.log"
  mkdir -p "$work"
  BENCH_NUM=${BENCH_NUM:-5000} VPROF=$vprof setsid "$here/scripts/targets/leveldb.sh" profile "$work" > "$log" 2>&1 &
  for _ in $(seq 1 1200); do grep -q '== vprof iterate --auto' "$log" 2>/dev/null && break; sleep 0.5; done
  sleep "$((delay_ds / 10)).$((delay_ds % 10))"
  at=$(grep '^vprof: ' "$log" | tail -1 | cut -c1-100)
  grep -q '== final report' "$log" && at="after the session's end (draw a smaller KILL_MAX_S)"
  kill_all
  cd "$work"
  resumed=""
  if [ $((round % 2)) = 0 ] && [ -f .vprof-session/state.json ] && [ -f src/.vprof/state.json ]; then
    # The killed session, resumed as a user would: it must end on an answer.
    if "$vprof" iterate --auto >> "$log" 2>&1 && grep -q '^Top cause\|fixed point' "$log"; then resumed=" resumed to its end,"
    else resumed=" RESUME FAILED (see $log),"; failed=$((failed + 1)); fi
  fi
  "$vprof" restore -p build >> "$log" 2>&1 || true
  if grep -q vprof_interval_begin src/benchmarks/db_bench.cc; then (cd src && patch -p1 -R -s < "$patchfile"); fi
  if pristine; then verdict="tree pristine"; else verdict="TREE DIFFERS (see $work/kill.sha1)"; failed=$((failed + 1)); fi
  echo "round $round: killed $((delay_ds / 10)).$((delay_ds % 10)) s into the session at \"$at\":$resumed restore alone: $verdict"
  cd - > /dev/null
  [ "$verdict" = "tree pristine" ] || break
done
echo "$failed failures in $rounds rounds"
[ "$failed" = 0 ]
