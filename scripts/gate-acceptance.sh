#!/usr/bin/env bash
# Issue 15's acceptance, the long version (by hand; figures in
# docs/performance.md "vprof gate"): vprof gate on examples/minidb's contended
# preset, DECISIONS decisions of RUNS interleaved runs a side, default
# thresholds (variance +10%, p99 +5%, confidence 0.95).
#   false   the same build against itself: how many decisions fail
#   detect  the head with an exponential delay, mean 20% of the median
#           latency (measured here first), planted in FUNC by minidb's fault
#           injection: how many fail, and is FUNC named first in each
#   refactor  a copy with lines and a whole function inserted above the
#           instrumented call sites, against the original: passes? moved nodes?
# Usage: scripts/gate-acceptance.sh [false|detect|refactor|all] [WORK_DIR]
#   env: VPROF (default build/src/vprof), DECISIONS (20), RUNS (5),
#        FUNC (Database::commit), FUNCTIONS (instrumented; scripts/lib/minidb-gate.sh),
#        CONFIDENCE (0.95), BENCH_FLAGS (more minidb_bench flags, both sides)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
work=${2:-${TMPDIR:-/tmp}/vprof-gate-acceptance}
vprof=${VPROF:-$root/build/src/vprof}
decisions=${DECISIONS:-20}
runs=${RUNS:-5}
confidence=${CONFIDENCE:-0.95}
func=${FUNC:-Database::commit}
source "$root/scripts/lib/minidb-gate.sh"

# An instrumented copy of minidb in $1 (a refactored one with $2 = refactor).
build_minidb() {
  local dir=$1 src=$root/examples/minidb
  if [ "${2:-}" = refactor ]; then
    # Lines and a whole function above the call sites: no behaviour change.
    rm -rf "$work/refactor-src" && cp -r "$root/examples/minidb" "$work/refactor-src"
    src=$work/refactor-src
    python3 - "$src/src/executor.cc" "$src/src/database.cc" <<'PY'
import sys
for path in sys.argv[1:]:
    s = open(path).read()
    i = s.index('namespace minidb {') + len('namespace minidb {')
    s = s[:i] + '\n// moved by a refactor\n\nnamespace {\n[[maybe_unused]] int unused_helper(int x) {\n  return x * 2 + 1;\n}\n}  // namespace\n\n' + s[i:]
    open(path, 'w').write(s)
PY
  fi
  minidb_gate_build "$src" "$dir"
}

# BENCH_FLAGS: more minidb_bench flags for both sides (an open loop: --rate 200).
read -r -a bench_flags <<< "${BENCH_FLAGS:-}"
run_one() { local dir=$1 out=$2; shift 2; minidb_gate_run "$dir" "$out" "$work/data" "${bench_flags[@]}" "$@"; }

# decide NAME HEAD_DIR [head bench flags...]: DECISIONS gate decisions.
decide() {
  local name=$1 head_dir=$2
  shift 2
  local fails=0 named=0 unsure=0 d k
  : > "$work/$name.log"
  for d in $(seq 1 "$decisions"); do
    local b=() h=()
    for k in $(seq 1 "$runs"); do   # interleaved: base, head, base, head, ...
      run_one "$work/base" "$work/$name-b$k.vprof" --seed "$((d * 100 + k))"
      run_one "$head_dir" "$work/$name-h$k.vprof" --seed "$((d * 100 + k + 50))" "$@"
      b+=("$work/$name-b$k.vprof") h+=("$work/$name-h$k.vprof")
    done
    local rc=0 msg
    msg=$("$vprof" gate --baseline-runs "${b[@]}" --runs "${h[@]}" --confidence "$confidence" --json "$work/$name-$d.json" 2>&1 >/dev/null) || rc=$?
    [ $rc -eq 2 ] && { echo "gate error: $msg" >&2; exit 2; }
    msg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gate"]["summary"])' "$work/$name-$d.json")
    echo "decision $d: exit $rc: $msg" | tee -a "$work/$name.log"
    [ $rc -eq 3 ] && unsure=$((unsure + 1))
    if [ $rc -eq 1 ]; then
      fails=$((fails + 1))
      # First named: FUNC itself, or the planted delay's call site in FUNC
      # (minidb::inject_delay, when FUNC is broken down).
      local first=${msg#*increase from }
      first=${first%%, *}
      case "$first" in "minidb::$func "*|"minidb::inject_delay "*" in minidb::$func") named=$((named + 1)) ;; esac
    fi
  done
  echo "$name: $fails of $decisions decisions failed, $unsure inconclusive, $((decisions - fails - unsure)) passed; $func named first in $named of the $fails failures" | tee -a "$work/summary.txt"
}

mkdir -p "$work/data"
start=$(date +%s)
[ -x "$work/base/minidb/b/minidb_bench" ] || build_minidb "$work/base"
: >> "$work/summary.txt"
if [ "$what" = false ] || [ "$what" = all ]; then decide false "$work/base"; fi
if [ "$what" = detect ] || [ "$what" = all ]; then
  # The median latency, from the bench's own summary over RUNS runs.
  median=$(for k in $(seq 1 "$runs"); do
    "$work/base/minidb/b/minidb_bench" --preset contended "${bench_flags[@]}" --dir "$work/data" --seed "$k" | awk '/^all /{for(i=1;i<=NF;i++) if ($i ~ /^p50_us=/) {sub("p50_us=","",$i); print $i}}'
  done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  delay=$(python3 -c "print(round(0.2 * $median))")
  echo "detect: median latency ${median} us, planted delay exp:${delay}us in $func" | tee -a "$work/summary.txt"
  decide detect "$work/base" --inject-delay "$func=exp:${delay}us"
fi
if [ "$what" = refactor ] || [ "$what" = all ]; then
  [ -x "$work/refactor/minidb/b/minidb_bench" ] || build_minidb "$work/refactor" refactor
  decisions=${REFACTOR_DECISIONS:-3} decide refactor "$work/refactor"
  "$vprof" diff "$work/refactor-b1.vprof" "$work/refactor-h1.vprof" --json "$work/refactor-diff.json" >/dev/null
  python3 - "$work/refactor-diff.json" <<'PY' | tee -a "$work/summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
moved = [n for n in d["nodes"] if n["status"] == "moved"]
other = [n for n in d["nodes"] if n["status"] in ("appeared", "disappeared") and "preempted" not in n["key"]]
print(f"refactor: {len(moved)} nodes moved, {len(other)} appeared or disappeared (besides preemption leaves)")
for n in moved[:8]:
    b, h = n["base_call_site"], n["head_call_site"]
    print(f"  {n['key']}: {b['file'].rsplit('/',1)[-1]}:{b['line']} -> {h['file'].rsplit('/',1)[-1]}:{h['line']}")
PY
fi
echo "gate-acceptance: $what in $(( $(date +%s) - start )) s (RUNS=$runs per side, confidence $confidence)" | tee -a "$work/summary.txt"
