#!/usr/bin/env bash
# Does vprof gate pass a build against itself, catch a planted regression and
# pass a refactor? The long version (by hand; figures in
# docs/performance.md "vprof gate"): vprof gate on examples/minidb's contended
# preset, DECISIONS decisions of RUNS interleaved runs a side, default
# thresholds (variance +10%, p99 +5%, confidence 0.95).
#   false   the same build against itself: how many decisions fail
#   detect  the head with a delay planted in FUNC by minidb's fault
#           injection (DELAY, or an exponential one of mean 20% of the
#           median latency, measured here first): how many fail, and is FUNC
#           named first in each
#   refactor  a copy with lines and a whole function inserted above the
#           instrumented call sites, against the original: passes? moved nodes?
#   calibrate  for each delay of DELAYS (DIST planted in FUNC, or FUNC=DIST),
#           CAL_RUNS interleaved runs a side gated together: the p99 (and
#           variance) change a delay makes, to choose DELAY for a p99 move of
#           a given size
# Every verdict is counted (pass, regression, inconclusive: `vprof gate`
# exits 0, 1, 3). With FOLLOW=1 (the default) an inconclusive decision that
# says "about N runs a side would decide" gets N − RUNS more runs a side
# (interleaved, N <= FOLLOW_MAX) and is decided again on all N: is it then
# decided?
# Usage: scripts/gate-acceptance.sh [false|detect|refactor|all|calibrate] [WORK_DIR]
#   env: VPROF (default build/src/vprof), DECISIONS (20), RUNS (5),
#        FUNC (Database::commit), DELAY (DIST in FUNC, or FUNC=DIST, e.g.
#          Database::commit=exp:50us; default exp: 20% of the median in FUNC),
#        DELAYS ("exp:10us exp:30us exp:100us"), CAL_RUNS (10), FOLLOW (1),
#        FOLLOW_MAX (30), SEED_OFFSET (0), FUNCTIONS (instrumented; scripts/lib/minidb-gate.sh),
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
follow=${FOLLOW:-1}
follow_max=${FOLLOW_MAX:-30}
seed_offset=${SEED_OFFSET:-0}  # another set of minidb seeds for another round
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

# gate_runs K1 K2 NAME D HEAD_DIR [head bench flags...]: runs K1..K2 a side
# of decision D, interleaved (base, head, base, ...); seeds differ per run.
gate_runs() {
  local k1=$1 k2=$2 name=$3 d=$4 head_dir=$5 k
  shift 5
  for k in $(seq "$k1" "$k2"); do
    run_one "$work/base" "$work/$name-b$k.vprof" --seed "$((seed_offset + d * 1000 + k))"
    run_one "$head_dir" "$work/$name-h$k.vprof" --seed "$((seed_offset + d * 1000 + 500 + k))" "$@"
  done
}

# gate_of NAME N JSON: the gate on runs 1..N a side; writes its exit status,
# the JSON's runs_needed (null unless inconclusive) and summary, tab-separated,
# to $work/verdict (a file, not a pipe: a gate error must end this script).
gate_of() {
  local name=$1 n=$2 json=$3 k rc=0 msg b=() h=()
  for k in $(seq 1 "$n"); do b+=("$work/$name-b$k.vprof") h+=("$work/$name-h$k.vprof"); done
  msg=$("$vprof" gate --baseline-runs "${b[@]}" --runs "${h[@]}" --confidence "$confidence" --json "$json" 2>&1 >/dev/null) || rc=$?
  [ $rc -eq 2 ] && { echo "gate error: $msg" >&2; exit 2; }
  python3 -c 'import json,sys; g=json.load(open(sys.argv[2]))["gate"]; print(sys.argv[1], g["runs_needed"], g["summary"], sep="\t")' "$rc" "$json" > "$work/verdict"
}

verdict_of() { case $1 in 0) echo pass ;; 1) echo regression ;; 3) echo inconclusive ;; *) echo "exit $1" ;; esac; }

