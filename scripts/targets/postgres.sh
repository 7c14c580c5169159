#!/usr/bin/env bash
# vprof on PostgreSQL 15 (by hand, not CI: the build and the runs take long).
#   test (default): fetch (apt-get source postgresql-15) -> configure ->
#   `bear -- make` (compile db) -> instrument exec_simple_query with the
#   PostgreSQL pack -> rebuild -> `make check` -> restore (tree identical to the
#   pristine source).
#   profile: explain the latency variance of pgbench's TPC-B transactions with
#   `vprof iterate --auto` from exec_simple_query: fetch -> patch postgres.c
#   (patches/postgres-exec_simple_query-intervals.patch: one interval per simple
#   query) -> build, install under WORK_DIR/inst -> initdb, `pgbench -i -s SCALE`
#   -> each iteration: rebuild, start the server with the recorder on, pgbench
#   (4 clients, each transaction ONE compound query: pgbench-tpcb-one-query.sql),
#   stop -> final report -> restore and un-patch (the sources must be identical
#   to the pristine tree, whatever happens: a trap restores and un-patches).
# PostgreSQL refuses to run as root: the tree is owned by, and everything but
# the fetch runs as, the unprivileged user $PGUSER (default nobody).
#   once: as profile, but one run with FUNCTIONS instrumented (and the sync pack
#   everywhere), analysed, then restored: e.g. a session's last set at another SCALE.
# Usage: scripts/targets/postgres.sh [WORK_DIR]           (default /tmp/vprof-postgres)
#        scripts/targets/postgres.sh profile [WORK_DIR]   (default /tmp/vprof-postgres-profile)
#        FUNCTIONS="f g ..." scripts/targets/postgres.sh once [WORK_DIR]   (same default)
# Env:   VPROF=path/to/vprof  JOBS=N  PGUSER=nobody
#        test and once: FUNCTIONS="f g ..." (default exec_simple_query)
#        profile only: SCALE=N (pgbench -i -s, 1)  CLIENTS=N (4)  TXNS=N per client (2500)
#        MAX_ITERATIONS=N (20)  PORT=N (5499)
#        SAMPLE=PCT (vprof init --sample PCT: windowed, 100/PCT runs an iteration)
#        PREBUILD_DEPTH=N (vprof.json's prebuild_depth; 0: each set built alone)
# Needs: bear, bison, flex, libreadline-dev, zlib1g-dev, gcc, make.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/targets/foreground.sh"
mode=test
case "${1:-}" in profile|once) mode=$1; shift ;; esac
if [ $mode != test ]; then work=${1:-/tmp/vprof-postgres-profile}; else work=${1:-/tmp/vprof-postgres}; fi
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
pguser=${PGUSER:-nobody}
functions=${FUNCTIONS:-exec_simple_query}
. "$here/scripts/targets/postgres-common.sh"
as_user() { pg_as_user "$@"; }
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
command -v bear >/dev/null || die "bear is not installed (apt-get install bear)"
mkdir -p "$work"
cd "$work"

step "fetch Debian's postgresql-15 source, configure, build with bear (compile db in src/)"
pg_fetch_and_build
patchfile=$pg_patchfile
# A tree left instrumented or patched by an interrupted run is put back first.
pg_put_back
# pg_fetch_and_build took the fetched sources' checksums before any build (a
# tree fetched by an older script has none: its sources, as they are now).
[ -s pristine.sha1 ] || pg_source_sums > pristine.sha1

if [ $mode != test ]; then
  scale=${SCALE:-1} clients=${CLIENTS:-4} txns=${TXNS:-2500}
  max_iter=${MAX_ITERATIONS:-20} port=${PORT:-5499}
  inst=$work/inst data=$work/data-s$scale
  pg_stop "$inst" "$data"  # a server left running by a run killed with SIGKILL
  # However this ends, the server stops and the tree goes back to its pristine bytes.
  unwind() { pg_stop "$inst" "$data"; pg_put_back; }
  trap unwind EXIT
  step "patch postgres.c: one vprof interval per simple query"
  (cd src && as_user patch -p1 -s < "$patchfile")
  step "build the patched tree and install it under $inst"
  pg_install "$inst"
  step "initdb and pgbench -i -s $scale (once per scale)"
  pg_database "$inst" "$data" "$port" "$scale"
  # The workload: the server records (VPROF_TRACE_DIR, set by vprof iterate,
  # reaches the postmaster and every backend it forks); pgbench does not.
  pg_write_run "$inst" "$data" "$port" "$clients" "$txns" "$scale" "$work/run.sh"
  if [ "$(id -u)" = 0 ]; then chown -R "$pguser" "$work"; fi
  if [ $mode = once ]; then
    # One run with FUNCTIONS instrumented (a session's last set, say), the
    # sync pack everywhere, analysed: how the answer moves with SCALE.
    args=()
    for f in $functions; do args+=(--function "$f"); done
    step "instrument FUNCTIONS, the sync pack everywhere; build; install"
    as_user "$vprof" instrument -p src -q --sync postgres --all-files "${args[@]}"
    pg_install "$inst"
    step "one run under vprof run, analysed"
    as_user rm -rf "$work/once-trace"
    as_user "$vprof" run --trace-dir "$work/once-trace" --manifest src/.vprof/manifest.json -- sh "$work/run.sh"
    cp src/.vprof/manifest.json "$work/once-trace/manifest.json"
    "$vprof" analyze "$work/once-trace" --root exec_simple_query --json "$work/once.json" | tee "$work/once.txt"
    step "restore and un-patch"
    as_user "$vprof" restore -p src
    (cd src && as_user patch -p1 -R -s < "$patchfile")
    pg_sources_pristine || die "restored sources differ from the pristine tree"
    echo "restored sources identical to the pristine tree"
    exit 0
  fi
  step "vprof init"
  as_user "$vprof" init -p src --root exec_simple_query --sync postgres \
    --build "cd src && make -s -j $jobs >/dev/null && make -s -C src/backend install-bin DESTDIR=$inst >/dev/null" \
    --run "sh $work/run.sh" \
    --max-iterations "$max_iter" ${SAMPLE:+--sample "$SAMPLE"} --force
  if [ -n "${PREBUILD_DEPTH:-}" ]; then
    as_user python3 -c 'import json, sys; c = json.load(open("vprof.json")); c["prebuild_depth"] = int(sys.argv[1]); json.dump(c, open("vprof.json", "w"), indent=2)' "$PREBUILD_DEPTH"
  fi
  cat vprof.json
  session_auto as_user
  step "restore and un-patch"
  if pg_instrumented; then as_user "$vprof" restore -p src; fi
  (cd src && as_user patch -p1 -R -s < "$patchfile")
  pg_sources_pristine || die "restored sources differ from the pristine tree"
  echo "restored sources identical to the pristine tree; the session is in $work/.vprof-session"
  step "done"
  exit 0
fi

step "instrument"
args=()
for f in $functions; do args+=(--function "$f"); done
start=$SECONDS
"$vprof" instrument -p src --sync postgres "${args[@]}"
echo "instrument took $((SECONDS - start)) s"
if [ "$(id -u)" = 0 ]; then chown -R "$pguser" "$work"; fi

step "rebuild instrumented"
(cd src && as_user make -j "$jobs" >/dev/null)

step "make check"
(cd src && as_user make check)

step "restore"
"$vprof" restore -p src
pg_sources_pristine || die "restored sources differ from the pristine tree"
echo "restored tree identical to the pristine source"
step "done"
