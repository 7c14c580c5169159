#!/usr/bin/env bash
# vprof on MariaDB 10.11 / InnoDB under sysbench (by hand, not CI: the
# first build takes long on 2 cores). docs/case-studies/mariadb.md has the runs.
#   build (default): fetch Debian's source (apt-get source mariadb; pristine.sha1:
#     the fetched sources' sums, taken before anything else), configure a
#     server-only build (CMake options below) with vprof's flags and ccache, the
#     compile db in WORK/build, build mariadbd and what mariadb-install-db needs,
#     then one database per workload (install-db, sysbench prepare).
#   once: patch the tree (patches/mariadb-transaction-intervals.patch: one
#     interval per transaction), instrument FUNCTIONS with the sync packs in
#     every file, rebuild, one run under `vprof run`, analysed; restore, un-patch.
#   profile: as once, but `vprof iterate --auto` from ROOT.
#   dba: the change a DBA would make, gated: FUNCTIONS (default: the last set
#     of the session in WORK/.vprof-session) instrumented once, then `vprof gate`
#     runs this configuration (base) and the same server with HEAD_ARGS added to
#     its command line (head: e.g. --innodb-flush-log-at-trx-commit=2), in turn,
#     GATE_RUNS (2) runs a side, and names the factor that changed (each run of a
#     late session's set takes ~4 GB to analyse: docs/performance.md). The
#     session's set keeps its last run's ids (KEEP_IDS, that run's manifest),
#     so the files get the text the session built and ccache serves them.
#   overhead: what recording costs the server, alternated: FUNCTIONS (default:
#     the session's last set) instrumented with the sync packs and built, the
#     binary kept; the tree restored and un-patched and built again, that
#     binary kept; then PAIRS (5) rounds of plain, the instrumented server not
#     recording (off: no VPROF_TRACE_DIR), recorded in full, and recorded at
#     SAMPLE_PCT (10) percent (vprof run --sample), in turn, each a sysbench
#     run; tps and p99 per run, and the medians' ratios to plain.
# Whatever happens (an error, Ctrl-C), a trap stops the server, restores the
# tree and un-patches it; every exit path checks the sources against pristine.sha1.
# Workloads (WORKLOAD=):
#   hot      oltp_update_non_index, autocommit (--skip_trx=on): one UPDATE = one
#            transaction = one interval; THREADS (16) clients on one table of
#            TABLE_SIZE (1000) rows, keys --rand-type=pareto: row locks conflict.
#   durable  oltp_read_write, BEGIN ... COMMIT (18 statements), THREADS (8),
#            TABLE_SIZE (400000: ~90 MB) rows against a BUFFER_POOL (16M) pool,
#            innodb_flush_log_at_trx_commit=FLUSH (1). The interval is the whole
#            transaction as the client sees it, its round trips between
#            statements included: they are do_command's my_net_read.
# Usage: scripts/targets/mariadb.sh [build|once|profile|dba|overhead] [WORK_DIR]   (default /tmp/vprof-mariadb)
# Env:   VPROF (build/src/vprof of this checkout)  JOBS (2)  MDBUSER (nobody: the
#        server, the builds and vprof run unprivileged, as a DBA's mysql user)
#        WORKLOAD (hot)  THREADS  TABLE_SIZE  EVENTS (sysbench events a run: 20000)
#        BUFFER_POOL  FLUSH (innodb_flush_log_at_trx_commit)  PORT (3399)
#        ROOT (hot: dispatch_command; durable: do_command)  MAX_ITERATIONS (16)
#        SAMPLE (vprof init --sample PCT)  RESUME=1 (profile: go on with the session in
#        WORK/.vprof-session instead of starting afresh)
#        once: FUNCTIONS="f g ..." (default: ROOT)
#        hot: RAND_TYPE (pareto: sysbench's --rand-type, the keys' distribution)
#        dba: HEAD_ARGS (--innodb-flush-log-at-trx-commit=2, or none with HEAD_RAND)
#             HEAD_RAND (hot: the head's keys' distribution instead, e.g. uniform:
#             fewer hot rows)  FUNCTIONS
#        overhead: FUNCTIONS  PAIRS (5)  SAMPLE_PCT (10)
#        once, dba, overhead: KEEP_IDS (a manifest whose ids to keep; default with
#             the session's set: its last run's)
# Needs: root or sudo for the fetch; cmake, ninja-build, ccache, bison,
#        libncurses-dev, libssl-dev, zlib1g-dev, libpcre2-dev, liburing-dev, sysbench.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/targets/foreground.sh"
mode=build
case "${1:-}" in build|once|profile|dba|overhead) mode=$1; shift ;; esac
work=${1:-/tmp/vprof-mariadb}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
user=${MDBUSER:-nobody}
workload=${WORKLOAD:-hot}
port=${PORT:-3399}
events=${EVENTS:-20000}
max_iter=${MAX_ITERATIONS:-16}
case $workload in
  hot) threads=${THREADS:-16} size=${TABLE_SIZE:-1000} pool=${BUFFER_POOL:-128M} flush=${FLUSH:-1}
       root=${ROOT:-dispatch_command}
       test_args="oltp_update_non_index --skip_trx=on" rand=${RAND_TYPE:-pareto} ;;
  durable) threads=${THREADS:-8} size=${TABLE_SIZE:-400000} pool=${BUFFER_POOL:-16M} flush=${FLUSH:-1}
       root=${ROOT:-do_command}
       test_args="oltp_read_write" rand=${RAND_TYPE:-} ;;
  *) echo "mariadb.sh: WORKLOAD=$workload: hot or durable" >&2; exit 2 ;;
