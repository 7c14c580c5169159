#!/usr/bin/env bash
# The demo's session built once against building each iteration's set alone
# (vprof.json's prebuild_depth 6, the default, and 0), PAIRS pairs alternated
# on one minidb tree: each session's wall time from `vprof iterate --auto
# --fresh` to its end, its iterations, its builds line and its top cause
# (docs/performance.md, "Build once").
#   scripts/build-once-demo.sh [WORK_DIR]   (default /tmp/vprof-build-once; PAIRS=3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/vprof-build-once}
pairs=${PAIRS:-3}
vprof=${VPROF:-$root/build/src/vprof}
[ -x "$vprof" ] || { echo "build-once-demo: no vprof at $vprof (build it, or set VPROF)" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"
cp -r "$root/examples/minidb" "$work/"
cd "$work/minidb"
cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DVPROF_INCLUDE_DIR="$("$vprof" config --include-dir)" -DVPROF_LIB_DIR="$("$vprof" config --lib-dir)" >/dev/null
cmake --build b >/dev/null
"$vprof" init -p b --root minidb::run_transaction --build "cmake --build b" \
  --run "./b/minidb_bench --preset contended --lock-policy fcfs --dir $work/data" --sync stdcxx --force >/dev/null
for k in $(seq 1 "$pairs"); do
  for depth in 6 0; do
    python3 - "$depth" <<'PY'
import json, sys
c = json.load(open("vprof.json")); c["prebuild_depth"] = int(sys.argv[1])
json.dump(c, open("vprof.json", "w"), indent=2)
PY
    start=$(date +%s.%N)
    "$vprof" iterate --auto --fresh > "$work/session-$k-$depth.log" 2>&1
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    its=$(grep -c "running (" "$work/session-$k-$depth.log" || true)
    printf 'pair %s prebuild_depth=%s: %.1f s, %s runs; %s; %s\n' "$k" "$depth" "$secs" "$its" \
      "$(grep -o '^Builds: [0-9]* in [^:]*' "$work/session-$k-$depth.log")" \
      "$(grep -o '^Top cause: [^,]*, [0-9.]*%' "$work/session-$k-$depth.log" || grep -o '^Top factor: [^,]*, [0-9.]*%' "$work/session-$k-$depth.log")"
  done
done
"$vprof" restore -p b >/dev/null 2>&1 || true
