#!/usr/bin/env bash
# The main job, on the bundled engine: set up, build vprof, copy
# examples/minidb to a scratch tree, and let `vprof iterate --auto` break its
# latency variance down in the contended FCFS configuration until the culprit
# is specific enough to fix. Prints the final ranked factors and where the
# reports are. The scratch copy is instrumented and restored; examples/ is
# never touched.
#   scripts/demo.sh            (BUILD_DIR=build, DEMO_DIR=$BUILD_DIR/demo)
#   SAMPLE=PCT scripts/demo.sh: the session records in windows (vprof init
#   --sample PCT; each iteration runs the workload 100/PCT times)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
work=${DEMO_DIR:-$build/demo}
start=$(date +%s)
# The session runs under fg_run: a signal to this script (kill PID, not only a
# terminal's Ctrl-C) reaches vprof, which stops and restores the scratch tree;
# bash alone would wait for the session to end before dying of it.
. "$root/scripts/targets/foreground.sh"

"$root/scripts/setup.sh"
echo "demo: building vprof"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target vprof vprof_runtime >/dev/null
vprof=$build/src/vprof

echo "demo: building minidb in $work/minidb"
rm -rf "$work"
mkdir -p "$work"
cp -r "$root/examples/minidb" "$work/"
cd "$work/minidb"
cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DVPROF_INCLUDE_DIR="$("$vprof" config --include-dir)" \
  -DVPROF_LIB_DIR="$("$vprof" config --lib-dir)" >/dev/null
cmake --build b >/dev/null

# 8 connections on one warehouse, FCFS row locks, one fsync per commit.
"$vprof" init -p b --root minidb::run_transaction --build "cmake --build b" \
  --run "./b/minidb_bench --preset contended --lock-policy fcfs --dir $work/data" \
  --sync stdcxx ${SAMPLE:+--sample "$SAMPLE"} --force >/dev/null
echo "demo: vprof iterate --auto (each iteration: instrument, build, run, analyze, decide)"
fg_run "$vprof" iterate --auto --fresh
echo "demo: done in $(( $(date +%s) - start )) s; the session (every iteration's trace and report) is in $work/minidb/.vprof-session"
echo "demo: open $work/minidb/.vprof-session/final-report.html in a browser for the report's page"
