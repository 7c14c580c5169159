#!/usr/bin/env bash
# What a build ahead costs a run that leaves its probes dormant, counted in
# instructions (valgrind's cachegrind; these hosts' timings are too noisy and
# their VMs count no instructions with perf), on LevelDB's db_bench:
#   1. a one-iteration `vprof iterate` from the tree's vprof.json (what
#      `leveldb.sh profile` leaves: root leveldb::DBImpl::Write) says which
#      functions its first build holds ahead (state.json's `prebuilt`);
#   2. db_bench plain (the tree restored), recording (its intervals alone:
#      the runtime's start-up and writer are in every figure);
#   3. those functions and the root instrumented with --dormant-probes (no
#      sync pack), recording, every probe dormant (VPROF_DORMANT);
#   4. the same build recording every probe (in full), for scale.
# Prints the instructions of each and dormant_pct = 3 over 2. CG_DIR=DIR keeps
# cachegrind's files there (plain.out, dormant.out, full.out) for a diff by
# function (cg_annotate --diff, or cg_annotate each and compare); LESS="F..."
# leaves those functions out of the build (what one function costs).
#   scripts/dormant-cost.sh [WORK_DIR]   (default /tmp/vprof-leveldb-profile; NUM=20000 writes, 1 thread)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/vprof-leveldb-profile}
vprof=${VPROF:-$here/build/src/vprof}
num=${NUM:-20000}
cd "$work"
[ -f vprof.json ] || { echo "dormant-cost: no vprof.json in $work (run scripts/targets/leveldb.sh profile first)" >&2; exit 2; }
# db_bench marks one interval a write (the profile's patch), for the session's run.
patchfile=$here/scripts/targets/patches/leveldb-db_bench-intervals.patch
patched() { grep -q vprof_interval_begin src/benchmarks/db_bench.cc; }
cleanup() {
  "$vprof" restore -p build >/dev/null 2>&1 || true
  if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi
}
trap cleanup EXIT
patched || (cd src && patch -p1 -s < "$patchfile")
python3 - <<'PY'
import json
c = json.load(open("vprof.json"))
c["max_iterations"] = 1
c["session_dir"] = ".vprof-dormant-cost"
json.dump(c, open("dormant-cost.json", "w"), indent=2)
PY
"$vprof" iterate --config dormant-cost.json --auto --fresh > dormant-cost-session.log 2>&1 || true
functions=$(python3 -c '
import json, sys
s = json.load(open(".vprof-dormant-cost/state.json")); it = s["iterations"][0]
less = set(sys.argv[1].split())
print(" ".join(f for f in it["instrumented"] + it.get("prebuilt", []) if f not in less))' "${LESS:-}")
echo "dormant-cost: the first build holds $(echo $functions | wc -w) functions"
build() { nice cmake --build build -j 2 --target db_bench >/dev/null; }
bench() {
  local out=/dev/null
  if [ -n "${CG_DIR:-}" ]; then mkdir -p "$CG_DIR"; out=$CG_DIR/$1.out; fi
  shift
  rm -rf "$work/dormant-cost-db"
  env "$@" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out" \
    build/db_bench --benchmarks=fillrandom --threads=1 --num="$num" --db="$work/dormant-cost-db" 2>&1 |
    sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,
}
"$vprof" restore -p build >/dev/null 2>&1 || true
build
rm -rf "$work/dormant-cost-trace"
plain=$(bench plain VPROF_TRACE_DIR="$work/dormant-cost-trace")  # recording its intervals, as the others do
args=()
for f in $functions; do args+=(--function "$f"); done
"$vprof" instrument -p build -q --dormant-probes "${args[@]}"
build
python3 "$here/scripts/lib/dormant-all.py" build/.vprof/manifest.json dormant-cost.dormant
rm -rf "$work/dormant-cost-trace"
dormant=$(bench dormant VPROF_TRACE_DIR="$work/dormant-cost-trace" VPROF_DORMANT="$work/dormant-cost.dormant")
rm -rf "$work/dormant-cost-trace"
full=$(bench full VPROF_TRACE_DIR="$work/dormant-cost-trace")
rm -rf "$work/dormant-cost-trace" "$work/dormant-cost-db"
"$vprof" restore -p build >/dev/null
build
echo "dormant-cost: instructions plain $plain, every probe dormant $dormant, in full $full"
python3 -c "print('dormant_pct=%.2f full_pct=%.2f' % (100.0 * ($dormant - $plain) / $plain, 100.0 * ($full - $plain) / $plain))"
