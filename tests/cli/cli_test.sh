#!/usr/bin/env bash
# Behaviour of the vprof program itself: exit codes and one-line errors
# (docs/cli.md), run -> dump end to end. Usage: cli_test.sh VPROF WORKLOAD
set -uo pipefail
vprof=$1 workload=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect NAME WANT_RC STDERR_REGEX -- CMD...
expect() {
  local name=$1 want=$2 pattern=$3
  shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq "$want" ] && { [ -z "$pattern" ] || grep -Eq -- "$pattern" "$tmp/err"; }; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: rc=$rc (want $want), stderr:"; sed 's/^/    /' "$tmp/err"
  fi
}

expect "unknown flag" 2 '^vprof: error: .*--frobnicate' -- "$vprof" dump --frobnicate x
expect "no command" 2 '^vprof: error: ' -- "$vprof"
expect "run: missing program" 2 '^vprof: error: no-such-prog-xyz: command not found$' -- \
  "$vprof" run --trace-dir "$tmp/t0" -- no-such-prog-xyz
expect "dump: missing dir" 2 "^vprof: error: $tmp/nope: cannot open trace directory" -- "$vprof" dump "$tmp/nope"
mkdir -p "$tmp/empty"
expect "dump: empty dir" 2 "no trace files" -- "$vprof" dump "$tmp/empty"
expect "config: nothing asked" 2 '^vprof: error: config: say what to print' -- "$vprof" config

# run -> dump: the workload's round trip, with its exit status passed through.
expect "run roundtrip" 0 'trace in .*\(2 thread files\)' -- "$vprof" run --trace-dir "$tmp/t1" -- "$workload" roundtrip
expect "dump roundtrip" 0 '' -- "$vprof" dump "$tmp/t1"
grep -q "interval_begin interval=1 type='NewOrder' client='alice'" "$tmp/out" && pass=$((pass + 1)) || {
  fail=$((fail + 1)); echo "FAIL dump content"; }
# analyze A B merges runs of one program: two programs' traces are refused.
cp "$workload" "$tmp/another-program"
expect "run another program" 0 '' -- "$vprof" run --trace-dir "$tmp/t-other" -- "$tmp/another-program" roundtrip
expect "analyze two programs" 2 "^vprof: error: $tmp/t1 and $tmp/t-other: traces of different programs \(.*; another-progr.*\): analyze merges runs of one program" -- \
  "$vprof" analyze "$tmp/t1" "$tmp/t-other"
expect "analyze two runs of one program" 0 '' -- "$vprof" analyze "$tmp/t1" "$tmp/t1"
# analyze --html: one page; an output that cannot be written is one line
# naming the file, before any analysis.
expect "analyze --html" 0 '' -- "$vprof" analyze "$tmp/t1" --html "$tmp/r.html"
grep -q '<script type="application/json" id="vprof-data">' "$tmp/r.html" && pass=$((pass + 1)) || {
  fail=$((fail + 1)); echo "FAIL analyze --html wrote no page"; }
expect "analyze --html: no such directory" 2 \
  "^vprof: error: --html $tmp/no/such/r.html: cannot write: No such file or directory \\($tmp/no/such\\)$" -- \
  "$vprof" analyze "$tmp/t1" --html "$tmp/no/such/r.html"
expect "analyze --html: not a directory" 2 "^vprof: error: --html $tmp/r.html/x.html: cannot write: $tmp/r.html is not a directory$" -- \
  "$vprof" analyze "$tmp/t1" --html "$tmp/r.html/x.html"
