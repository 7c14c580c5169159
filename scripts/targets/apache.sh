#!/usr/bin/env bash
# vprof on Apache httpd 2.4 (Debian's apache2 source; by hand, not CI: the
# build and the runs take long). docs/case-studies/apache.md has the runs.
#   build (default): fetch (apt-get source apache2; pristine.sha1: the fetched
#   sources' sums, taken before any build writes into the tree) -> configure
#   against the system APR (apr-1-config, apu-1-config), event MPM, every
#   module static (unixd: User/Group and the children's setuid; authz_core:
#   Require; mime: Content-Type; log_config: the access log; core and http
#   are always in) -> `bear -- make` (compile db in src/) -> `make depend`
#   (so make rebuilds a file whose header vprof rewrote) -> install under
#   WORK_DIR/inst, and WORK_DIR/httpd.conf: port PORT, a 4 KiB static page,
#   an access log, and `User daemon` / `Group daemon`, so the children drop
#   root as in a real deployment (a server that setuids must still record).
#   profile: explain the latency variance of ab's requests with
#   `vprof iterate --auto` from ap_process_async_request: patch
#   http_request.c (patches/apache-ap_process_async_request-intervals.patch:
#   one interval per request), and with PLANT=handler|log a planted delay too
#   (patches/apache-plant-{handler,log}.patch) -> the plain build measured
#   (not instrumented, recorder off: ab req/s and p99) -> each iteration: rebuild,
#   WORK_DIR/run.sh (start httpd with the recorder on, ab -c 16 then ab -c 64,
#   stop httpd and wait for it) -> final report -> plain vs recording (the
#   last iteration's run) -> restore and un-patch (the sources must be
#   identical to the pristine tree, whatever happens: a trap stops the
#   server, restores and un-patches).
#   once: as profile, but one run with FUNCTIONS instrumented (and the sync
#   packs everywhere), analysed, then restored.
# Sync packs: pthreads, and apr (APR's thread/proc/global mutexes, condition
# variables, rwlocks: httpd locks through APR, whose code is outside the
# tree): by name when the vprof given ships it, else this checkout's
# annotations/apr.json by path.
# Usage: scripts/targets/apache.sh [build] [WORK_DIR]            (default /tmp/vprof-apache)
#        scripts/targets/apache.sh profile [WORK_DIR]
#        FUNCTIONS="f g ..." scripts/targets/apache.sh once [WORK_DIR]
# Env:   VPROF=path/to/vprof  JOBS=N (2)  PORT=N (8088)
#        profile and once: REQUESTS=N in all, split between the two ab runs (20000)
#        CONCURRENCY="16 64" (one ab run each)  PLANT=handler|log (none)
#        FUNCTIONS="f g ..." (once; default ap_process_async_request)
#        MAX_ITERATIONS=N (profile; 20)
# Needs: bear, gcc, make, patch, libapr1-dev, libaprutil1-dev, libpcre2-dev,
#        apache2-utils (ab); root for the fetch's deb-src line and for
#        httpd's setuid to daemon.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/targets/foreground.sh"
mode=build
case "${1:-}" in build|profile|once) mode=$1; shift ;; esac
work=${1:-/tmp/vprof-apache}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
port=${PORT:-8088}
requests=${REQUESTS:-20000}
concurrency=${CONCURRENCY:-16 64}
plant=${PLANT:-}
functions=${FUNCTIONS:-ap_process_async_request}
max_iter=${MAX_ITERATIONS:-20}
root=ap_process_async_request
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
for tool in bear ab apr-1-config apu-1-config patch; do
  command -v $tool >/dev/null ||
    die "$tool is not installed (apt-get install bear apache2-utils libapr1-dev libaprutil1-dev libpcre2-dev patch)"
done
case "$plant" in ''|handler|log) ;; *) die "PLANT=$plant: handler, log or unset" ;; esac
patches=$here/scripts/targets/patches
patchfile=$patches/apache-ap_process_async_request-intervals.patch
plantfile=${plant:+$patches/apache-plant-$plant.patch}
inst=$work/inst
mkdir -p "$work"
cd "$work"

source_sums() { (cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum); }
# sha1sum -c, not a join on the name: the tree has names with spaces
# (debian/perl-framework/t/htdocs/modules/rewrite/foo bar.html). The tarball
# ships an empty top-level .deps that `make depend` fills: a build output.
sources_pristine() {
  grep -v '  \./\.deps$' pristine.sha1 | (cd src && sha1sum --quiet -c -)
}
instrumented() { [ -f src/.vprof/state.json ]; }
patched() { grep -q vprof_interval_begin src/modules/http/http_request.c; }
unplant() {
  if grep -q planted_handler_delay src/server/core.c; then (cd src && patch -p1 -R -s < "$patches/apache-plant-handler.patch"); fi
  if grep -q planted_log_delay src/modules/loggers/mod_log_config.c; then (cd src && patch -p1 -R -s < "$patches/apache-plant-log.patch"); fi
}
# A server left running (a run killed with SIGKILL): its parent's pid file.
stop_httpd() {
  local pid
  pid=$(cat "$work/httpd.pid" 2>/dev/null) || return 0
  if kill -TERM "$pid" 2>/dev/null; then
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  fi
  rm -f "$work/httpd.pid"
}

