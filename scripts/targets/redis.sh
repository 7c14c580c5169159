#!/usr/bin/env bash
# vprof on Redis 7.0 (Debian's source), an event-loop server: one thread serves
# every client. By hand, not CI: the builds and the runs take minutes.
#   build (default): fetch (apt-get source redis; pristine.sha1: the fetched
#     sources' sums) -> `bear -- make MALLOC=libc` with vprof's flags (compile
#     db in src/) -> keep pristine redis-benchmark and redis-cli in WORK/bin.
#   profile: explain the latency variance of redis-benchmark's commands with
#     `vprof iterate --auto` from aeProcessEvents: patch the tree
#     (patches/redis-command-intervals.patch: one interval per command, from
#     its processing to the write of its reply; with PLANT=1 also
#     patches/redis-planted-stall.patch: 1 ms in every tenth LPUSH) -> each
#     iteration: rebuild redis-server, start it under the recorder,
#     redis-benchmark (not recorded), stop it -> final report -> restore and
#     un-patch (a trap does it whatever happens, and stops the server), then
#     check every source file against the fetch-time sums.
#   once: as profile, but one run with FUNCTIONS instrumented, analysed.
# The interval placement, and why a command's reply phase is on its path:
# docs/case-studies/redis.md and the comment above vprofCommandBegin in the patch.
# Usage: scripts/targets/redis.sh [build|profile|once] [WORK_DIR]   (default /tmp/vprof-redis)
# Env:   VPROF=path/to/vprof (default: build/src/vprof of this checkout)  JOBS=N (2)
#        AOF=always (appendonly yes, appendfsync always: an fsync before every
#          batch of replies) or off (Redis's defaults: no AOF)
#        PLANT=1: the planted stall   CLIENTS=N (16)   REQUESTS=N per test (10000)
#        TESTS=set,lpush (redis-benchmark -t)   PORT=N (6390)   MAX_ITERATIONS=N (12)
#        once only: FUNCTIONS="f g ..." (default aeProcessEvents)
# Needs: root or sudo for the deb-src line and apt-get source; the Debian packages
#        bear, build-essential (gcc, make) and dpkg-dev (apt-get source).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/targets/foreground.sh"
. "$here/scripts/targets/planted-tree.sh"
mode=build
case "${1:-}" in build|profile|once) mode=$1; shift ;; esac
work=${1:-/tmp/vprof-redis}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
aof=${AOF:-always}
plant=${PLANT:-0}
clients=${CLIENTS:-16} requests=${REQUESTS:-10000} tests=${TESTS:-set,lpush}
port=${PORT:-6390} max_iter=${MAX_ITERATIONS:-12}
functions=${FUNCTIONS:-aeProcessEvents}
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
command -v bear >/dev/null || die "bear is not installed (apt-get install bear)"
case $aof in always|off) ;; *) die "AOF=$aof: always or off" ;; esac
mkdir -p "$work"
cd "$work"

intervals=$here/scripts/targets/patches/redis-command-intervals.patch
stall=$here/scripts/targets/patches/redis-planted-stall.patch
sums() { (cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum); }
pristine() {
  # sha1sum -c reads names with spaces (MariaDB has "CODING STANDARDS.md");
  # files the build added are not in the list, and a missing one fails.
  (cd src && sha1sum -c --quiet ../pristine.sha1)
}
# Redis's Makefile puts LDFLAGS before the objects; `vprof config --libs` links
# in any position. It keeps the flags in .make-settings and cleans the whole
# tree when they change: every build below passes the same ones.
make_args="MALLOC=libc USE_SYSTEMD=no BUILD_TLS=no CFLAGS='$("$vprof" config --cflags)' LDFLAGS='$("$vprof" config --libs)'"

step "fetch Debian's redis source, build it with bear (compile db in src/)"
if [ ! -d src ]; then
  "$here/scripts/targets/deb-source.sh" redis src
  sums > pristine.sha1  # before any build writes into the tree
