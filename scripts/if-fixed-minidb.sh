#!/usr/bin/env bash
# "If fixed" against a fix (figures in docs/performance.md):
# minidb instrumented as the gate scripts do, one connection (no lock waits),
# with a delay planted in Database::commit and without, per seed. analyze's
# prediction for the delay's factor (its time at its mean) is set against the
# run without the delay: its variance, and its p99 plus the mean shift (fixing
# at the mean keeps the mean; removing the delay does not).
# Usage: scripts/if-fixed-minidb.sh [WORK_DIR]
#   env: VPROF (build/src/vprof), SEEDS ("1 2 3"), DELAY (exp:300us),
#        BENCH_FLAGS ("--threads 1 --flush lazy --txns 1500")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/vprof-if-fixed}
vprof=${VPROF:-$root/build/src/vprof}
delay=${DELAY:-exp:300us}
read -r -a bench_flags <<< "${BENCH_FLAGS:---threads 1 --flush lazy --txns 1500}"
source "$root/scripts/lib/minidb-gate.sh"

mkdir -p "$work/data"
[ -x "$work/base/minidb/b/minidb_bench" ] || minidb_gate_build "$root/examples/minidb" "$work/base"
for seed in ${SEEDS:-1 2 3}; do
  for side in with without; do
    extra=()
    [ $side = with ] && extra=(--inject-delay "Database::commit=$delay")
    rm -rf "$work/$side-$seed"
    "$vprof" run --trace-dir "$work/$side-$seed" -- "$work/base/minidb/b/minidb_bench" \
      --dir "$work/data" "${bench_flags[@]}" --seed "$seed" "${extra[@]}" >/dev/null 2>&1
    "$vprof" analyze "$work/$side-$seed" -k 5 -d 0.01 --json "$work/$side-$seed.json" >/dev/null
  done
  python3 - "$work/with-$seed.json" "$work/without-$seed.json" "$seed" <<'PY'
import json, sys
w, wo = (json.load(open(p)) for p in sys.argv[1:3])
f = next(f for f in w["factors"] if "inject_delay" in f["name"])
fx, lw, lo = f["if_fixed"], w["latency"], wo["latency"]
def ranged(base, change, ci):
    return base * (1 + change), [base * (1 + c) for c in ci] if ci else None
var, var_ci = ranged(lw["variance_ns2"], fx["variance_change"], fx["variance_change_ci95"])
p99, p99_ci = ranged(lw["p99_ns"], fx["p99_change"], fx["p99_change_ci95"])
measured_var = lo["variance_ns2"]
measured_p99 = lo["p99_ns"] + (lw["mean_ns"] - lo["mean_ns"])
def miss(v, ci):  # by how much v lies outside ci, as a factor of the nearer end
    if ci is None: return "no interval"
    if ci[0] <= v <= ci[1]: return "inside"
    end = ci[0] if v < ci[0] else ci[1]
    return f"outside, {v / end:.3g}x the nearer end"
print(f"seed {sys.argv[3]}: {f['name']} share {f['share']:.3f}; "
      f"Var predicted {var:.3g} [{var_ci[0]:.3g}, {var_ci[1]:.3g}] ns2, measured {measured_var:.3g} ({miss(measured_var, var_ci)}); "
      f"p99 predicted {p99 / 1e3:.0f} [{p99_ci[0] / 1e3:.0f}, {p99_ci[1] / 1e3:.0f}] us, "
      f"measured {measured_p99 / 1e3:.0f} us (p99 {lo['p99_ns'] / 1e3:.0f} + mean shift {(lw['mean_ns'] - lo['mean_ns']) / 1e3:.0f}; "
      f"{miss(measured_p99, p99_ci)})")
PY
done
