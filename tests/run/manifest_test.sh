#!/bin/bash
# Issue 13, part 6: `vprof analyze` finds the manifest with no flag, and
# refuses one from another instrumentation. A small C program is instrumented,
# built and run for real:
#   manifest_test.sh VPROF CC
set -u
VPROF=$1 CC=$2
WORK=$(mktemp -d /tmp/vprof-manifest-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p src build
cat > src/prog.c <<'C'
#include <vprof/vprof.h>
static volatile unsigned sink;
static void step(unsigned i) { for (unsigned k = 0; k < 200 + (i % 7) * 50; ++k) sink += k; }
static void other(unsigned i) { sink += i; }
int handle(unsigned i) { step(i); other(i); return 0; }
int main(void) {
  for (unsigned i = 1; i <= 300; ++i) { vprof_interval_begin(i); handle(i); vprof_interval_end(i); }
  return 0;
}
C
echo "[{\"directory\": \"$WORK/src\", \"file\": \"prog.c\",
   \"command\": \"$CC -std=c99 $("$VPROF" config --cflags) -c prog.c\"}]" > build/compile_commands.json
build() { (cd src && $CC -std=c99 -O1 $("$VPROF" config --cflags) prog.c -o prog $("$VPROF" config --libs)) ||
  fail "the instrumented program does not build"; }

"$VPROF" instrument -q -p build --function handle || fail "instrument failed"
build
"$VPROF" run --trace-dir T -- src/prog 2>err || fail "run failed: $(cat err)"
[ -f T/manifest.json ] || fail "run did not copy the registered manifest: $(cat err)"
cmp -s T/manifest.json build/.vprof/manifest.json || fail "the copied manifest differs"
# The JSON tree names every node, however small its share (the text shows 1% and up).
"$VPROF" analyze T --json report 2>err || fail "analyze failed: $(cat err)"
grep -q '"label": "handle' report || fail "no function names in the report: $(head -c 2000 report)"
grep -q "fn#" report && fail "ids without names in the report"

# Another instrumentation, the program not rebuilt: the manifest on disk is no
# longer the program's. run says so and copies nothing; analyze refuses it
# when given, and names nothing rather than naming wrongly.
"$VPROF" instrument -q -p build --function handle --function main || fail "second instrument failed"
"$VPROF" run --trace-dir T2 -- src/prog 2>err || fail "second run failed: $(cat err)"
[ ! -e T2/manifest.json ] || fail "run copied a manifest of another instrumentation"
grep -q "now holds another instrumentation" err || fail "run did not say the manifest changed: $(cat err)"
"$VPROF" analyze T2 --manifest build/.vprof/manifest.json >out 2>err && fail "analyze accepted a foreign manifest"
[ $? -eq 2 ] || fail "not exit 2"
[ "$(grep -c '' err)" -eq 1 ] || fail "not one line: $(cat err)"
grep -q "manifest of another instrumentation" err || fail "unclear message: $(cat err)"
cp build/.vprof/manifest.json T2/manifest.json
"$VPROF" analyze T2 >out 2>err && fail "analyze accepted a foreign manifest in the trace dir"
grep -q "manifest of another instrumentation" err || fail "unclear message: $(cat err)"
"$VPROF" restore -p build 2>/dev/null || fail "restore failed"
echo "manifest identity: ok"
