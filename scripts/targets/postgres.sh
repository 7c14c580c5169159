#!/usr/bin/env bash
# vprof on PostgreSQL 15 (by hand, not CI: the build and `make check` take long).
#   fetch (apt-get source postgresql-15) -> configure -> `bear -- make` (compile
#   db) -> instrument exec_simple_query with the PostgreSQL pack -> rebuild ->
#   `make check` -> restore (tree identical to the pristine source).
# PostgreSQL refuses to run as root: the tree is owned by, and make check runs
# as, the unprivileged user $PGUSER (default nobody).
# Usage: scripts/targets/postgres.sh [WORK_DIR]        (default /tmp/vprof-postgres)
# Env:   VPROF=path/to/vprof  JOBS=N  PGUSER=nobody  FUNCTIONS="f g ..." (default exec_simple_query)
# Needs: bear, bison, flex, libreadline-dev, zlib1g-dev, gcc, make.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/vprof-postgres}
vprof=${VPROF:-$here/build/src/vprof}
jobs=${JOBS:-2}
pguser=${PGUSER:-nobody}
functions=${FUNCTIONS:-exec_simple_query}
step() { printf '\n== %s (%ds)\n' "$*" "$SECONDS"; }
die() { echo "postgres.sh: $*" >&2; exit 1; }
as_user() { if [ "$(id -u)" = 0 ]; then runuser -u "$pguser" -- "$@"; else "$@"; fi; }
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
command -v bear >/dev/null || die "bear is not installed (apt-get install bear)"
mkdir -p "$work"
cd "$work"

step "fetch Debian's postgresql-15 source"
if [ ! -d src ]; then
  "$here/scripts/targets/deb-source.sh" postgresql-15 src
  [ "$(id -u)" = 0 ] && chown -R "$pguser" "$work"
fi
if [ -f src/.vprof/state.json ]; then "$vprof" restore -p src; fi
# Checksums of the fetched sources, before any build writes into the tree.
[ -s pristine.sha1 ] ||
  (cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum) > pristine.sha1

step "configure and build with bear (compile db in src/)"
cflags=$("$vprof" config --cflags)
libs=$("$vprof" config --libs)
# bear rewrites compile_commands.json with only what one make ran: configure
# and build once, then reuse the database.
if [ ! -s src/compile_commands.json ]; then
  (cd src && as_user ./configure --without-icu --enable-debug --enable-cassert=no \
     CFLAGS="-O2 $cflags" LIBS="$libs" >/dev/null)
  (cd src && as_user bear -- make -j "$jobs" >/dev/null)
fi
[ -s src/compile_commands.json ] || die "bear wrote no compile_commands.json"

step "instrument"
args=()
for f in $functions; do args+=(--function "$f"); done
start=$SECONDS
"$vprof" instrument -p src --sync postgres "${args[@]}"
echo "instrument took $((SECONDS - start)) s"
[ "$(id -u)" = 0 ] && chown -R "$pguser" "$work"

step "rebuild instrumented"
(cd src && as_user make -j "$jobs" >/dev/null)

step "make check"
(cd src && as_user make check)

step "restore"
"$vprof" restore -p src
(cd src && find . -type f -not -path './.vprof/*' -print0 | sort -z | xargs -0 sha1sum) > restored.sha1
# The build's outputs differ, the sources must not: compare the files that existed before.
join -j 2 <(sort -k2 pristine.sha1) <(sort -k2 restored.sha1) | awk '$2 != $3 {print $1; bad=1} END {exit bad}' ||
  die "restored sources differ from the pristine tree"
echo "restored tree identical to the pristine source"
step "done"
