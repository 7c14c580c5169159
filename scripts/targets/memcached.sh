#!/usr/bin/env bash
# vprof on memcached 1.6 (Debian's source): worker threads, each an event loop
# serving its connections, that share the LRU's locks; the server drops root
# (-u nobody). By hand, not CI: the builds and the runs take minutes.
#   build (default): fetch (apt-get source memcached; pristine.sha1: the
#     fetched sources' sums) -> configure and `bear -- make memcached` with
#     vprof's flags (compile db in src/).
#   profile: explain the latency variance of memcslap's sets and gets with
#     `vprof iterate --auto` from drive_machine: patch the tree
#     (patches/memcached-command-intervals.patch: one interval per command,
#     from its line's processing to its reply queued; with PLANT=1 also
#     patches/memcached-planted-stall.patch: every fiftieth link into an LRU
#     spins 1 ms holding the LRU's lock, which every set takes in that same
#     function) -> each iteration: rebuild memcached, start it under the
#     recorder, memcslap (not recorded), stop it -> final report -> restore and
#     un-patch (a trap does it whatever happens, and stops the server), then
#     check every C source and header against the fetch-time sums.
# Usage: scripts/targets/memcached.sh [build|profile] [WORK_DIR]   (default /tmp/vprof-memcached)
# Env:   VPROF=path/to/vprof (default: build/src/vprof of this checkout)  JOBS=N (2)
#        PLANT=1: the planted stall   CLIENTS=N memcslap threads (16)
#        REQUESTS=N per client and test (2000)   WORKERS=N memcached -t (4)
#        PORT=N (11311)   MAX_ITERATIONS=N (16)
#        SYNC="pthreads ..." (vprof init --sync; default none: the session adds
#          the pack of a wait that becomes a factor, docs/iterate.md)
# Needs: root or sudo for the deb-src line and apt-get source; the Debian packages
#        bear, build-essential, dpkg-dev, libevent-dev and libmemcached-tools (memcslap).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/targets/foreground.sh"
. "$here/scripts/targets/planted-tree.sh"
mode=build
case "${1:-}" in build|profile) mode=$1; shift ;; esac
work=${1:-/tmp/vprof-memcached}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
plant=${PLANT:-0}
clients=${CLIENTS:-16} requests=${REQUESTS:-2000} workers=${WORKERS:-4}
port=${PORT:-11311} max_iter=${MAX_ITERATIONS:-16}
sync=${SYNC:-}
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
command -v bear >/dev/null || die "bear is not installed (apt-get install bear)"
command -v memcslap >/dev/null || die "memcslap is not installed (apt-get install libmemcached-tools)"
mkdir -p "$work"
cd "$work"

intervals=$here/scripts/targets/patches/memcached-command-intervals.patch
stall=$here/scripts/targets/patches/memcached-planted-stall.patch
pristine() { (cd src && sha1sum -c --quiet ../pristine.sha1); }
plant_fetch memcached
instrumented() { [ -f src/.vprof/state.json ]; }
patched() { grep -q vprof_command_begin src/proto_text.c; }
planted() { grep -q planted_stall src/items.c; }
# A tree left instrumented or patched by an interrupted run is put back first.
if instrumented; then "$vprof" restore -p src; fi
if planted; then (cd src && patch -p1 -R -s < "$stall"); fi
if patched; then (cd src && patch -p1 -R -s < "$intervals"); fi
if [ ! -s src/compile_commands.json ]; then
  start=$SECONDS
  (cd src && ./configure CFLAGS="-O2 -g $("$vprof" config --cflags)" LIBS="$("$vprof" config --libs)" \
     >"$work/configure.log" 2>&1) || { tail -20 configure.log; die "configure failed (configure.log)"; }
  (cd src && nice bear -- make -j "$jobs" memcached >"$work/build.log" 2>&1) ||
    { tail -20 build.log; die "the build failed (build.log)"; }
  echo "built in $((SECONDS - start)) s"
fi
[ -s src/compile_commands.json ] || die "bear wrote no compile_commands.json"
if [ $mode = build ]; then
  echo "built; the compile db is in $work/src"
  step "done"
  exit 0
fi

# The workload: the server records (VPROF_TRACE_DIR, set by vprof run or
# iterate) and drops root to nobody; memcslap is Debian's.
cat > run.sh <<RUN
#!/bin/sh
set -e
"$work/src/memcached" -p $port -l 127.0.0.1 -U 0 -t $workers -m 256 -u nobody &
pid=\$!
trap 'kill \$pid 2>/dev/null; wait \$pid' EXIT
i=0
until memcstat --servers=127.0.0.1:$port >/dev/null 2>&1; do
  i=\$((i + 1)); [ \$i -lt 100 ] || { echo "memcached did not answer" >&2; exit 1; }
  sleep 0.1
done
# memcslap exits 0 whatever failed: a run whose requests failed (a server
# that died) fails here, with the first error.
for t in set get; do
  memcslap -s 127.0.0.1:$port -t \$t -c $clients -e $requests > "$work/memcslap.out" 2>&1 || true
  grep '^Time to' "$work/memcslap.out"
  if grep -q 'Fatal error' "$work/memcslap.out"; then grep -m1 'Fatal error' "$work/memcslap.out" >&2; exit 1; fi
done
RUN
chmod +x run.sh
stop_server() {  # one left running by a run killed with SIGKILL
  pkill -f "^$work/src/memcached -p $port " 2>/dev/null || true
}
stop_server
# However this ends, the server stops and the tree goes back to its pristine bytes.
trap plant_unwind EXIT
plant_apply
build_cmd="cd src && nice make -s -j $jobs memcached >/dev/null"
step "build the patched memcached"
start=$SECONDS
sh -c "$build_cmd"
echo "built in $((SECONDS - start)) s"

step "vprof init"
sync_args=()
for p in $sync; do sync_args+=(--sync "$p"); done
"$vprof" init -p src --root drive_machine --build "$build_cmd" --run "sh $work/run.sh" \
  --max-iterations "$max_iter" "${sync_args[@]}" --force
session_auto
plant_finish
echo "the session is in $work/.vprof-session"
step "done"
