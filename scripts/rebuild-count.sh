#!/usr/bin/env bash
# What one iterate iteration makes a Ninja build recompile, without building:
# instrument the function set of FILE_A, then that of FILE_B (as iteration B
# after A), and count the compiled units whose recorded dependencies (ninja
# -t deps, from the last real build) include a file the second instrument
# rewrote. With KEEP=1 the second instrument keeps the first's ids
# (`--keep-ids`, what `vprof iterate` does); KEEP=0 numbers them afresh (what
# vprof did before `--keep-ids`). The tree is restored at the end, however it ends.
# Usage: scripts/rebuild-count.sh WORK_DIR FILE_A FILE_B
#   WORK_DIR holds vprof.json (its build_dir has build.ninja and .ninja_deps:
#   built at least once); FILE_A, FILE_B list functions one a line (an
#   iteration's instrumented.txt).
# Env:   VPROF (build/src/vprof of this checkout)  KEEP (1)
#        TARGETS="t1 t2" (the build command's targets: also count only their units)
#        AS_USER=name (run vprof as this user: the tree's owner, as mariadb.sh does)
# Prints one line: "A -> B: N of M units ... (K of T in TARGETS)".
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vprof=${VPROF:-$here/build/src/vprof}
keep=${KEEP:-1}
[ $# -eq 3 ] || { echo "usage: rebuild-count.sh WORK_DIR FILE_A FILE_B" >&2; exit 2; }
work=$(cd "$1" && pwd)
a=$(realpath "$2") b=$(realpath "$3")
for f in "$a" "$b"; do [ -s "$f" ] || { echo "rebuild-count.sh: $f: no function list" >&2; exit 2; }; done
cd "$work"
[ -f vprof.json ] || { echo "rebuild-count.sh: $work/vprof.json: missing" >&2; exit 2; }
build=$(python3 -c 'import json; print(json.load(open("vprof.json"))["build_dir"])')
# The journal is in the config's source root: restore must be told it (with
# `-p build` alone it looks in the compile db's common root, which is above
# src/ when the db lists generated sources, MariaDB's, and finds no originals).
root=$(python3 -c 'import json; print(json.load(open("vprof.json")).get("source_root", ""))')
restore=(restore -p "$build")
if [ -n "$root" ]; then restore+=(--source-root "$root"); fi
[ -f "$build/.ninja_deps" ] || { echo "rebuild-count.sh: $work/$build: no .ninja_deps (not a Ninja build, or never built)" >&2; exit 2; }
run() { if [ -n "${AS_USER:-}" ]; then runuser -u "$AS_USER" -- "$@"; else "$@"; fi; }
tmp=$(mktemp -d /tmp/vprof-rebuild-count.XXXXXX)
chmod 755 "$tmp"
unwind() {
  if run "$vprof" "${restore[@]}" >/dev/null 2>"$tmp/restore.err"; then rm -rf "$tmp"; return; fi
  tail -3 "$tmp/restore.err" >&2
  echo "rebuild-count.sh: the tree is NOT restored; run: vprof ${restore[*]}" >&2
  rm -rf "$tmp"
  exit 1
}
trap unwind EXIT
functions() { local f; while IFS= read -r f; do [ -n "$f" ] && printf -- '--function\0%s\0' "$f"; done < "$1"; }
mapfile -d '' fa < <(functions "$a")
mapfile -d '' fb < <(functions "$b")
sources() { find . -path ./.git -prune -o -path '*/.vprof' -prune -o -type f -printf '%p %T@\n' | sort; }
t0=$SECONDS
run "$vprof" instrument -q --config vprof.json "${fa[@]}"
cp "$build/.vprof/manifest.json" "$tmp/a.json"
chmod 644 "$tmp/a.json"
sources > "$tmp/a.mt"
t1=$SECONDS
ids=()
if [ "$keep" = 1 ]; then ids=(--keep-ids "$tmp/a.json"); fi
run "$vprof" instrument -q --config vprof.json "${ids[@]}" "${fb[@]}"
t2=$SECONDS
sources > "$tmp/b.mt"
# Files written by the second instrument: their mtime moved.
{ diff "$tmp/a.mt" "$tmp/b.mt" || true; } | sed -n 's/^> \(.*\) [0-9.]*$/\1/p' | xargs -r realpath > "$tmp/changed"
ninja -C "$build" -t deps > "$tmp/deps" 2>/dev/null
: > "$tmp/targets"
if [ -n "${TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  ninja -C "$build" -t inputs $TARGETS 2>/dev/null | grep '\.o$' > "$tmp/targets" || true
fi
python3 - "$tmp" "$work/$build" "$(basename "$a")" "$(basename "$b")" "$keep" $((t1 - t0)) $((t2 - t1)) <<'PY'
import os, sys
tmp, build, a, b, keep, ta, tb = sys.argv[1:8]
changed = {l.strip() for l in open(tmp + "/changed") if l.strip()}
targets = {l.strip() for l in open(tmp + "/targets") if l.strip()}
units, hits, unit = 0, set(), None
for line in open(tmp + "/deps", errors="replace"):
    if not line.startswith(" ") and ": #deps" in line:
        unit = line.split(":")[0]
        units += unit.endswith(".o")
        continue
    p = line.strip()
    if unit and unit.endswith(".o") and p:
        if os.path.realpath(p if p.startswith("/") else os.path.join(build, p)) in changed:
            hits.add(unit)
            unit = None
out = f"{a} -> {b} (keep ids: {'yes' if keep == '1' else 'no'}): {len(hits)} of {units} units depend on the {len(changed)} files rewritten"
if targets:
    out += f" ({len(hits & targets)} of {len(targets)} in the targets)"
print(out + f"; instrument {ta} s and {tb} s")
PY