# decide NAME HEAD_DIR [head bench flags...]: DECISIONS gate decisions.
decide() {
  local name=$1 head_dir=$2
  shift 2
  local fails=0 named=0 unsure=0 passed=0 followed=0 decided=0 unfollowed=0 d
  local log=$work/$name-r$runs.log
  : > "$log"
  for d in $(seq 1 "$decisions"); do
    gate_runs 1 "$runs" "$name" "$d" "$head_dir" "$@"
    local rc needed msg
    gate_of "$name" "$runs" "$work/$name-r$runs-$d.json"
    IFS=$'\t' read -r rc needed msg < "$work/verdict"
    echo "decision $d: exit $rc: $msg" | tee -a "$log"
    case $rc in 0) passed=$((passed + 1)) ;; 3) unsure=$((unsure + 1)) ;; esac
    if [ "$rc" -eq 1 ]; then
      fails=$((fails + 1))
      # First named: FUNC itself, or the planted delay's call site in FUNC
      # (minidb::inject_delay, when FUNC is broken down). A cause ends with
      # its parts, "(4 own, 77 holding up waits in ...)", and then "; ".
      local first=${msg#*increase from }
      first=${first%%; *}
      first=${first%%, *}
      first=${first%% ([-0-9]*}
      case "$first" in "minidb::$func "*|"minidb::inject_delay "*" in minidb::$func") named=$((named + 1)) ;; esac
    fi
    # The runs it says would decide: that many a side, then decide again.
    if [ "$rc" -eq 3 ] && [ "$follow" = 1 ]; then
      if [ "$needed" = None ] || [ "$needed" -lt 0 ] || [ "$needed" -gt "$follow_max" ]; then
        unfollowed=$((unfollowed + 1))
        local about=$needed
        [ "$needed" = None ] || [ "$needed" -lt 0 ] && about="more than 1000"
        echo "  not followed: about $about runs a side (FOLLOW_MAX=$follow_max)" | tee -a "$log"
      else
        gate_runs "$((runs + 1))" "$needed" "$name" "$d" "$head_dir" "$@"
        local rc2 needed2 msg2
        gate_of "$name" "$needed" "$work/$name-r$runs-$d-followed.json"
        IFS=$'\t' read -r rc2 needed2 msg2 < "$work/verdict"
        followed=$((followed + 1))
        [ "$rc2" -ne 3 ] && decided=$((decided + 1))
        echo "  with $needed runs a side: exit $rc2 ($(verdict_of "$rc2")): $msg2" | tee -a "$log"
      fi
    fi
  done
  local line="$name, $runs runs a side: $passed pass, $fails regression, $unsure inconclusive of $decisions decisions; $func named first in $named of the $fails regressions"
  [ "$follow" = 1 ] && line+="; of the $unsure inconclusive, $followed run with the suggested runs a side ($decided then decided), $unfollowed not (more than FOLLOW_MAX=$follow_max needed)"
  echo "$line" | tee -a "$work/summary.txt"
}

# calibrate: for each delay of DELAYS, CAL_RUNS runs a side gated together.
calibrate() {
  local delay n=${CAL_RUNS:-10}
  for delay in ${DELAYS:-exp:10us exp:30us exp:100us}; do
    local spec=$delay
    case $delay in *=*) ;; *) spec=$func=$delay ;; esac   # FUNC=DIST, or DIST in FUNC
    gate_runs 1 "$n" "cal" 0 "$work/base" --inject-delay "$spec"
    gate_of cal "$n" "$work/cal.json"
    python3 - "$work/cal.json" "$spec" "$n" <<'PY' | tee -a "$work/summary.txt"
import json, sys
g = json.load(open(sys.argv[1]))["gate"]
c = {x["what"]: x for x in g["checks"]}
def pc(x):
    ci = f' [{100 * x["ci"][0]:+.1f}%, {100 * x["ci"][1]:+.1f}%]' if x.get("ci") else ""
    return f'{100 * x["change"]:+.1f}%{ci}'
print(f'calibrate --inject-delay {sys.argv[2]}, {sys.argv[3]} runs a side: p99 {pc(c["p99"])}, variance {pc(c["variance"])}')
PY
  done
}

mkdir -p "$work/data"
start=$(date +%s)
[ -x "$work/base/minidb/b/minidb_bench" ] || build_minidb "$work/base"
: >> "$work/summary.txt"
if [ "$what" = false ] || [ "$what" = all ]; then decide false "$work/base"; fi
if [ "$what" = calibrate ]; then calibrate; fi
if [ -n "${DELAY:-}" ] && { [ "$what" = detect ] || [ "$what" = all ]; }; then
  case $DELAY in *=*) func=${DELAY%%=*} spec=$DELAY ;; *) spec=$func=$DELAY ;; esac  # FUNC=DIST, or DIST in FUNC
  echo "detect: planted delay --inject-delay $spec" | tee -a "$work/summary.txt"
  decide detect "$work/base" --inject-delay "$spec"
elif [ "$what" = detect ] || [ "$what" = all ]; then
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
