#!/bin/sh
# Every command's page documents the options its --help lists, and no other
# (docs/cli.md): docs/CMD.md has one table whose header row is
# `| option | default | meaning |`, with the option's names in backticks in
# the first cell (`-p`, `--build-dir DIR`). Fails naming the command and the
# option that one side has and the other lacks.
# Usage: help_contract_test.sh VPROF DOCS_DIR
vprof=$1
docs=$2
[ -x "$vprof" ] && [ -d "$docs" ] || { echo "usage: $0 VPROF DOCS_DIR" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# Option names of `vprof CMD --help`: the first word of each line of its
# "Options:" section (`-p,--build-dir`), split at the commas; not --help.
help_options() {
  "$vprof" "$1" --help >"$tmp/help" 2>&1 || { echo "FAIL $1: --help exited $?" >&2; cat "$tmp/help" >&2; return 1; }
  awk '/^Options:/ { on = 1; next } on && /^$/ { exit } on && /^  -/ { print $1 }' "$tmp/help" |
    tr ',' '\n' | grep -v -x -e '-h' -e '--help' | sort -u
}

# Option names in the first cell of each row of the page's options table(s).
page_options() {
  awk '/^\| option \| default \| meaning \|/ { on = 1; next }
       on && !/^\|/ { on = 0 }
       on && !/^\|---/ { line = $0; gsub(/\\\|/, "", line); split(line, cell, "|"); print cell[2] }' "$1" |
    grep -o '`[^`]*`' | grep -oE '(^`|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[` ,]*//' | sort -u
}

commands=$("$vprof" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$commands" ] || { echo "FAIL: vprof --help lists no command"; exit 1; }
fail=0
checked=0
for c in $commands; do
  page=$docs/$c.md
  if [ ! -f "$page" ]; then
    echo "FAIL $c: no page $page"
    fail=$((fail + 1))
    continue
  fi
  help_options "$c" >"$tmp/h" || { fail=$((fail + 1)); continue; }
  page_options "$page" >"$tmp/p"
  if ! grep -q '^| option | default | meaning |' "$page"; then
    echo "FAIL $c: $page has no '| option | default | meaning |' table"
    fail=$((fail + 1))
    continue
  fi
  for o in $(comm -23 "$tmp/h" "$tmp/p"); do
    echo "FAIL $c: $o is in 'vprof $c --help' but not in $page's options table"
    fail=$((fail + 1))
  done
  for o in $(comm -13 "$tmp/h" "$tmp/p"); do
    echo "FAIL $c: $o is in $page's options table but not in 'vprof $c --help'"
    fail=$((fail + 1))
  done
  checked=$((checked + 1))
done
echo "$checked commands checked, $fail differences"
[ "$fail" -eq 0 ]