step "fetch Debian's apache2 source"
if [ ! -d src ]; then
  "$here/scripts/targets/deb-source.sh" apache2 src
  source_sums > pristine.sha1  # before any build writes into the tree
fi
# A tree fetched by hand has no sums yet: its sources as they are now, which
# must then be pristine (no build has run in it).
if [ ! -s pristine.sha1 ]; then
  [ ! -f src/config.status ] || die "src/ was configured before its checksums were taken: remove $work/src and run again"
  source_sums > pristine.sha1
fi
# A tree left instrumented or patched by an interrupted run is put back first.
stop_httpd
if instrumented; then "$vprof" restore -p src; fi
unplant
if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi

cflags=$("$vprof" config --cflags)
libs=$("$vprof" config --libs)
# bear rewrites compile_commands.json with only what one make ran: configure
# and build once, then reuse the database (a failed build leaves none). A tree
# configured with another vprof (VPROF changed since) is configured again: it
# would build against that one's probes header and run its runtime.
if [ ! -s src/compile_commands.json ] || [ ! -x src/httpd ] ||
   ! grep -qF -- "$cflags" src/build/config_vars.mk 2>/dev/null; then
  step "configure (system APR, event MPM, static modules) and build with bear"
  # A tree built before (with another vprof) is cleaned first: configuring it
  # again over the old build left generated sources (server/exports.c) that
  # its old dependency lists (make depend) name but the new makefiles do not make.
  if [ -f src/build/config_vars.mk ]; then (cd src && make -s distclean >/dev/null 2>&1 || true); fi
  # Debian's reproducible_builds.diff makes buildmark.c take the build time
  # from the command line (debian/rules passes the changelog's date).
  built=$(date -u --date="$(sed -n 's/^ -- .*>  //p' src/debian/changelog | head -1)" +%FT%T)
  (cd src && ./configure --prefix="$inst" --enable-layout=Apache \
     --with-apr="$(command -v apr-1-config)" --with-apr-util="$(command -v apu-1-config)" \
     --with-mpm=event --enable-modules=none --enable-mods-static="unixd authz_core mime log_config" \
     CPPFLAGS="-DBUILD_DATETIME='\"$built\"'" CFLAGS="-O2 -g $cflags" LIBS="$libs" >configure.log)
  (cd src && bear -- make -j "$jobs" >/dev/null) || { rm -f src/compile_commands.json; die "the build failed"; }
  [ -s src/compile_commands.json ] || die "bear wrote no compile_commands.json"
  # httpd's make has no header dependencies until `make depend` writes them
  # (after the build: it needs the generated test_char.h). Without them a
  # file whose header vprof rewrote is not rebuilt.
  (cd src && make -s depend >/dev/null 2>depend.log) || die "make depend failed (src/depend.log)"
fi
# `make install` once (configuration, icons, the manual); later builds only
# replace the httpd binary, which holds every module. Also each iteration's build.
build_cmd="cd src && make -s -j $jobs >/dev/null && install -m 755 httpd $inst/bin/httpd"
install_httpd() { sh -c "$build_cmd"; }
if [ ! -x "$inst/bin/httpd" ]; then
  step "install under $inst"
  (cd src && make -s -j "$jobs" >/dev/null && make -s install >/dev/null)
fi
mkdir -p "$work/htdocs" "$work/logs"
head -c 4096 /dev/zero | tr '\0' 'x' | fold -w 64 > "$work/htdocs/index.html"
cat > "$work/httpd.conf" <<CONF
# Written by scripts/targets/apache.sh: a static page and an access log on
# port $port. User/Group daemon: the children setuid as a real server's do.
ServerRoot "$inst"
ServerName 127.0.0.1
Listen 127.0.0.1:$port
User daemon
Group daemon
PidFile "$work/httpd.pid"
ErrorLog "$work/logs/error_log"
LogLevel warn
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog "$work/logs/access_log" common
TypesConfig conf/mime.types
DocumentRoot "$work/htdocs"
<Directory "$work/htdocs">
    Require all granted
</Directory>
# The event MPM's defaults (3 children of 25 worker threads to start, more
# children when ab -c 64 needs them), as a stock server has them.
CONF
chmod -R a+rX "$work/htdocs"

