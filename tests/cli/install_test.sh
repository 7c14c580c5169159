#!/usr/bin/env bash
# An installed vprof (any prefix) prints flags that build and record an
# annotated C program, with the link flags before the objects or after; its
# pkg-config file and CMake package (vprof::runtime,
# vprof_add_gate_test) build one too, and the package's gate test passes
# against its own baseline and fails against a missing one.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
vprof=$tmp/prefix/bin/vprof
# The runtime every recorded program loads needs libc alone (runtime/CMakeLists.txt):
# a C server (PostgreSQL, Redis) must not gain libstdc++ by being recorded. A
# function-local static with a constructor had linked it (__cxa_guard_acquire).
lib=$(find "$tmp/prefix" -name 'libvprof.so' | head -1)
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
  grep -vE '^(libc|libpthread|libdl|librt|ld-linux[-a-z0-9_]*)\.so' || true)
[ -z "$needed" ] || { echo "FAIL: $lib needs more than libc: $(echo $needed)"; exit 1; }
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

# The link flags work wherever a build puts them: Redis puts its
# LDFLAGS before the objects, and a linker with --as-needed (Debian's gcc's
# default; said here for every distribution) dropped -lvprof named there:
# "undefined reference to vprof_interval_begin_labeled". After the objects
# too; and --as-needed holds again for what follows the flags (libm, unused,
# is not linked). $1: what to call the run; the rest: the link's arguments.
cc -std=c99 -c "$tmp/app.c" $cflags -o "$tmp/app.o"
link_and_record() {
  local what=$1
  shift
  cc -Wl,--as-needed "$@" -o "$tmp/app-$what" 2>"$tmp/link-$what.log" ||
    { echo "FAIL: linking with the flags $what the objects: $(cat "$tmp/link-$what.log")"; exit 1; }
  "$vprof" run --trace-dir "$tmp/trace-$what" -- "$tmp/app-$what" 2>/dev/null
  "$vprof" dump "$tmp/trace-$what" | grep -q "interval_end   interval=1" ||
    { echo "FAIL: the program linked with the flags $what the objects recorded nothing"; exit 1; }
  if readelf -d "$tmp/app-$what" | grep -q 'NEEDED.*libm\.so'; then
    echo "FAIL: the flags $what the objects turned --as-needed off for the rest of the link"; exit 1
  fi
}
link_and_record before $libs "$tmp/app.o" -lm
link_and_record after "$tmp/app.o" $libs -lm

# pkg-config, from the prefix's vprof.pc (relocatable: the prefix is a temp dir).
pc_flags=$(PKG_CONFIG_PATH=$(dirname "$(find "$tmp/prefix" -name vprof.pc)") pkg-config --cflags --libs vprof)
case "$pc_flags" in
  *"$tmp/prefix"*) ;;
  *) echo "FAIL: vprof.pc flags do not point into the install prefix: $pc_flags"; exit 1 ;;
esac
cc -std=c99 "$tmp/app.c" $pc_flags -o "$tmp/app-pc"
"$vprof" run --trace-dir "$tmp/trace-pc" -- "$tmp/app-pc" 2>/dev/null
"$vprof" dump "$tmp/trace-pc" | grep -q "interval_end   interval=1"
pc_libs=$(PKG_CONFIG_PATH=$(dirname "$(find "$tmp/prefix" -name vprof.pc)") pkg-config --libs vprof)
link_and_record pc-before $pc_libs "$tmp/app.o" -lm

# The CMake package: a project that links vprof::runtime and gates itself.
mkdir -p "$tmp/proj"
cat > "$tmp/proj/work.c" <<'C'
#include <vprof/vprof.h>
int main(void) {
  volatile unsigned long x = 0;
  for (unsigned long i = 1; i <= 200; ++i) {
    vprof_interval_begin(i);
    for (unsigned long j = 0; j < 2000 + (i % 7) * 300; ++j) x += j;
    vprof_interval_end(i);
  }
  return 0;
}
C
cat > "$tmp/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(uses_vprof C)
find_package(vprof CONFIG REQUIRED)
add_executable(work work.c)
target_link_libraries(work PRIVATE vprof::runtime)
enable_testing()
# The thresholds are wide: this checks the plumbing, not the machine's noise.
# Two runs a side: at one the gate never gives a sure verdict (docs/gate.md).
vprof_add_gate_test(work_gate COMMAND work
                    BASELINE ${CMAKE_CURRENT_BINARY_DIR}/base-1.vprof ${CMAKE_CURRENT_BINARY_DIR}/base-2.vprof
                    MAX_VAR_INCREASE 100000% MAX_P99_INCREASE 100000%)
vprof_add_gate_test(work_gate_no_baseline COMMAND work BASELINE ${CMAKE_CURRENT_BINARY_DIR}/none.vprof)
CM
cmake -S "$tmp/proj" -B "$tmp/proj/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/proj/b" >/dev/null
(cd "$tmp/proj/b" && VPROF_UPDATE_BASELINE=1 ctest -R '^work_gate$' >/dev/null) ||
  { echo "FAIL: recording the baseline"; exit 1; }
[ -s "$tmp/proj/b/base-1.vprof" ] && [ -s "$tmp/proj/b/base-2.vprof" ] || { echo "FAIL: no baseline recorded"; exit 1; }
# Against its own baseline: a pass, or (two small runs a side: the variance's
# interval can reach past any threshold) a skip saying the gate cannot tell.
(cd "$tmp/proj/b" && ctest -R '^work_gate$' > "$tmp/gate-ctest.log") ||
  { echo "FAIL: the gate test against its own baseline: $(cat "$tmp/gate-ctest.log")"; exit 1; }
grep -Eq "work_gate .*(Passed|Skipped)" "$tmp/gate-ctest.log" ||
  { echo "FAIL: the gate test neither passed nor was skipped: $(cat "$tmp/gate-ctest.log")"; exit 1; }
grep -q 'failures="0" errors="0"' "$tmp/proj/b/vprof-gate/work_gate/junit.xml" ||
  { echo "FAIL: gate junit: $(cat "$tmp/proj/b/vprof-gate/work_gate/junit.xml")"; exit 1; }
if (cd "$tmp/proj/b" && ctest -R work_gate_no_baseline >/dev/null 2>&1); then
  echo "FAIL: a gate test without its baseline passed"; exit 1
fi
echo "6 passed, 0 failed"
