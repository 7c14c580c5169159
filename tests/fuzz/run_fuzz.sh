#!/usr/bin/env bash
# Seeds the corpus with a real trace file from the runtime, then fuzzes the
# reader for 20 seconds. Any crash fails the test.
set -euo pipefail
fuzzer=$1 corpus=$2 workload=$3
mkdir -p "$corpus"
seed=$(mktemp -d)
VPROF_TRACE_DIR=$seed VPROF_CHUNK_KB=4 "$workload" roundtrip
cp "$seed"/*.vpt "$corpus"/
rm -rf "$seed"
exec "$fuzzer" -max_total_time=20 -max_len=16384 -timeout=10 "$corpus"
