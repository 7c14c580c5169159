#!/usr/bin/env bash
# vprof on nginx 1.22 (Debian's source): a master that forks worker
# processes, each an event loop, which drop root to nobody. By hand, not CI.
#   build (default): fetch (apt-get source nginx; pristine.sha1: the fetched
#     C sources' and headers' sums) -> configure (no rewrite, no gzip) and
#     `bear -- make` with vprof's flags (compile db in src/).
#   profile: explain the latency variance of wrk's requests for a 4 KB static
#     file with `vprof iterate --auto` from ngx_http_process_request: patch
#     the tree (patches/nginx-request-intervals.patch: one interval per
#     request, from its processing to its request freed; with PLANT=1 also
#     patches/nginx-planted-stall.patch: every twentieth static file request
#     spins 1 ms on the clock) -> each iteration: rebuild, start nginx under
#     the recorder, wrk (not recorded), stop it -> final report -> restore
#     and un-patch (a trap does it whatever happens, and stops nginx), then
#     check every C source and header against the fetch-time sums.
# Usage: scripts/targets/nginx.sh [build|profile] [WORK_DIR]   (default /tmp/vprof-nginx)
# Env:   VPROF=path/to/vprof (default: build/src/vprof of this checkout)  JOBS=N (2)
#        PLANT=1: the planted stall   CONNECTIONS=N wrk -c (16)   SECONDS_=N wrk -d (3)
#        WORKERS=N worker_processes (2)   PORT=N (8089)   MAX_ITERATIONS=N (16)
#        SYNC="pthreads ..." (vprof init --sync; default none)
# Needs: root (the workers drop to nobody) and the Debian packages bear,
#        build-essential, dpkg-dev, libpcre2-dev, zlib1g-dev, libssl-dev, wrk, curl.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/targets/foreground.sh"
. "$here/scripts/targets/planted-tree.sh"
mode=build
case "${1:-}" in build|profile) mode=$1; shift ;; esac
work=${1:-/tmp/vprof-nginx}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
plant=${PLANT:-0}
connections=${CONNECTIONS:-16} duration=${SECONDS_:-3} workers=${WORKERS:-2}
port=${PORT:-8089} max_iter=${MAX_ITERATIONS:-16}
sync=${SYNC:-}
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
for t in bear wrk curl; do command -v $t >/dev/null || die "$t is not installed"; done
mkdir -p "$work"
cd "$work"

intervals=$here/scripts/targets/patches/nginx-request-intervals.patch
stall=$here/scripts/targets/patches/nginx-planted-stall.patch
pristine() { (cd src && sha1sum -c --quiet ../pristine.sha1); }
plant_fetch nginx
instrumented() { [ -f src/.vprof/state.json ]; }
patched() { grep -q vprof_interval_begin src/src/http/ngx_http_request.c; }
planted() { grep -q ngx_http_planted_stall src/src/http/modules/ngx_http_static_module.c; }
stop_server() {  # one left running by a run killed with SIGKILL
  if [ -s logs/nginx.pid ] && kill -0 "$(cat logs/nginx.pid)" 2>/dev/null; then
    kill -QUIT "$(cat logs/nginx.pid)" || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$(cat logs/nginx.pid)" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f logs/nginx.pid
}
# A tree left instrumented or patched by an interrupted run is put back first.
plant_unwind
if [ ! -s src/compile_commands.json ]; then
  start=$SECONDS
  (cd src && ./configure --with-cc-opt="-O2 -g $("$vprof" config --cflags)" --with-ld-opt="$("$vprof" config --libs)" \
     --without-http_rewrite_module --without-http_gzip_module >"$work/configure.log" 2>&1) ||
    { tail -20 configure.log; die "configure failed (configure.log)"; }
  (cd src && nice bear -- make -j "$jobs" >"$work/build.log" 2>&1) || { tail -20 build.log; die "the build failed (build.log)"; }
  echo "built in $((SECONDS - start)) s"
fi
[ -s src/compile_commands.json ] || die "bear wrote no compile_commands.json"
if [ $mode = build ]; then
  echo "built; the compile db is in $work/src"
  step "done"
  exit 0
fi

# The workload: nginx records (VPROF_TRACE_DIR, set by vprof run or iterate);
# its workers drop root to nobody, so the files they serve are world-readable.
mkdir -p www logs
chmod 755 "$work" www
[ -s www/small.bin ] || head -c 4096 /dev/urandom > www/small.bin
chmod 644 www/small.bin
cat > nginx.conf <<CONF
user nobody nogroup;
worker_processes $workers;
daemon off;
master_process on;
pid $work/logs/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 256; }
http {
    access_log $work/logs/access.log;
    sendfile on;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port;
        root $work/www;
    }
}
CONF
cat > run.sh <<RUN
#!/bin/sh
set -e
rm -f "$work/logs/access.log"
"$work/src/objs/nginx" -p "$work" -c "$work/nginx.conf" &
pid=\$!
trap 'kill -QUIT \$pid 2>/dev/null; wait \$pid' EXIT
i=0
until curl -sf -o /dev/null http://127.0.0.1:$port/small.bin; do
  i=\$((i + 1)); [ \$i -lt 100 ] || { echo "nginx did not answer" >&2; exit 1; }
  sleep 0.1
done
wrk -t2 -c$connections -d${duration}s http://127.0.0.1:$port/small.bin > "$work/wrk.out"
cat "$work/wrk.out"
# wrk exits 0 whatever failed: a run with failed requests fails here.
if grep -q 'Non-2xx\|Socket errors' "$work/wrk.out"; then echo "requests failed" >&2; exit 1; fi
RUN
chmod +x run.sh
stop_server
# However this ends, nginx stops and the tree goes back to its pristine bytes.
trap plant_unwind EXIT
plant_apply
build_cmd="cd src && nice make -s -j $jobs >/dev/null"
step "build the patched nginx"
start=$SECONDS
sh -c "$build_cmd"
echo "built in $((SECONDS - start)) s"

step "vprof init"
sync_args=()
for p in $sync; do sync_args+=(--sync "$p"); done
"$vprof" init -p src --root ngx_http_process_request --build "$build_cmd" --run "sh $work/run.sh" \
  --max-iterations "$max_iter" "${sync_args[@]}" --force
session_auto
plant_finish
echo "the session is in $work/.vprof-session"
step "done"
