#!/usr/bin/env bash
# vprof on a real tree: Debian's LevelDB 1.23.
#   fetch (apt-get source) -> build with CMake + compile db -> instrument
#   DBImpl::Write/Get/MakeRoomForWrite with the LevelDB sync pack -> rebuild ->
#   LevelDB's own tests -> db_bench under `vprof run` (the trace must hold
#   events) -> restore (the tree must be identical to the pristine source).
# Usage: scripts/targets/leveldb.sh [WORK_DIR]      (default /tmp/vprof-leveldb)
#        scripts/targets/leveldb.sh profile [WORK_DIR]   (default /tmp/vprof-leveldb-profile)
#   profile: explain db_bench's write latency variance with `vprof iterate --auto`:
#   fetch -> patch db_bench (patches/leveldb-db_bench-intervals.patch: one
#   interval per write) -> build -> `vprof init --root leveldb::DBImpl::Write
#   --sync leveldb` -> `vprof iterate --auto` on fillrandom, 4 threads -> the
#   final report -> reverse the patch (the tree must be identical to the
#   pristine source, whatever happens: a trap restores and un-patches).
# Env:   VPROF=path/to/vprof (default: build/src/vprof of this checkout)
#        JOBS=N (default 2)  BENCH_NUM=N db_bench --num (default 20000; profile: per thread, 50000)
#        profile only: BENCH_THREADS=N (4)  BENCH_FLAGS="more db_bench flags" (none)
#        BENCHMARK=fillrandom (or another write benchmark: fillsync, fillseq, overwrite)
#        MAX_ITERATIONS=N (8)  SAMPLE=PCT (vprof init --sample PCT: windowed, 100/PCT runs an iteration)
#        KEEP_TRACES=1 (vprof.json keep_traces true: every run's trace kept; by default each
#        run's trace is deleted once summarized, the last run's kept)
# Needs: root or sudo for the deb-src line and apt-get; cmake, ninja, g++,
#        libgtest-dev, libgmock-dev, libbenchmark-dev (LevelDB's tests/benchmarks).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/targets/foreground.sh"
mode=test
if [ "${1:-}" = profile ]; then mode=profile; shift; fi
if [ $mode = profile ]; then work=${1:-/tmp/vprof-leveldb-profile}; else work=${1:-/tmp/vprof-leveldb}; fi
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
if [ $mode = profile ]; then num=${BENCH_NUM:-50000}; else num=${BENCH_NUM:-20000}; fi
patchfile=$here/scripts/targets/patches/leveldb-db_bench-intervals.patch
. "$here/scripts/targets/leveldb-configure.sh"
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
mkdir -p "$work"
cd "$work"

step "fetch Debian's leveldb source"
"$here/scripts/targets/deb-source.sh" leveldb src
# A tree left instrumented by an interrupted run is put back first. Its
# journal is src/.vprof (an older vprof kept it in build/.vprof).
instrumented() { [ -f src/.vprof/state.json ] || [ -f build/.vprof/state.json ]; }
if instrumented; then
  if [ -d build ]; then "$vprof" restore -p build; else "$vprof" restore -p src; fi
fi
# A tree left patched by an interrupted profile run is un-patched first.
patched() { grep -q vprof_interval_begin src/benchmarks/db_bench.cc; }
if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi
# Checksums of the pristine tree: restore must give back exactly this.
(cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum) > pristine.sha1

