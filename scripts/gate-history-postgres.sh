#!/usr/bin/env bash
# The history gate on PostgreSQL, by hand (figures in docs/performance.md,
# "vprof gate against a history"): what settles from run to run on pgbench.
# Debian's PostgreSQL 15 in WORK_DIR (built as scripts/targets/postgres.sh
# does; a tree it left is reused), postgres.c patched for one vprof interval
# per simple query, FUNCTIONS instrumented with the PostgreSQL sync pack, built
# and installed once. Then, interleaved, SAME (40) runs of pgbench's TPC-B (one
# compound query a transaction, CLIENTS clients of TXNS each) and SLOW (20)
# runs of the same server started with commit_delay=DELAY us and
# commit_siblings=0 (every commit's WAL flush waits DELAY first: the stand-in
# for a change that slowed the commit path), each saved as a profile rooted at
# exec_simple_query. Printed: each statistic's run-to-run spread, the slow
# runs' move, and random splits (20 same-build runs against 3 and 5 same or
# slow ones). The tree is restored and un-patched however this ends, and
# checked against the fetched sources.
# Usage: scripts/gate-history-postgres.sh [WORK_DIR]   (default /tmp/vprof-gate-postgres)
#   env: VPROF (build/src/vprof), SAME (40), SLOW (20), SCALE (16), CLIENTS (4),
#        TXNS (1000 a client), DELAY (500), FUNCTIONS (exec_simple_query), PORT (5499; a WORK_DIR's database keeps the port it was made with),
#        JOBS (2), PGUSER (nobody), REUSE (1: decide again on the runs an earlier call left)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/vprof-gate-postgres}
vprof=${VPROF:-$here/build/src/vprof}
n_same=${SAME:-40} n_slow=${SLOW:-20} scale=${SCALE:-16} clients=${CLIENTS:-4} txns=${TXNS:-1000}
delay=${DELAY:-500} functions=${FUNCTIONS:-exec_simple_query} port=${PORT:-5499}
jobs=${JOBS:-2} pguser=${PGUSER:-nobody}
. "$here/scripts/targets/foreground.sh"
. "$here/scripts/targets/postgres-common.sh"
as_user() { pg_as_user "$@"; }
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
mkdir -p "$work"
cd "$work"

if [ "${REUSE:-0}" != 1 ] || [ ! -d same ] || [ ! -d slow ]; then
  step "fetch and build Debian's postgresql-15 (once per WORK_DIR)"
  pg_fetch_and_build
  patchfile=$pg_patchfile
  pg_put_back  # a tree an interrupted run left
  [ -s pristine.sha1 ] || pg_source_sums > pristine.sha1
  inst=$work/inst data=$work/data-s$scale
  pg_stop "$inst" "$data"
  unwind() { pg_stop "$inst" "$data"; pg_put_back; }
  trap unwind EXIT
  step "patch postgres.c, build, install, pgbench -i -s $scale"
  (cd src && as_user patch -p1 -s < "$patchfile")
  fg_run pg_install "$inst"
  pg_database "$inst" "$data" "$port" "$scale"
  step "instrument $functions with the PostgreSQL sync pack, build, install"
  args=()
  for f in $functions; do args+=(--function "$f"); done
  as_user "$vprof" instrument -p src -q --sync postgres "${args[@]}"
  fg_run pg_install "$inst"
  as_user cp src/.vprof/manifest.json "$work/manifest.json"
  pg_write_run "$inst" "$data" "$port" "$clients" "$txns" "$scale" "$work/run.sh"
  # The slow build's stand-in: the same binary, every commit's flush delayed.
  sed "s| -w start| -o '-c commit_delay=$delay -c commit_siblings=0' -w start|; s|run\\.sh\\.busy|run-slow.sh.busy|" \
    "$work/run.sh" > "$work/run-slow.sh"
  grep -q commit_delay "$work/run-slow.sh" || die "could not write run-slow.sh from run.sh"
  rm -rf same slow && mkdir -p same slow
  if [ "$(id -u)" = 0 ]; then chown -R "$pguser" "$work"; fi
  one() {  # OUT.vprof RUN_SCRIPT
    as_user rm -rf "$1.trace"
    as_user "$vprof" run --trace-dir "$1.trace" --manifest "$work/manifest.json" -- sh "$2" >/dev/null 2>&1
    "$vprof" analyze "$1.trace" --root exec_simple_query --bootstrap 0 --save "$1" >/dev/null
    as_user rm -rf "$1.trace"
  }
  step "runs: $n_same same, $n_slow with commit_delay=$delay, interleaved"
  start=$SECONDS
  for k in $(seq 1 "$n_same"); do
    fg_run one "$work/same/$k.vprof" "$work/run.sh"
    if [ "$k" -le "$n_slow" ]; then fg_run one "$work/slow/$k.vprof" "$work/run-slow.sh"; fi
  done
  echo "runs: $((SECONDS - start)) s"
  step "restore and un-patch"
  as_user "$vprof" restore -p src
  (cd src && as_user patch -p1 -R -s < "$patchfile")
  trap - EXIT
  pg_sources_pristine || die "restored sources differ from the pristine tree"
  echo "restored sources identical to the pristine tree"
fi

step "decisions"
PYTHONPATH="$here/scripts/lib" python3 -c 'import sys, history_pools as hp; hp.settle_report(sys.argv[1], sys.argv[2])' "$vprof" "$work"
