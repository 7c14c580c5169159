#!/usr/bin/env bash
# Is LevelDB's DBTest.HiddenValuesAreRemoved failure caused by vprof, or is it
# the upstream race showing up more often? Runs LevelDB's full suite (ctest -j
# JOBS, the way leveldb.sh and CI do) ROUNDS times on a pristine build and on
# an instrumented copy, alternating so both see the same machine load, and
# counts which tests failed in each. By hand; results go in docs/instrument.md.
# Usage: scripts/targets/leveldb-flake.sh [ROUNDS] [WORK_DIR]
#        (default 20 rounds, /tmp/vprof-leveldb-flake; needs leveldb.sh's
#        fetched source in /tmp/vprof-leveldb/src, or SRC=dir)
# Env:   VPROF, JOBS (default 2), FUNCTIONS (default: leveldb.sh's three),
#        SYNC (default leveldb; empty for none)
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-20}
work=${2:-/tmp/vprof-leveldb-flake}
src=${SRC:-/tmp/vprof-leveldb/src}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
functions=${FUNCTIONS-leveldb::DBImpl::Write leveldb::DBImpl::Get leveldb::DBImpl::MakeRoomForWrite}
sync=${SYNC-leveldb}
die() { echo "leveldb-flake.sh: $*" >&2; exit 1; }
[ -x "$vprof" ] || die "no vprof at $vprof"
[ -f "$src/CMakeLists.txt" ] || die "no LevelDB source at $src (run leveldb.sh first)"

mkdir -p "$work"
cflags=$("$vprof" config --cflags)
libs=$("$vprof" config --libs)
# An interrupted run leaves both builds ready (and the copy instrumented):
# reuse them; the marker goes when the copy is restored at the end.
if [ -f "$work/ready" ] && [ -f "$work/instrumented/src/.vprof/state.json" ]; then
  echo "reusing the builds in $work"
else
for v in pristine instrumented; do
  if [ -f "$work/$v/src/.vprof/state.json" ]; then "$vprof" restore -p "$work/$v/src"; fi
  rm -rf "$work/$v" && mkdir -p "$work/$v"
  cp -a "$src" "$work/$v/src"
  # Both built the same way, vprof's flags included; only one is instrumented.
  cmake -S "$work/$v/src" -B "$work/$v/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DLEVELDB_BUILD_TESTS=ON -DLEVELDB_BUILD_BENCHMARKS=OFF \
    -DCMAKE_CXX_FLAGS="$cflags" -DCMAKE_C_FLAGS="$cflags" \
    -DCMAKE_CXX_STANDARD_LIBRARIES="$libs" >/dev/null
  cmake --build "$work/$v/build" -j "$jobs" >/dev/null
done
args=()
for f in $functions; do args+=(--function "$f"); done
[ -n "$sync" ] && args+=(--sync "$sync")
"$vprof" instrument -q -p "$work/instrumented/build" "${args[@]}"
cmake --build "$work/instrumented/build" -j "$jobs" >/dev/null
touch "$work/ready"
fi

log="$work/results.txt"
: > "$log"
for ((r = 1; r <= rounds; ++r)); do
  for v in pristine instrumented; do
    (cd "$work/$v/build" && ctest -j "$jobs" >/dev/null 2>&1) || true
    # Test names only (not gtest's "N tests" summary); no failure is no match.
    failed=$(grep -ho '^\[  FAILED  \] [A-Za-z0-9_/]*\.[A-Za-z0-9_./]*' \
      "$work/$v/build/Testing/Temporary/LastTest.log" | awk '{print $4}' | sort -u |
      tr '\n' ' ' || true)
    echo "round $r $v failed: ${failed:-none}" | tee -a "$log"
  done
done
echo "== summary ($rounds rounds each, ctest -j $jobs)"
for v in pristine instrumented; do
  runs_failed=$(grep -c "$v failed: [^n]" "$log" || true)
  echo "$v: $runs_failed of $rounds runs had a failing test"
  grep "$v failed:" "$log" | sed 's/.*failed: //' | tr ' ' '\n' | grep -v '^none$\|^$' |
    sort | uniq -c | sed 's/^/  /' || true
done
"$vprof" restore -p "$work/instrumented/build"
rm -f "$work/ready"
