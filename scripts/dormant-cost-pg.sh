#!/usr/bin/env bash
# What a build ahead costs a run that leaves its probes dormant, counted in
# instructions (valgrind's cachegrind; these hosts' timings are too noisy and
# their VMs count no instructions with perf), on PostgreSQL's pgbench: the
# PostgreSQL side of scripts/dormant-cost.sh (LevelDB's db_bench).
#   1. the tree of `scripts/targets/postgres.sh profile` (fetched, built with
#      vprof's flags, patched with one interval per simple query, installed,
#      a pgbench database at SCALE), made here when WORK_DIR has none;
#   2. a one-iteration `vprof iterate` from exec_simple_query (the profile's
#      root; a short run: its run is not measured) says which functions its
#      first build holds ahead (state.json's `prebuilt`);
#   3. the server under cachegrind (every process it forks), pgbench's TPC-B
#      as one compound query a transaction, ONE client (the same work in every
#      build: no lock waits whose spins differ), TXNS transactions, a fixed
#      seed; counted: the backends that ran exec_simple_query (not the
#      checkpointer, the WAL writer or autovacuum, whose work follows the
#      clock), each run on the same copy of the database, autovacuum off. Plain (the tree restored, recording its intervals), those
#      functions and the root instrumented with --dormant-probes (no sync
#      pack: its wraps are recorded whatever the set), every probe dormant
#      (VPROF_DORMANT), and the same build in full, for scale.
# Prints the instructions of each and dormant_pct = dormant over plain.
#   scripts/dormant-cost-pg.sh [WORK_DIR]   (default /tmp/vprof-postgres-dormant)
# Env: SCALE (16)  TXNS (2000)  PORT (5498)  VPROF  JOBS (2)  PGUSER (nobody)
#      CG_DIR=DIR keeps cachegrind's files there (plain.PID, dormant.PID, full.PID)
#      LESS="F..." leaves those functions out of the build (what one function costs)
#      FUNCTIONS="F..." builds this set (with the root) instead of the first build's
#      SAMPLE=P also runs the build recording in windows over P% of the time,
#        nothing dormant (sampled), and then the same build as it was written
#        before 2026-12-07, in full and in windows (full-before,
#        sampled-before): every body's entry testing its dormant bit alone
#        (not the original copy between windows too) and every probe of an
#        instrumented copy its own bit (not VPROF_LIVE)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/vprof-postgres-dormant}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
pguser=${PGUSER:-nobody}
scale=${SCALE:-16} txns=${TXNS:-2000} port=${PORT:-5498}
die() { echo "dormant-cost-pg: $*" >&2; exit 2; }
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
command -v valgrind >/dev/null || die "valgrind is not installed (apt-get install valgrind)"
command -v bear >/dev/null || die "bear is not installed (apt-get install bear)"
. "$here/scripts/targets/postgres-common.sh"
mkdir -p "$work"
cd "$work"
inst=$work/inst data=$work/data-s$scale run_data=$work/data-s$scale-run
bin=$inst/usr/local/pgsql/bin
cg=${CG_DIR:-$work/cg}
pg_fetch_and_build
pg_stop "$inst" "$data"
pg_put_back
[ -s pristine.sha1 ] || pg_source_sums > pristine.sha1
cleanup() {
  pg_stop "$inst" "$data"
  pg_stop "$inst" "$run_data"
  rm -rf "$run_data"
  pg_put_back
  pg_sources_pristine >/dev/null || echo "dormant-cost-pg: the restored sources differ from the pristine tree" >&2
}
trap cleanup EXIT
(cd src && pg_as_user patch -p1 -s < "$pg_patchfile")
pg_install "$inst"
pg_database "$inst" "$data" "$port" "$scale"
# The session's run: short (its figures are not used), one client.
pg_write_run "$inst" "$data" "$port" 1 200 "$scale" "$work/run.sh"
rm -rf "$cg" && mkdir -p "$cg"
if [ "$(id -u)" = 0 ]; then chown -R "$pguser" "$work" "$cg"; fi

if [ -n "${FUNCTIONS:-}" ]; then
  functions=$FUNCTIONS
else
pg_as_user "$vprof" init -p src --root exec_simple_query --sync postgres \
  --build "cd src && make -s -j $jobs >/dev/null && make -s -C src/backend install-bin DESTDIR=$inst >/dev/null" \
  --run "sh $work/run.sh" --max-iterations 1 --force >/dev/null
