# Sourced by scripts/targets/postgres.sh and scripts/bench-overhead.sh: the
# PostgreSQL 15 tree in ./src (Debian's source), built in place with vprof's
# flags, installed under a DESTDIR, and a pgbench database to run against.
# Needs $vprof (the vprof binary), $jobs, $pguser; PostgreSQL refuses to run
# as root, so everything but the fetch runs as $pguser when this is root.
#   pg_as_user CMD...                   run as $pguser (or as is, when not root)
#   pg_fetch_and_build                  fetch (pristine.sha1: the fetched sources' sums), configure
#                                       and `bear -- make` once (compile db in src/)
#   pg_source_sums                      sha1sum of every file in src/ (but vprof's journal)
#   pg_sources_pristine                 true when every file pristine.sha1 lists is as it was
#                                       fetched (the build's outputs are new files; the sources must not differ)
#   pg_install DESTDIR                  make, then install the whole tree under DESTDIR
#   pg_database DESTDIR DATA PORT SCALE initdb and `pgbench -i -s SCALE`, once per DATA
#   pg_write_run DESTDIR DATA PORT CLIENTS TXNS SCALE FILE [PGBENCH_ARGS...]
#                                       FILE: a script that starts the server (with
#                                       whatever VPROF_TRACE_DIR it is given), runs
#                                       pgbench's TPC-B as one compound query per
#                                       transaction, and stops the server; FILE.busy: the
#                                       machine's busy CPU ticks (/proc/stat) before and after pgbench
#   pg_stop DESTDIR DATA                stop a server left running
#   pg_instrumented, pg_patched         is src/ instrumented by vprof, patched with the
#                                       interval patch ($pg_patchfile)?
#   pg_put_back                         restore and un-patch src/ where it is either (a
#                                       tree an interrupted run left, or the EXIT trap's)
pg_as_user() { if [ "$(id -u)" = 0 ]; then runuser -u "$pguser" -- "$@"; else "$@"; fi; }

pg_patchfile=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/patches/postgres-exec_simple_query-intervals.patch
pg_instrumented() { [ -f src/.vprof/state.json ]; }
pg_patched() { grep -q vprof_interval_begin src/src/backend/tcop/postgres.c; }
pg_put_back() {
  if pg_instrumented; then pg_as_user "$vprof" restore -p src >/dev/null; fi
  if pg_patched; then (cd src && pg_as_user patch -p1 -R -s < "$pg_patchfile"); fi
}

pg_fetch_and_build() {
  local here; here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  if [ ! -d src ]; then
    "$here/scripts/targets/deb-source.sh" postgresql-15 src
    pg_source_sums > pristine.sha1  # before any build writes into the tree
    if [ "$(id -u)" = 0 ]; then chown -R "$pguser" .; fi
  fi
  # bear rewrites compile_commands.json with only what one make ran: configure
  # and build once, then reuse the database. --enable-depend: without it
  # PostgreSQL's make does not rebuild a .c file when a header it includes
  # changes, and vprof rewrites headers (ExecProcNode is a static inline in
  # executor.h): a session's binary then held code of two instrumentations.
  # A tree configured without it (an older script's) is configured again, and
  # so is one configured with another vprof (VPROF changed since): it would
  # build against that one's probes header and run its runtime.
  local cflags libs
  cflags=$("$vprof" config --cflags)
  libs=$("$vprof" config --libs)
  if [ ! -s src/compile_commands.json ] || ! grep -q '^autodepend *= *yes' src/src/Makefile.global 2>/dev/null ||
     ! grep -qF -- "$cflags" src/src/Makefile.global; then
    if [ -f src/GNUmakefile ]; then (cd src && pg_as_user make -s distclean >/dev/null 2>&1 || true); fi
    (cd src && pg_as_user ./configure --without-icu --enable-debug --enable-cassert=no --enable-depend \
       CFLAGS="-O2 $cflags" LIBS="$libs" >/dev/null)
    (cd src && pg_as_user bear -- make -j "$jobs" >/dev/null)
  fi
  [ -s src/compile_commands.json ] || { echo "postgres: bear wrote no compile_commands.json" >&2; return 1; }
}

pg_source_sums() {
  (cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum)
}

pg_sources_pristine() {
  # sha1sum -c reads names with spaces; files the build added are not in the
  # list, and a missing one fails.
  (cd src && sha1sum -c --quiet ../pristine.sha1)
}

pg_install() {
  (cd src && pg_as_user make -s -j "$jobs" >/dev/null && pg_as_user make -s install DESTDIR="$1" >/dev/null)
}

pg_stop() {
  if [ -f "$2/postmaster.pid" ]; then
    pg_as_user "$1/usr/local/pgsql/bin/pg_ctl" -D "$2" -m fast -w stop >/dev/null || true
  fi
}

pg_database() {
  local bin=$1/usr/local/pgsql/bin data=$2 port=$3 scale=$4 sock
  [ -f "$data/PG_VERSION" ] && return 0
  sock=$(dirname "$data")/sock
  mkdir -p "$sock"
  if [ "$(id -u)" = 0 ]; then chown "$pguser" "$(dirname "$data")" "$sock"; fi
  pg_as_user "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
  printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\n" \
    "$port" "$sock" >> "$data/postgresql.conf"
  pg_as_user "$bin/pg_ctl" -D "$data" -l "$data.log" -w start >/dev/null
  pg_as_user env -u VPROF_TRACE_DIR LD_LIBRARY_PATH="$1/usr/local/pgsql/lib" \
    "$bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -i -q -s "$scale" postgres >/dev/null 2>&1
  pg_stop "$1" "$data"
}

pg_write_run() {
  local inst=$1 data=$2 port=$3 clients=$4 txns=$5 scale=$6 file=$7
  shift 7
  local here; here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  local bin=$inst/usr/local/pgsql/bin
  cp "$here/scripts/targets/pgbench-tpcb-one-query.sql" "$file.sql"
  # pgbench itself links libvprof (configure's LIBS) but must not record.
  cat > "$file" <<RUN
#!/bin/sh
set -e
"$bin/pg_ctl" -D "$data" -l "$data.log" -w start >/dev/null
trap '"$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null' EXIT
busy() { awk '/^cpu /{print \$2 + \$3 + \$4 + \$7 + \$8}' /proc/stat; }  # the machine's busy ticks
busy > "$file.busy"
env -u VPROF_TRACE_DIR LD_LIBRARY_PATH="$inst/usr/local/pgsql/lib" "$bin/pgbench" -h 127.0.0.1 \\
  -p $port -U postgres -n -c $clients -j $clients -t $txns -s $scale -f "$file.sql" $* postgres
busy >> "$file.busy"
RUN
  if [ "$(id -u)" = 0 ]; then chown "$pguser" "$file" "$file.sql"; fi
}
