#!/usr/bin/env bash
# Runs a command beside 2 x cores busy loops (`sh -c 'while :; do :; done'`),
# as docs/method.md's "On a busy machine" checks a session's answer: the
# loops start first and are killed when the command ends, however it ends.
# Usage: scripts/beside-busy-loops.sh COMMAND [ARGS...]   env: LOOPS (2 x nproc)
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
loops=${LOOPS:-$((2 * $(nproc)))}
pids=()
stop() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null; }
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 1 "$loops"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
echo "beside-busy-loops: $loops busy loops (pids ${pids[*]})" >&2
"$@"
