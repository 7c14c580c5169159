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
PYTHONPATH="$here/scripts/lib" python3 -c 'import sys, history_pools as hp; hp.settle_report(sys.argv[1], sys.argv[2])' "$vprof" "$work"
