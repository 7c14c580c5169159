#!/usr/bin/env bash
# An installed vprof (any prefix) prints flags that build and record an
# annotated C program. Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
vprof=$tmp/prefix/bin/vprof
cflags=$("$vprof" config --cflags) libs=$("$vprof" config --libs)
case "$cflags $libs" in
  *"$tmp/prefix"*) ;;
  *) echo "FAIL: flags do not point into the install prefix: $cflags $libs"; exit 1 ;;
esac
cat > "$tmp/app.c" <<'C'
#include <vprof/vprof.h>
int main(void) { vprof_interval_begin_labeled(1, "t", 0); vprof_interval_end(1); return 0; }
C
cc -std=c99 "$tmp/app.c" $cflags $libs -o "$tmp/app"
"$vprof" run --trace-dir "$tmp/trace" -- "$tmp/app" 2>/dev/null
"$vprof" dump "$tmp/trace" | grep -q "interval_end   interval=1"
echo "1 passed, 0 failed"
