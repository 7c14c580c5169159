#!/usr/bin/env bash
# Kills `vprof instrument` and `vprof restore` at random moments on a real
# tree (LevelDB, PostgreSQL) and checks after each kill that `vprof restore`
# gives back the pristine sources, byte for byte (the suite's fault-injection
# test, TreeSafety.KilledAtRandomMomentsTheTreeAlwaysComesBack, on real code
# rather than its 30-file tree).
#   scripts/kill-real-tree.sh BUILD_DIR SRC_DIR ROUNDS [INSTRUMENT ARGS...]
# e.g. scripts/kill-real-tree.sh /tmp/vprof-ci-leveldb/build /tmp/vprof-ci-leveldb/src 40 \
#        --sync leveldb --function leveldb::DBImpl::Write --function leveldb::DBImpl::Get
# VPROF=path/to/vprof (default build/src/vprof). The tree must be pristine first.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
vprof=${VPROF:-$root/build/src/vprof}
build=$1 src=$2 rounds=$3
shift 3
fingerprint() { (cd "$src" && find . -path ./.vprof -prune -o -type f -print0 | sort -z | xargs -0 sha1sum); }
fingerprint > /tmp/kill-real-tree.pristine
[ -e "$src/.vprof/state.json" ] && { echo "kill-real-tree: $src is instrumented; restore it first" >&2; exit 2; }

# One uninterrupted instrument and restore: how long the window is.
t0=$(date +%s%N)
"$vprof" instrument -q -p "$build" "$@" || exit 2
t1=$(date +%s%N)
"$vprof" restore -p "$build" 2>/dev/null || exit 2
t2=$(date +%s%N)
inst_ms=$(( (t1 - t0) / 1000000 )) rest_ms=$(( (t2 - t1) / 1000000 ))
echo "kill-real-tree: instrument takes ${inst_ms} ms, restore ${rest_ms} ms; $rounds rounds"
fingerprint | cmp -s - /tmp/kill-real-tree.pristine || { echo "FAIL: the first restore is not pristine"; exit 1; }

sigs=(KILL INT TERM)
killed=0 mixed=0 journaled=0 failures=0
for i in $(seq 1 "$rounds"); do
  sig=${sigs[$((i % 3))]}
  if (( i % 4 == 0 )); then   # kill a restore of an instrumented tree
    "$vprof" instrument -q -p "$build" "$@" || exit 2
    what=restore window=$rest_ms
    "$vprof" restore -p "$build" 2>/dev/null & pid=$!
  else
    what=instrument window=$inst_ms
    "$vprof" instrument -q -p "$build" "$@" 2>/dev/null & pid=$!
  fi
  # A random moment within the command's run (ms resolution); every other
  # instrument, a moment within 0-50 ms of its first journal write (the
  # originals appear), where the files are being replaced.
  if [ "$what" = instrument ] && (( i % 2 == 0 )); then
    while [ ! -e "$src/.vprof/originals" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.001; done
    window=50
  fi
  sleep "$(awk -v w="$window" -v r="$RANDOM" 'BEGIN { printf "%.3f", (r / 32767.0) * w / 1000.0 }')"
  kill -s "$sig" "$pid" 2>/dev/null && killed=$((killed + 1))
  wait "$pid" 2>/dev/null
  # A kill mid-commit leaves a pending journal (files in a mix of states).
  if [ -e "$src/.vprof/state.json" ] && grep -q '"pending": true' "$src/.vprof/state.json"; then mixed=$((mixed + 1)); fi
  if [ -e "$src/.vprof/state.json" ]; then journaled=$((journaled + 1)); fi
  "$vprof" restore -p "$build" >/tmp/kill-real-tree.restore 2>&1
  rc=$?
  if [ $rc -ne 0 ] && ! grep -q "nothing to restore" /tmp/kill-real-tree.restore; then
    echo "FAIL round $i ($what, SIG$sig): restore exit $rc: $(cat /tmp/kill-real-tree.restore)"; failures=$((failures + 1))
  fi
  if ! fingerprint | cmp -s - /tmp/kill-real-tree.pristine || [ -e "$src/.vprof" ]; then
    echo "FAIL round $i ($what, SIG$sig): the tree is not pristine after restore"; failures=$((failures + 1))
    break
  fi
done
echo "kill-real-tree: $rounds rounds, $killed killed mid-run, $journaled left a journal ($mixed of them pending: killed while replacing files), $failures failures"
[ $failures -eq 0 ]