if [ $mode = profile ]; then
  # Only db_bench is built (no tests): each iteration rebuilds what vprof
  # rewrote, and parses every file of the compile db for the sync pack.
  threads=${BENCH_THREADS:-4}
  max_iter=${MAX_ITERATIONS:-8}
  # However this ends, the tree goes back to its pristine bytes.
  unwind() { if instrumented; then "$vprof" restore -p build >/dev/null; fi
             if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi; }
  trap unwind EXIT
  step "patch db_bench: one vprof interval per write"
  (cd src && patch -p1 -s < "$patchfile")
  step "configure and build db_bench (vprof's flags)"
  leveldb_configure build OFF
  fg_run nice cmake --build build -j "$jobs" --target db_bench >/dev/null
  step "vprof init"
  run="build/db_bench --benchmarks=${BENCHMARK:-fillrandom} --threads=$threads --num=$num --db=$work/bench-db ${BENCH_FLAGS:-}"
  "$vprof" init -p build --root leveldb::DBImpl::Write --sync leveldb \
    --build "nice cmake --build build -j $jobs --target db_bench" --run "$run" \
    --max-iterations "$max_iter" ${SAMPLE:+--sample "$SAMPLE"} --force
  if [ "${KEEP_TRACES:-0}" = 1 ]; then  # every run's trace kept, not only the last run's
    python3 -c 'import json; c = json.load(open("vprof.json")); c["keep_traces"] = True; json.dump(c, open("vprof.json", "w"), indent=2)'
  fi
  cat vprof.json
  session_auto
  step "restore and un-patch"
  if instrumented; then "$vprof" restore -p build; fi
  (cd src && patch -p1 -R -s < "$patchfile")
  (cd src && find . -type f -print0 | sort -z | xargs -0 sha1sum) > restored.sha1
  cmp pristine.sha1 restored.sha1 || die "the restored tree differs from the pristine source"
  echo "restored tree identical to the pristine source; the session is in $work/.vprof-session"
  step "done"
  exit 0
fi

step "configure and build (compile db, vprof's flags)"
leveldb_configure build ON
fg_run cmake --build build -j "$jobs" >/dev/null

step "instrument"
# From here on, however the script ends (a failed build or test included),
# the tree goes back to its pristine bytes: never leave it instrumented.
trap 'instrumented && "$vprof" restore -p build >/dev/null' EXIT
start=$SECONDS
fg_run "$vprof" instrument -p build --sync leveldb \
  --function leveldb::DBImpl::Write --function leveldb::DBImpl::Get \
  --function leveldb::DBImpl::MakeRoomForWrite
echo "instrument took $((SECONDS - start)) s"
[ -f build/.vprof/manifest.json ] || die "no manifest"

step "rebuild instrumented"
fg_run cmake --build build -j "$jobs" >/dev/null

step "LevelDB's own tests"
# All of them must pass. One, DBTest.HiddenValuesAreRemoved, races LevelDB's
# background compaction (upstream google/leveldb#188) and fails on the pristine
# tree as often as on the instrumented one: under ctest -j2 6 of 12 vs 5 of 12
# runs; alone, anywhere from 0 to 90% of runs depending on the moment (figures
# and the script that measured them, leveldb-flake.sh, in docs/instrument.md).
# It runs alone after the rest until it passes, at most 50 times (~0.1 s each):
# the instrumented tree must be able to pass it, as the pristine one does.
flaky=DBTest.HiddenValuesAreRemoved
fg_run env GTEST_FILTER="-$flaky" ctest --test-dir build --output-on-failure -j "$jobs"
for attempt in $(seq 1 50); do
  if build/db_test --gtest_filter="$flaky" >"$work/flaky.log" 2>&1; then
    echo "$flaky passed on attempt $attempt (run alone; it fails on pristine LevelDB too)"
    break
  fi
  if [ "$attempt" = 50 ]; then
    grep -m1 -A3 Failure "$work/flaky.log" | cut -c1-200
    die "$flaky failed 50 times in a row"
  fi
done

step "db_bench under vprof run"
rm -rf trace bench-db
fg_run "$vprof" run --trace-dir trace --manifest build/.vprof/manifest.json -- \
  build/db_bench --benchmarks=fillrandom,readrandom --num="$num" --db="$work/bench-db"
"$vprof" dump trace > trace.txt
for k in func_enter func_exit site_begin site_end wait_begin wait_end release; do
  printf '  %-11s %s\n' "$k" "$(grep -c " $k " trace.txt || true)"
done
events=$(grep -c ' func_enter ' trace.txt || true)
echo "trace: $(ls trace/*.vpt | wc -l) thread files, $events function enters"
[ "$events" -gt 0 ] || die "the trace holds no function events"

step "restore"
"$vprof" restore -p build
# Strict: a restored tree keeps nothing of vprof's, not even src/.vprof.
(cd src && find . -type f -print0 | sort -z | xargs -0 sha1sum) > restored.sha1
cmp pristine.sha1 restored.sha1 || die "the restored tree differs from the pristine source"
echo "restored tree identical to the pristine source"
step "done"
