#!/bin/bash
# `vprof analyze` finds the manifest with no flag, and
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

# Each rewritten file registers its own id. Two files; the second
# instrumentation keeps the first's ids and changes only main.c: lib.c keeps
# its bytes, and a program that recompiled main.c alone is one
# instrumentation (names, no warning). A third changes lib.c too; the
# program rebuilt without it holds two, which run, analyze say.
mkdir -p two/src two/build
cat > two/src/lib.c <<'C'
static volatile unsigned sink;
void spin(unsigned n) { for (unsigned k = 0; k < n; ++k) sink += k; }
int work(unsigned i) { spin(200 + (i % 7) * 50); return 0; }
C
cat > two/src/main.c <<'C'
#include <vprof/vprof.h>
int work(unsigned i);
void spin(unsigned n);
int handle(unsigned i) { work(i); spin(10); return 0; }
int main(void) {
  for (unsigned i = 1; i <= 300; ++i) { vprof_interval_begin(i); handle(i); vprof_interval_end(i); }
  return 0;
}
C
CFLAGS="-std=c99 -O1 $("$VPROF" config --cflags)"
echo "[{\"directory\": \"$WORK/two/src\", \"file\": \"lib.c\", \"command\": \"$CC $CFLAGS -c lib.c\"},
      {\"directory\": \"$WORK/two/src\", \"file\": \"main.c\", \"command\": \"$CC $CFLAGS -c main.c\"}]" \
  > two/build/compile_commands.json
obj() { (cd two/src && $CC $CFLAGS -c "$1.c" -o "$1.o") || fail "$1.c does not build"; }
link() { (cd two/src && $CC lib.o main.o -o prog $("$VPROF" config --libs)) || fail "no link"; }
"$VPROF" instrument -q -p two/build --function work --function handle || fail "instrument (two) failed"
obj lib; obj main; link
cp two/build/.vprof/manifest.json two/first.json
cp two/src/lib.c two/lib-first.c
"$VPROF" instrument -q -p two/build --function work --function handle --function main --keep-ids two/first.json ||
  fail "instrument --keep-ids failed"
cmp -s two/src/lib.c two/lib-first.c || fail "lib.c changed though its selection did not"
obj main; link
"$VPROF" run --trace-dir T3 -- two/src/prog 2>err || fail "run (two) failed: $(cat err)"
grep -q "warning" err && fail "a program rebuilt where it changed was warned about: $(cat err)"
[ -f T3/manifest.json ] || fail "run did not copy the manifest: $(cat err)"
"$VPROF" analyze T3 --json report 2>err || fail "analyze (two) failed: $(cat err)"
grep -q '"label": "handle' report || fail "no names in the report"
cp two/build/.vprof/manifest.json two/second.json
"$VPROF" instrument -q -p two/build --function work --function spin --function handle --function main \
  --keep-ids two/second.json || fail "third instrument failed"
cmp -s two/src/lib.c two/lib-first.c && fail "lib.c did not change though spin was added"
obj main; link  # lib.o is stale
"$VPROF" run --trace-dir T4 -- two/src/prog 2>err || fail "run (stale) failed: $(cat err)"
grep -q "two or more instrumentations" err || fail "run did not say the program is stale: $(cat err)"
[ ! -e T4/manifest.json ] || fail "run copied the manifest for a stale program"
"$VPROF" analyze T4 --manifest two/build/.vprof/manifest.json >out 2>err && fail "analyze accepted a stale program"
[ $? -eq 2 ] || fail "not exit 2"
[ "$(grep -c '' err)" -eq 1 ] || fail "not one line: $(cat err)"
grep -q "did not recompile every file vprof rewrote" err || fail "unclear message: $(cat err)"
"$VPROF" instrument -q -p two/build --keep-ids two/nonexistent.json --function work >out 2>err &&
  fail "a missing --keep-ids manifest was accepted"
grep -q "two/nonexistent.json: cannot read" err || fail "unclear --keep-ids error: $(cat err)"
"$VPROF" restore -p two/build 2>/dev/null || fail "restore (two) failed"
echo "manifest identity: ok"