[ "$(wc -l < "$tmp/err")" -eq 1 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL not one line"; cat "$tmp/err"; }
expect "analyze: two reports on stdout" 2 'at most one report may be' -- "$vprof" analyze "$tmp/t1" --html - --json -
expect "run passes exit status" 2 '' -- "$vprof" run --trace-dir "$tmp/t2" -- "$workload" no-such-mode

# analyze: the trees within types, per-client fairness and --perfetto on the
# round trip's labeled intervals; a bad value or an unwritable output is one
# line naming it, exit 2, before any work.
expect "analyze --by-type" 0 '' -- "$vprof" analyze "$tmp/t1" --by-type --bootstrap 0
grep -q "^variance tree within type NewOrder (4 intervals" "$tmp/out" && grep -q "^by client: 1 client," "$tmp/out" &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL analyze --by-type output:"; cat "$tmp/out"; }
expect "analyze --perfetto" 0 '' -- "$vprof" analyze "$tmp/t1" --perfetto "$tmp/p.json" --perfetto-intervals 2
head -1 "$tmp/p.json" | grep -q '^{"traceEvents": \[' && grep -q '"ph":"b"' "$tmp/p.json" &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL analyze --perfetto wrote:"; head -5 "$tmp/p.json"; }
expect "perfetto: no such directory" 2 "^vprof: error: --perfetto $tmp/none/p.json: cannot write: No such file or directory \\($tmp/none\\)$" -- \
  "$vprof" analyze "$tmp/t1" --perfetto "$tmp/none/p.json"
expect "perfetto: a directory" 2 "^vprof: error: --perfetto $tmp: is a directory$" -- "$vprof" analyze "$tmp/t1" --perfetto "$tmp"
expect "perfetto: stdout" 2 '^vprof: error: --perfetto -: ' -- "$vprof" analyze "$tmp/t1" --perfetto -
expect "perfetto: intervals 0" 2 '^vprof: error: --perfetto-intervals: must be a whole number between 1 and 1000, not 0$' -- \
  "$vprof" analyze "$tmp/t1" --perfetto "$tmp/q.json" --perfetto-intervals 0
expect "perfetto: intervals alone" 2 '^vprof: error: --perfetto-intervals requires --perfetto$' -- \
  "$vprof" analyze "$tmp/t1" --perfetto-intervals 3
[ ! -e "$tmp/q.json" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a refused --perfetto wrote its file"; }
# Perfetto's trace processor loads it where one is installed; else one line says it skipped.
expect "perfetto-check" 0 '' -- "$(dirname "$0")/../../scripts/perfetto-check.sh" "$tmp/p.json"
grep -Eq '^perfetto-check: (skipped: |.*: slices = [1-9])' "$tmp/out" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL perfetto-check said:"; cat "$tmp/out"; }

# A damaged file: one error line naming the file and offset, exit 2.
cp -r "$tmp/t1" "$tmp/t3"
f=$(ls "$tmp"/t3/t-*.vpt | head -1)
printf 'XXXXXXXX' | dd of="$f" bs=1 seek=0 conv=notrunc status=none
expect "dump damaged" 2 "^vprof: error: $f:0: error: not a vprof trace file \\(bad magic\\)" -- "$vprof" dump "$tmp/t3"

# config points at a header and library that exist.
inc=$("$vprof" config --include-dir) lib=$("$vprof" config --lib-dir)
[ -f "$inc/vprof/vprof.h" ] && [ -f "$lib/libvprof.so" ] && pass=$((pass + 1)) || {
  fail=$((fail + 1)); echo "FAIL config paths: $inc $lib"; }

# instrument --config: the build dir and packs come from vprof.json (skipped
# when this vprof was built without the instrumenter).
if "$vprof" --help 2>/dev/null | grep -q "^  instrument "; then
  mkdir -p "$tmp/tree"
  printf 'int g(int x) { return x + 1; }\nint f(int x) { return g(x) * 2; }\n' >"$tmp/tree/a.c"
  printf '[{"directory": "%s", "file": "a.c", "arguments": ["cc", "-c", "a.c"]}]\n' "$tmp/tree" \
    >"$tmp/tree/compile_commands.json"
  printf '{"root": "f", "build_dir": ".", "build_command": "true", "run_command": "true", "sync_packs": ["pthreads"]}\n' \
    >"$tmp/tree/vprof.json"
  expect "instrument --config" 0 'would instrument 1 functions, 1 call sites' -- \
    "$vprof" instrument --config "$tmp/tree/vprof.json" --function f --dry-run
  expect "instrument --config missing" 2 "^vprof: error: $tmp/none.json: cannot read the session config" -- \
    "$vprof" instrument --config "$tmp/none.json" --function f
  # Those commands are vprof-clang's (src/clang_commands.h): vprof itself
  # must not load clang and LLVM (~25 ms per run), and without vprof-clang
  # beside it says so in one line.
  if ldd "$vprof" | grep -Eq 'libLLVM|libclang'; then
    fail=$((fail + 1)); echo "FAIL vprof links clang or LLVM:"; ldd "$vprof" | grep -E 'LLVM|clang'
  else
    pass=$((pass + 1))
  fi
  expect "instrument --help through vprof-clang" 0 '' -- "$vprof" instrument --help
  grep -q -- '--function' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL instrument --help"; }
  mkdir -p "$tmp/alone" && cp "$vprof" "$tmp/alone/vprof"
  expect "instrument without vprof-clang" 2 "^vprof: error: $tmp/alone/vprof-clang: cannot run it for \`instrument\`" -- \
    "$tmp/alone/vprof" instrument --function f
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
