#!/usr/bin/env bash
# The same open-loop workload on examples/minidb under each policy pair
# (FCFS vs VATS, eager vs lazy LRU, eager vs lazy flush): mean, variance and
# p99 of latency and the ratios original/alternative, in the shape of paper 000
# Table 3; then how many iterations `vprof iterate --auto` needed on the
# original policy of each pair. Prints figures; asserts nothing.
#   scripts/bench-policies.sh [SEEDS]     (default seeds: 1 2 3; RATE=250 TXNS=1500)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
seeds=${*:-1 2 3}
rate=${RATE:-250}
txns=${TXNS:-1500}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/scripts/setup.sh" >/dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target vprof vprof_runtime minidb_bench >/dev/null
bench=$build/examples/minidb/minidb_bench
vprof=$build/src/vprof

# name | base flags (contended, open loop) | original | alternative
pairs=(
  "lock scheduling|--preset contended|--lock-policy fcfs|--lock-policy vats"
  "LRU update|--threads 4 --frames 12 --flush lazy|--lru eager|--lru lazy"
  "log flush|--threads 4|--flush eager|--flush lazy"
)

run() {  # flags... -> mean var p99 (ns), one line
  "$bench" "$@" --rate "$rate" --txns "$txns" --dir "$work/data" --json "$work/s.json" >/dev/null
  python3 -c "import json;l=json.load(open('$work/s.json'))['latency'];print(l['mean_ns'],l['variance_ns2'],l['p99_ns'])"
}

echo "open loop at $rate tx/s, $txns transactions, seeds: $seeds"
printf '%-16s %-20s %12s %14s %12s\n' pair policy mean_ms var_ms2 p99_ms
for p in "${pairs[@]}"; do
  IFS='|' read -r name base orig alt <<<"$p"
  for seed in $seeds; do
    read -r m1 v1 q1 <<<"$(run $base $orig --seed "$seed")"
    read -r m2 v2 q2 <<<"$(run $base $alt --seed "$seed")"
    awk -v n="$name" -v s="$seed" -v o="$orig" -v a="$alt" -v m1="$m1" -v v1="$v1" -v q1="$q1" \
        -v m2="$m2" -v v2="$v2" -v q2="$q2" 'BEGIN {
      printf "%-16s %-20s %12.3f %14.3f %12.3f\n", n, o " s" s, m1/1e6, v1/1e12, q1/1e6;
      printf "%-16s %-20s %12.3f %14.3f %12.3f\n", "", a " s" s, m2/1e6, v2/1e12, q2/1e6;
      printf "%-16s %-20s %12.2fx %13.2fx %11.2fx\n", "", "ratio orig/alt", m1/m2, v1/v2, q1/q2 }'
  done
done

echo
echo "iterations vprof iterate --auto needed (original policy, seed 1):"
cp -r "$root/examples/minidb" "$work/minidb"
cd "$work/minidb"
cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release -DVPROF_INCLUDE_DIR="$("$vprof" config --include-dir)" \
  -DVPROF_LIB_DIR="$("$vprof" config --lib-dir)" >/dev/null
for p in "${pairs[@]}"; do
  IFS='|' read -r name base orig alt <<<"$p"
  "$vprof" init -p b --root minidb::run_transaction --build "cmake --build b" \
    --run "./b/minidb_bench $base $orig --rate $rate --txns $txns --seed 1 --dir $work/data" \
    --sync stdcxx --force >/dev/null
  t0=$(date +%s)
  "$vprof" iterate --auto --fresh >"$work/iter.out" 2>"$work/iter.err" || { echo "$name: iterate failed"; tail -3 "$work/iter.err"; continue; }
  its=$(grep -Eo '^[0-9]+ iterations' "$work/iter.out" | grep -Eo '[0-9]+')
  top=$(awk '/^ +1  /{print $2; exit}' "$work/iter.out")
  echo "  $name ($orig): $its iterations in $(( $(date +%s) - t0 )) s, ranked first: $top"
done