esac
if { [ $mode = dba ] || [ $mode = overhead ]; } && [ -z "${FUNCTIONS:-}" ]; then
  last=$(ls -d "$work"/.vprof-session/iter-* 2>/dev/null | sort -t- -k3 -n | tail -1)
  [ -n "$last" ] || { echo "mariadb.sh: $mode: no session in $work/.vprof-session; set FUNCTIONS" >&2; exit 2; }
  FUNCTIONS=$(cat "$last/instrumented.txt")
  # With that run's ids every file gets the text it was built with: ccache
  # serves what the session's last build compiled.
  [ -f "$last/trace/manifest.json" ] && KEEP_IDS=${KEEP_IDS:-$last/trace/manifest.json}
fi
functions=${FUNCTIONS:-$root}
as_user() { if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
for c in cmake ninja ccache sysbench; do command -v $c >/dev/null || die "$c is not installed"; done
mkdir -p "$work"
cd "$work"
export CCACHE_DIR=$work/ccache CCACHE_BASEDIR=$work

patchfile=$here/scripts/targets/patches/mariadb-transaction-intervals.patch
sums() { (cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum); }
pristine() {
  # sha1sum -c reads names with spaces (MariaDB has "CODING STANDARDS.md");
  # files the build added are not in the list, and a missing one fails.
  (cd src && sha1sum -c --quiet ../pristine.sha1)
}
instrumented() { [ -f src/.vprof/state.json ]; }
patched() { grep -q vprof_interval_begin src/sql/sql_parse.cc; }
data=$work/data-$workload
sock=$work/mysqld.sock
server() {  # the command line of the server: the build's own binary (or $SERVER_BIN), no install
  echo "${SERVER_BIN:-$work/build/sql/mariadbd} --no-defaults --datadir=$data --lc-messages-dir=$work/build/sql/share" \
       "--socket=$sock --port=$port --bind-address=127.0.0.1 --pid-file=$work/mysqld.pid" \
       "--log-error=$data.err --skip-name-resolve --max-connections=200" \
       "--innodb-buffer-pool-size=$pool --innodb-flush-log-at-trx-commit=$flush --innodb-log-file-size=256M"
}
stop_server() {  # a server left by a killed run, too: the pid file says which
  local pid
  [ -f "$work/mysqld.pid" ] || return 0
  pid=$(cat "$work/mysqld.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; sleep 1; fi
  fi
  rm -f "$work/mysqld.pid"
}
sysbench_args() {  # [RAND_TYPE: the keys' distribution instead of the workload's]
  local r=${1:-$rand}
  echo "$test_args${r:+ --rand-type=$r} --db-driver=mysql --mysql-socket=$sock --mysql-user=root --mysql-db=test" \
       "--tables=1 --table-size=$size"
}
unwind() { stop_server
           if instrumented; then as_user "$vprof" restore -p src >/dev/null; fi
           if patched; then (cd src && as_user patch -p1 -R -s < "$patchfile"); fi; }

step "fetch Debian's mariadb source (pristine.sha1 before anything else)"
if [ ! -d src ]; then
  "$here/scripts/targets/deb-source.sh" mariadb src
  sums > pristine.sha1
fi
[ -s pristine.sha1 ] || sums > pristine.sha1
# The user builds and runs everything: a tree fetched by hand as root too.
if [ "$(id -u)" = 0 ]; then chown -R "$user" "$work"; fi
stop_server
# A tree left instrumented or patched by an interrupted run is put back first.
if instrumented; then as_user "$vprof" restore -p src; fi
if patched; then (cd src && as_user patch -p1 -R -s < "$patchfile"); fi
pristine || die "the sources differ from the fetched ones (above)"
trap unwind EXIT

# Server only: no Galera, no unit tests, no embedded server, no mariabackup,
# and none of the storage engines but InnoDB, Aria and MyISAM (the system
# tables') and the small built-in ones; performance_schema is not built, so
# mysql_mutex_* are pthread calls (annotations/mariadb.json). System OpenSSL,
# zlib and PCRE2.
configure() {
  local cflags libs
  cflags=$("$vprof" config --cflags)
  libs=$("$vprof" config --libs)
  as_user cmake -S src -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DWITH_WSREP=OFF -DWITH_UNIT_TESTS=OFF -DWITH_EMBEDDED_SERVER=OFF -DWITH_MARIABACKUP=OFF \
    -DPLUGIN_COLUMNSTORE=NO -DPLUGIN_ROCKSDB=NO -DPLUGIN_MROONGA=NO -DPLUGIN_SPIDER=NO -DPLUGIN_OQGRAPH=NO \
    -DPLUGIN_CONNECT=NO -DPLUGIN_SPHINX=NO -DPLUGIN_TOKUDB=NO -DPLUGIN_S3=NO -DPLUGIN_FEDERATED=NO \
    -DPLUGIN_FEDERATEDX=NO -DPLUGIN_ARCHIVE=NO -DPLUGIN_BLACKHOLE=NO -DPLUGIN_PERFSCHEMA=NO \
    -DPLUGIN_AUTH_GSSAPI=NO -DPLUGIN_AUTH_PAM=NO -DWITH_SSL=system -DWITH_ZLIB=system -DWITH_PCRE=system \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags" \
    -DCMAKE_C_STANDARD_LIBRARIES="$libs" -DCMAKE_CXX_STANDARD_LIBRARIES="$libs" >/dev/null
}
# mariadbd, and what mariadb-install-db runs from a build tree.
targets="mariadbd my_print_defaults resolveip"
# In its own process group (fg_run): a signal to the script stops the build
# first, then the EXIT trap restores the tree (a rebuild takes ~17 min).
build() { fg_run as_user ninja -C build -j "$jobs" $targets >/dev/null; }

step "configure (once) and build: $targets"
start=$SECONDS
# A tree configured with another vprof (VPROF changed since) would build
# against that one's probes header and run its runtime: configured again (a
# full rebuild: every unit's flags change).
if [ ! -s build/compile_commands.json ] ||
   ! grep -qxF "CMAKE_C_FLAGS:STRING=$("$vprof" config --cflags)" build/CMakeCache.txt; then
  configure
  # `--all-files` (every session) parses every unit of the compile db, and
  # some read headers only the default target generates (the client's SQL
  # scripts, the parser): build it all, once.
  as_user ninja -C build -j "$jobs" >/dev/null
fi
build
echo "build: $((SECONDS - start)) s"

step "the $workload database (once): install-db, sysbench prepare ($size rows)"
# Made once; DATA/vprof-prepared is written last, so a prepare cut short (the
# install makes the test database before sysbench fills it) is made again.
if [ ! -f "$data/vprof-prepared" ]; then
  rm -rf "$data"
  as_user "$work/build/scripts/mariadb-install-db" --no-defaults --srcdir="$work/src" --builddir="$work/build" \
    --datadir="$data" --auth-root-authentication-method=normal >/dev/null
  as_user env -u VPROF_TRACE_DIR sh -c "$(server) >/dev/null 2>&1 &"
  for _ in $(seq 1 300); do [ -S "$sock" ] && break; sleep 0.2; done
  [ -S "$sock" ] || die "the server did not start: $data.err"
  sysbench $(sysbench_args) prepare >/dev/null
  stop_server
  as_user touch "$data/vprof-prepared"
fi

# The workload: start the server (it records when VPROF_TRACE_DIR is set, as
# `vprof run` and `vprof iterate` set it), sysbench, stop the server.
write_run() {  # FILE [EXTRA_SERVER_ARGS [RAND_TYPE]]
cat > "$1" <<RUN
#!/bin/sh
set -e
rm -f "$sock"
$(server) ${2:-} >/dev/null 2>&1 &
i=0; while [ ! -S "$sock" ] && [ \$i -lt 300 ]; do sleep 0.2; i=\$((i + 1)); done
trap 'kill -TERM \$(cat "$work/mysqld.pid"); while [ -f "$work/mysqld.pid" ]; do sleep 0.2; done' EXIT
env -u VPROF_TRACE_DIR sysbench $(sysbench_args "${3:-}") --threads=$threads --events=$events --time=0 \\
  --percentile=99 --histogram=off run
RUN
chmod +x "$1"
if [ "$(id -u)" = 0 ]; then chown "$user" "$1"; fi
}
write_run run.sh

if [ $mode = build ]; then
  step "smoke: one plain run"
  as_user env -u VPROF_TRACE_DIR sh run.sh > smoke.log 2>&1 || { cat smoke.log >&2; die "the plain run failed (above)"; }
  grep -E 'transactions:|99th|queries:' smoke.log
  exit 0
fi

# The compile db lists the parser's generated sources in build/: the source
# root is src/, so nothing the build generates is ever edited.
packs=(--sync mariadb --sync pthreads --sync stdcxx)
step "patch sql_parse.cc: one vprof interval per transaction"
(cd src && as_user patch -p1 -s < "$patchfile")

if [ $mode = once ] || [ $mode = dba ] || [ $mode = overhead ]; then
  args=()
  for f in $functions; do args+=(--function "$f"); done
  step "instrument FUNCTIONS, the sync packs in every file"
  start=$SECONDS
  [ -n "${KEEP_IDS:-}" ] && args+=(--keep-ids "$KEEP_IDS")
  fg_run as_user "$vprof" instrument -p build --source-root src -q "${packs[@]}" --all-files "${args[@]}"
  echo "instrument: $((SECONDS - start)) s"
  start=$SECONDS
  build
  echo "rebuild: $((SECONDS - start)) s"
fi
if [ $mode = dba ]; then
  head_args=--innodb-flush-log-at-trx-commit=2
  [ -z "${HEAD_RAND:-}" ] || head_args=  # the keys change instead, unless HEAD_ARGS says more
  head_args=${HEAD_ARGS:-$head_args}
  write_run run-head.sh "$head_args" "${HEAD_RAND:-}"
  step "vprof gate: this configuration (base) against ${head_args:-the same server}${HEAD_RAND:+, keys $HEAD_RAND} (head), in turn"
  gate=$work/gate-$(date +%s)
  rc=0
  fg_run as_user "$vprof" gate --root "$root" --base-cmd "sh $work/run.sh >/dev/null" \
    --head-cmd "sh $work/run-head.sh >/dev/null" --min-runs "${GATE_RUNS:-2}" --max-runs "${GATE_RUNS:-2}" --work-dir "$gate" \
    --json "$gate.json" || rc=$?
  echo "gate exit $rc (0 pass, 1 regression, 3 inconclusive); runs in $gate"
elif [ $mode = overhead ]; then
  as_user cp build/sql/mariadbd "$work/mariadbd-vprof"
  cp build/.vprof/manifest.json "$work/overhead-manifest.json"
  step "restore, un-patch and build the plain server"
  unwind
  pristine || die "restored sources differ from the pristine tree"
  start=$SECONDS
  build
  echo "rebuild: $((SECONDS - start)) s"
  as_user cp build/sql/mariadbd "$work/mariadbd-plain"
  pct=${SAMPLE_PCT:-10}
  SERVER_BIN=$work/mariadbd-plain write_run run-plain.sh
  SERVER_BIN=$work/mariadbd-vprof write_run run-vprof.sh
  step "${PAIRS:-5} rounds of plain, instrumented off, recorded in full, recorded at $pct% (sysbench: $events events, $threads clients)"
  out=$work/overhead-$(date +%s).txt
  one() {  # VARIANT: one run, its tps and p99 (ms) appended to $out
    local log=$work/overhead-run.log
    case $1 in
      plain) as_user env -u VPROF_TRACE_DIR sh "$work/run-plain.sh" > "$log" ;;
      off) as_user env -u VPROF_TRACE_DIR sh "$work/run-vprof.sh" > "$log" ;;
      full) as_user "$vprof" run --trace-dir "$work/overhead-trace" --manifest "$work/overhead-manifest.json" \
              -- sh "$work/run-vprof.sh" > "$log" ;;
      sampled) as_user "$vprof" run --sample "$pct" --trace-dir "$work/overhead-trace" \
              --manifest "$work/overhead-manifest.json" -- sh "$work/run-vprof.sh" > "$log" ;;
    esac
    awk -v v="$1" '/transactions:/ {gsub(/\(/, "", $3); tps = $3} /99th percentile:/ {p99 = $3}
                   END {printf "%s %s %s\n", v, tps, p99}' "$log" | tee -a "$out"
  }
  for _ in $(seq 1 "${PAIRS:-5}"); do one plain; one off; one full; one sampled; done
  as_user rm -rf "$work/overhead-trace"
  awk 'function med(a, n,  i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
                                      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
       { n[$1]++; tps[$1, n[$1]] = $2; p99[$1, n[$1]] = $3 }
       END { for (v in n) { for (i = 1; i <= n[v]; i++) { a[i] = tps[v, i]; b[i] = p99[v, i] }
                            mt[v] = med(a, n[v]); mp[v] = med(b, n[v]) }
             printf "median tps: plain %.0f, off %.0f (%.3f of plain), full %.0f (%.3f), sampled %.0f (%.3f)\n", mt["plain"], mt["off"], mt["off"] / mt["plain"], mt["full"], mt["full"] / mt["plain"], mt["sampled"], mt["sampled"] / mt["plain"]
             printf "median p99: plain %.2f ms, off %.2f ms (%.3f), full %.2f ms (%.3f), sampled %.2f ms (%.3f)\n", mp["plain"], mp["off"], mp["off"] / mp["plain"], mp["full"], mp["full"] / mp["plain"], mp["sampled"], mp["sampled"] / mp["plain"] }' "$out"
  echo "runs in $out"
  exit 0
