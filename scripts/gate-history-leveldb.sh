#!/usr/bin/env bash
# The history gate on a real tree, by hand (figures in docs/performance.md,
# "vprof gate against a history"): Debian's LevelDB, db_bench patched for one
# vprof interval per write (as `scripts/targets/leveldb.sh profile`),
# instrumented at DBImpl::Write and MakeRoomForWrite with the LevelDB sync
# pack, built once. Then, interleaved, SAME (40) runs of fillsync and SLOW
# (20) runs of the same with --value_size=VALUE (1000 bytes, not 100: a
# write path that costs more per write, the stand-in for a change that slowed
# it), each saved as a profile rooted at DBImpl::Write. Printed: each
# statistic's run-to-run spread (what settles), and random splits: a history
# of 20 same-build runs against 3 (and 5) same-build or slow runs, 100 and 40
# decisions. The tree is restored and un-patched however this ends.
# Usage: scripts/gate-history-leveldb.sh [WORK_DIR]   (default /tmp/vprof-gate-leveldb)
#   env: VPROF (build/src/vprof), SAME (40), SLOW (20), BENCH_NUM (250000: fillsync
#        writes a thousandth of --num, 250 a thread), BENCH_THREADS (4), VALUE (1000), REUSE (1: decide again on the
#        runs an earlier call left in WORK_DIR)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/vprof-gate-leveldb}
vprof=${VPROF:-$here/build/src/vprof}
n_same=${SAME:-40} n_slow=${SLOW:-20} num=${BENCH_NUM:-250000} threads=${BENCH_THREADS:-4} value=${VALUE:-1000}
patchfile=$here/scripts/targets/patches/leveldb-db_bench-intervals.patch
. "$here/scripts/targets/leveldb-configure.sh"
. "$here/scripts/targets/foreground.sh"
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
mkdir -p "$work"
cd "$work"

if [ "${REUSE:-0}" != 1 ] || [ ! -d same ] || [ ! -d slow ]; then
  step "fetch Debian's leveldb source"
  "$here/scripts/targets/deb-source.sh" leveldb src
  instrumented() { [ -f src/.vprof/state.json ] || [ -f build/.vprof/state.json ]; }
  patched() { grep -q vprof_interval_begin src/benchmarks/db_bench.cc; }
  if instrumented; then "$vprof" restore -p build; fi
  if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi
  (cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum) > pristine.sha1
  unwind() { if instrumented; then "$vprof" restore -p build >/dev/null; fi
             if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi; }
  trap unwind EXIT
  step "patch, build and instrument db_bench"
  (cd src && patch -p1 -s < "$patchfile")
  leveldb_configure build OFF
  fg_run nice cmake --build build -j 2 --target db_bench >/dev/null
  fg_run "$vprof" instrument -p build --sync leveldb \
    --function leveldb::DBImpl::Write --function leveldb::DBImpl::MakeRoomForWrite >/dev/null
  fg_run nice cmake --build build -j 2 --target db_bench >/dev/null
  cp -r build/.vprof/manifest.json manifest.json
  step "runs: $n_same same, $n_slow with --value_size=$value, interleaved"
  rm -rf same slow && mkdir -p same slow
  one() {  # OUT.vprof [db_bench flags]
    local out=$1
    shift
    rm -rf "$out.trace" bench-db
    "$vprof" run --trace-dir "$out.trace" --manifest manifest.json -- build/db_bench --benchmarks=fillsync \
      --threads="$threads" --num="$num" --db="$work/bench-db" "$@" >/dev/null 2>&1
    "$vprof" analyze "$out.trace" --root leveldb::DBImpl::Write --bootstrap 0 --save "$out" >/dev/null
    rm -rf "$out.trace"
  }
  start=$SECONDS
  for k in $(seq 1 "$n_same"); do
    one "same/$k.vprof"
    if [ "$k" -le "$n_slow" ]; then one "slow/$k.vprof" --value_size="$value"; fi
  done
  echo "runs: $((SECONDS - start)) s"
  step "restore and un-patch"
  "$vprof" restore -p build
  (cd src && patch -p1 -R -s < "$patchfile")
  (cd src && find . -type f -print0 | sort -z | xargs -0 sha1sum) > restored.sha1
  cmp pristine.sha1 restored.sha1 || die "the restored tree differs from the pristine source"
  trap - EXIT
fi

step "decisions"
PYTHONPATH="$here/scripts/lib" python3 - "$vprof" "$work" <<'PY'
import math, os, random, statistics, sys
import history_pools as hp
vprof, work = sys.argv[1], sys.argv[2]
same, slow = hp.pool(work, 'same'), hp.pool(work, 'slow')
make_history = lambda runs: hp.make_history(os.path.join(work, 'split'), runs)
gate = lambda d, runs: hp.gate(vprof, d, runs, os.path.join(work, 'verdict.json'))
# Each run's statistics: one run judged against the first 3 (its own values are "new").
hist3 = make_history(same[:3])
def stats(p):
    return {c['quantity']: c['new'] for c in gate(hist3, [p])['checks'] if not c['quantity'].startswith('outlier')}
vals = [stats(p) for p in same]
spread = {q: statistics.stdev(math.log(max(v[q], 1)) for v in vals) for q in ('p50', 'mean', 'p90', 'p99', 'p99.9', 'variance')}
print('per-run spread, standard deviation of the log over', len(same), 'same-build runs:',
      ', '.join(f'{q} {s:.3f}' for q, s in spread.items()))
slow_vals = [stats(p) for p in slow]
print('slow against same, ratio of medians:',
      ', '.join(f'{q} {statistics.median(v[q] for v in slow_vals) / statistics.median(v[q] for v in vals) - 1:+.1%}'
                for q in ('p50', 'p90', 'p99', 'variance')))
rng = random.Random(7)
splits = lambda head_pool, m, trials: hp.random_splits(vprof, work, same, head_pool, m, trials, rng)
s3, d3 = splits(same, 3, 100)
s5, d5 = splits(same, 5, 100)
w3, _ = splits(slow, 3, 40)
w5, _ = splits(slow, 5, 40)
print(f'random splits against 20: same build regression {s3}/100 at 3 runs, {s5}/100 at 5; '
      f'slow {w3}/40 at 3, {w5}/40 at 5; detectable p99 at 3 runs {d3:+.0%}, at 5 {d5:+.0%}')
PY