# The workload. The server records (VPROF_TRACE_DIR, set by vprof run or
# iterate, reaches the parent and every child it forks); ab does not.
# httpd runs in the foreground, a child of this script, so the script can
# stop it and wait until it and its children have exited (their trace files
# are complete then).
n=$(( requests / $(echo $concurrency | wc -w) ))
cat > "$work/run.sh" <<RUN
#!/bin/sh
set -e
"$inst/bin/httpd" -f "$work/httpd.conf" -DFOREGROUND &
httpd=\$!
trap 'kill -TERM \$httpd 2>/dev/null || true; wait \$httpd || true' EXIT
tries=0
until bash -c 'exec 3<>/dev/tcp/127.0.0.1/$port' 2>/dev/null; do
  kill -0 \$httpd 2>/dev/null || { echo "httpd exited: see $work/logs/error_log" >&2; exit 1; }
  tries=\$((tries + 1)); [ \$tries -lt 100 ] || { echo "httpd did not listen on $port" >&2; exit 1; }
  sleep 0.1
done
for c in $concurrency; do
  env -u VPROF_TRACE_DIR ab -q -c \$c -n $n -e "$work/ab-c\$c.csv" http://127.0.0.1:$port/index.html > "$work/ab-c\$c.txt"
  awk -v c=\$c -F'[:,]' '/^Requests per second/ {rps = \$2 + 0} /^Failed requests/ {failed = \$2 + 0}
    END {printf "ab -c %d: %.1f req/s, %d failed, ", c, rps, failed}' "$work/ab-c\$c.txt"
  awk -F, '\$1 == 99 {printf "p99 %.2f ms\\n", \$2}' "$work/ab-c\$c.csv"
done
RUN
chmod 755 "$work/run.sh"

if [ $mode = build ]; then
  trap stop_httpd EXIT
  step "check: the plain build serves the page"
  sh "$work/run.sh"
  step "done: $inst/bin/httpd, $work/httpd.conf, $work/run.sh"
  exit 0
fi

# Sync packs: apr by name when this vprof ships it, else this checkout's file.
apr_pack=apr
[ -f "$("$vprof" config --annotations-dir)/apr.json" ] || apr_pack=$here/annotations/apr.json
sync_args=(--sync pthreads --sync "$apr_pack")

# However this ends, the server stops, the tree goes back to its pristine
# bytes, and the sources are checked against the fetch-time sums.
unwind() {
  stop_httpd
  if instrumented; then "$vprof" restore -p src; fi
  unplant
  if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi
  if sources_pristine; then echo "restored sources identical to the pristine tree"
  else echo "apache.sh: restored sources differ from the pristine tree" >&2; return 1; fi
}
trap unwind EXIT
restore_and_check() {
  step "restore and un-patch"
  trap - EXIT
  unwind || exit 1
}

step "patch http_request.c: one vprof interval per request${plant:+; plant a delay ($plant)}"
(cd src && patch -p1 -s < "$patchfile")
if [ -n "$plant" ]; then (cd src && patch -p1 -s < "$plantfile"); fi

if [ $mode = profile ]; then
  # The baseline for what recording costs: the same sources (the interval
  # patch, the planted delay), not instrumented, the recorder off (an
  # interval call is then one branch). Rebuilt: a previous session left its
  # last instrumented binary installed.
  step "plain: the patched build, not instrumented, recorder off, ab -c ${concurrency// /, -c }"
  install_httpd
  env -u VPROF_TRACE_DIR sh "$work/run.sh" | tee "$work/plain.txt"
fi

if [ $mode = once ]; then
  args=()
  for f in $functions; do args+=(--function "$f"); done
  step "instrument FUNCTIONS, the sync packs everywhere; build; install"
  "$vprof" instrument -p src -q "${sync_args[@]}" --all-files "${args[@]}"
  install_httpd
  step "one run under vprof run, analysed"
  rm -rf "$work/once-trace"
  "$vprof" run --trace-dir "$work/once-trace" --manifest src/.vprof/manifest.json -- sh "$work/run.sh"
  "$vprof" analyze "$work/once-trace" --root "$root" --json "$work/once.json" | tee "$work/once.txt"
  restore_and_check
  step "done"
  exit 0
fi

step "vprof init"
"$vprof" init -p src --root "$root" "${sync_args[@]}" \
  --build "$build_cmd" \
  --run "sh $work/run.sh" \
  --max-iterations "$max_iter" --force
cat vprof.json
step "vprof iterate --auto"
start=$SECONDS
fg_run "$vprof" iterate --auto --fresh
echo "session: $((SECONDS - start)) s of wall time (iterate printed the final report)"
restore_and_check
step "plain vs recording (the last iteration's run, its functions instrumented)"
last=$(ls -d .vprof-session/iter-* | sort -V | tail -1)  # iter-10 after iter-9
echo "plain:"
cat "$work/plain.txt"
echo "recording ($last):"
grep '^ab -c' "$last/run.log" || echo "(no ab figures in $last/run.log)"
echo "the session is in $work/.vprof-session"
step "done"