elif [ $mode = once ]; then
  step "one run under vprof run, analysed"
  as_user rm -rf "$work/once-trace"
  as_user "$vprof" run --trace-dir "$work/once-trace" --manifest build/.vprof/manifest.json -- sh run.sh
  "$vprof" analyze "$work/once-trace" --root "$root" --json "$work/once.json" | tee "$work/once.txt"
elif [ $mode = profile ]; then
  step "vprof init and iterate --auto from $root"
  sample=()
  [ -n "${SAMPLE:-}" ] && sample=(--sample "$SAMPLE")
  fresh=--fresh
  if [ "${RESUME:-0}" = 1 ] && [ -f vprof.json ]; then
    fresh=  # the session goes on where it stopped (a higher MAX_ITERATIONS, a fixed vprof)
  else
    as_user "$vprof" init -p build --source-root src --root "$root" "${packs[@]}" \
      --build "ninja -C build -j $jobs $targets" --run "sh $work/run.sh" \
      --max-iterations "$max_iter" "${sample[@]}" --force
  fi
  start=$SECONDS
  fg_run as_user "$vprof" iterate --auto --max-iterations "$max_iter" $fresh
  echo "session: $((SECONDS - start)) s of wall time"
  cat .vprof-session/final-report.txt
fi

step "restore and un-patch"
unwind
trap - EXIT
pristine || die "restored sources differ from the pristine tree"
echo "restored sources identical to the pristine tree"