pg_as_user python3 -c '
import json
c = json.load(open("vprof.json")); c["session_dir"] = ".vprof-dormant-cost"
json.dump(c, open("vprof.json", "w"), indent=2)'
pg_as_user "$vprof" iterate --auto --fresh > dormant-cost-session.log 2>&1 || true
functions=$(python3 -c '
import json, sys
s = json.load(open(".vprof-dormant-cost/state.json")); it = s["iterations"][0]
less = set(sys.argv[1].split())
print(" ".join(f for f in it["instrumented"] + it.get("prebuilt", []) if f not in less))' "${LESS:-}")
echo "dormant-cost-pg: the first build holds $(echo $functions | wc -w) functions"
fi
pg_put_back
(cd src && pg_as_user patch -p1 -s < "$pg_patchfile")

# One measured run: the server under cachegrind, pgbench with one client;
# prints the instructions of the backends that ran a simple query.
# Each run starts from the same copy of the database, autovacuum off: the
# backends' own work follows the pages' state (HOT pruning on pages an
# earlier run updated: heap_page_prune ran 30 M more instructions in the
# second of three runs on one database).
bench() {
  local name=$1
  shift
  rm -f "$cg/$name".*
  rm -rf "$run_data"
  cp -a "$data" "$run_data"
  pg_as_user env "$@" LD_LIBRARY_PATH="$inst/usr/local/pgsql/lib" valgrind --tool=cachegrind --cache-sim=no \
    --trace-children=yes --cachegrind-out-file="$cg/$name.%p" "$bin/postgres" -D "$run_data" -c autovacuum=off \
    >"$work/$name.server.log" 2>&1 &
  local i
  for i in $(seq 120); do
    pg_as_user "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres && break
    sleep 1
  done
  pg_as_user env -u VPROF_TRACE_DIR LD_LIBRARY_PATH="$inst/usr/local/pgsql/lib" "$bin/pgbench" -h 127.0.0.1 \
    -p "$port" -U postgres -n -c 1 -j 1 -t "$txns" -s "$scale" --random-seed=1 -f "$work/run.sh.sql" postgres \
    >"$work/$name.pgbench.log" 2>&1
  pg_as_user "$bin/pg_ctl" -D "$run_data" -m fast -w stop >/dev/null
  wait
  python3 - "$cg" "$name" <<'PY'
import glob, sys
total = 0
for p in glob.glob(f"{sys.argv[1]}/{sys.argv[2]}.*"):
    ran, summary = False, 0
    fn = ""
    for line in open(p, errors="replace"):
        if line.startswith("fn="):
            fn = line[3:].strip()
        elif fn == "exec_simple_query" and line[:1].isdigit():
            ran = True
        elif line.startswith("summary:"):
            summary = int(line.split()[1])
    if ran:
        total += summary
print(total)
PY
}
pg_install "$inst"
trace=$work/dormant-cost-trace
rm -rf "$trace"
plain=$(bench plain VPROF_TRACE_DIR="$trace")  # recording its intervals, as the others do
args=(--function exec_simple_query)
for f in $functions; do [ "$f" = exec_simple_query ] || args+=(--function "$f"); done
pg_as_user "$vprof" instrument -p src -q --dormant-probes --root exec_simple_query "${args[@]}"
pg_install "$inst"
python3 "$here/scripts/lib/dormant-all.py" src/.vprof/manifest.json dormant-cost.dormant
rm -rf "$trace"
dormant=$(bench dormant VPROF_TRACE_DIR="$trace" VPROF_DORMANT="$work/dormant-cost.dormant")
rm -rf "$trace"
full=$(bench full VPROF_TRACE_DIR="$trace")
rm -rf "$trace"
if [ -n "${SAMPLE:-}" ]; then
  sampled=$(bench sampled VPROF_TRACE_DIR="$trace" VPROF_SAMPLE="$SAMPLE")
  rm -rf "$trace"
  # The form before: every body written twice tests its dormant bit alone,
  # and every probe its own.
  rewritten=$(grep -rlE 'vprof_fn_runs_plain\(|VPROF_LIVE\(' src --include='*.c' --include='*.h' || true)
  for f in $rewritten; do
    cp -p "$f" "$f.vprof-now"
    sed -i -e 's/vprof_fn_runs_plain(/vprof_fn_is_dormant(/g' -e 's/VPROF_LIVE(/(/g' "$f"
  done
  echo "dormant-cost-pg: $(echo $rewritten | wc -w) files written back to the form before"
  pg_install "$inst"
  full_u=$(bench full-before VPROF_TRACE_DIR="$trace")
  rm -rf "$trace"
  sampled_u=$(bench sampled-before VPROF_TRACE_DIR="$trace" VPROF_SAMPLE="$SAMPLE")
  rm -rf "$trace"
  for f in $rewritten; do mv "$f.vprof-now" "$f"; done
fi
pg_put_back
pg_install "$inst"
echo "dormant-cost-pg: instructions of the backends plain $plain, every probe dormant $dormant, in full $full ($txns transactions, scale $scale, 1 client)"
python3 -c "print('dormant_pct=%.2f full_pct=%.2f' % (100.0 * ($dormant - $plain) / $plain, 100.0 * ($full - $plain) / $plain))"
if [ -n "${SAMPLE:-}" ]; then
  echo "dormant-cost-pg: in windows over $SAMPLE% $sampled; written as before: in full $full_u, in windows $sampled_u"
  python3 -c "print('sampled_pct=%.2f sampled_before_pct=%.2f full_before_pct=%.2f' % tuple(100.0 * (x - $plain) / $plain for x in ($sampled, $sampled_u, $full_u)))"
fi