fi
[ -s pristine.sha1 ] || sums > pristine.sha1  # a tree fetched by hand: as it is now
instrumented() { [ -f src/.vprof/state.json ]; }
patched() { grep -q vprofCommandBegin src/src/networking.c; }
planted() { grep -q plantedStall src/src/t_list.c; }
# A tree left instrumented or patched by an interrupted run is put back first.
if instrumented; then "$vprof" restore -p src; fi
if planted; then (cd src && patch -p1 -R -s < "$stall"); fi
if patched; then (cd src && patch -p1 -R -s < "$intervals"); fi
if [ ! -s src/compile_commands.json ]; then
  start=$SECONDS
  (cd src && eval "nice bear -- make -j $jobs $make_args" >"$work/build.log" 2>&1) ||
    { tail -20 "$work/build.log"; die "the build failed (build.log)"; }
  echo "built in $((SECONDS - start)) s"
fi
[ -s src/compile_commands.json ] || die "bear wrote no compile_commands.json"
# The load generators are the pristine tree's: the server's tree is patched and
# instrumented below, and redis-benchmark links ae.c too.
mkdir -p bin
cp src/src/redis-benchmark src/src/redis-cli bin/
pristine || die "the built tree's sources differ from the fetched ones"
if [ $mode = build ]; then
  echo "built; sources identical to the fetched tree; load generators in $work/bin"
  step "done"
  exit 0
fi

# The workload: the server records (VPROF_TRACE_DIR, set by vprof run or
# iterate), redis-benchmark does not (it links libvprof, with the tree's flags).
if [ $aof = always ]; then server_args="--appendonly yes --appendfsync always"; else server_args=""; fi
cat > run.sh <<RUN
#!/bin/sh
set -e
rm -rf "$work/data" && mkdir -p "$work/data"
"$work/src/src/redis-server" --port $port --bind 127.0.0.1 --dir "$work/data" --save '' \\
  --daemonize no --pidfile "$work/redis.pid" --logfile "$work/redis.log" $server_args &
pid=\$!
trap 'kill \$pid 2>/dev/null; wait \$pid' EXIT
i=0
until env -u VPROF_TRACE_DIR "$work/bin/redis-cli" -p $port ping >/dev/null 2>&1; do
  i=\$((i + 1)); [ \$i -lt 100 ] || { echo "redis-server did not answer" >&2; exit 1; }
  sleep 0.1
done
env -u VPROF_TRACE_DIR "$work/bin/redis-benchmark" -p $port -c $clients -n $requests -t $tests --csv
RUN
chmod +x run.sh
stop_server() {  # one left running by a run killed with SIGKILL
  if [ -s redis.pid ] && kill -0 "$(cat redis.pid)" 2>/dev/null; then
    kill "$(cat redis.pid)"
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$(cat redis.pid)" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f redis.pid
}
stop_server
# However this ends, the server stops and the tree goes back to its pristine bytes.
trap plant_unwind EXIT
plant_apply
build_cmd="cd src/src && nice make -s -j $jobs $make_args redis-server >/dev/null"
step "build the patched redis-server"
start=$SECONDS
sh -c "$build_cmd"
echo "built in $((SECONDS - start)) s"
echo "workload (AOF=$aof PLANT=$plant): $(tail -1 run.sh)"

if [ $mode = once ]; then
  args=()
  for f in $functions; do args+=(--function "$f"); done
  step "instrument FUNCTIONS, build"
  "$vprof" instrument -p src -q "${args[@]}"
  sh -c "$build_cmd"
  step "one run under vprof run, analysed"
  rm -rf once-trace
  "$vprof" run --trace-dir once-trace --manifest src/.vprof/manifest.json -- sh run.sh
  "$vprof" analyze once-trace --root "${functions%% *}" --json once.json | tee once.txt
  plant_finish
  exit 0
fi

step "vprof init"
"$vprof" init -p src --root aeProcessEvents --build "$build_cmd" --run "sh $work/run.sh" \
  --max-iterations "$max_iter" --force
cat vprof.json
session_auto
plant_finish
echo "the session is in $work/.vprof-session"
step "done"
