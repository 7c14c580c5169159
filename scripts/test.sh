#!/usr/bin/env bash
# The test command: set up, configure, build, run the whole ctest suite.
#   scripts/test.sh            (BUILD_DIR=build by default; extra args go to ctest)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest -j "$(nproc)" --output-on-failure --timeout 600 "$@"
