#!/bin/bash
# `vprof run` never loses a trace and never kills the program it records
# (each case named after the behaviour it checks). One case per call:
#   run_test.sh CASE VPROF RUN_TARGET
# Exit 0 pass, 1 fail, 77 skipped (the mechanism a case needs is not
# available here; the reason is printed).
set -u
CASE=$1 VPROF=$2 TARGET=$3
WORK=$(mktemp -d /tmp/vprof-run-test.XXXXXX)
MNT=""
BG=""  # background processes a failed case leaves running
cleanup() {
  local p
  for p in $BG; do kill -TERM "$p" 2>/dev/null; done
  [ -n "$MNT" ] && umount "$MNT" 2>/dev/null
  chattr -R -i "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

fail() { echo "FAIL ($CASE): $*" >&2; exit 1; }
skip() { echo "SKIP ($CASE): $*" >&2; exit 77; }
lines() { grep -c '' "$1"; }
# A fingerprint of a trace directory's files (names and contents); not the
# lock, which is not part of a trace (each run writes its pid in it).
fingerprint() { (cd "$1" && find . -maxdepth 1 -type f ! -name .lock | sort | xargs -r sha256sum); }

# A previous trace in $1 (with a manifest), and its fingerprint in $1.fp.
make_old_trace() {
  echo '{"old": true}' > old-manifest.json
  "$VPROF" run --trace-dir "$1" --manifest old-manifest.json -- "$TARGET" hello ran-old 2>/dev/null ||
    fail "the first run failed"
  ls "$1"/t-*.vpt >/dev/null 2>&1 || fail "the first run left no trace"
  fingerprint "$1" > "$1.fp"
}
old_trace_intact() {
  fingerprint "$1" | cmp -s - "$1.fp" || fail "the old trace in $1 changed: $(ls -a "$1")"
  [ ! -e "$1/.old" ] || fail "$1/.old was left behind"
}
# Runs vprof; expects exit 2 and one line on stderr that matches $1.
expect_usage_error() {
  local pattern=$1; shift
  "$VPROF" "$@" >out 2>err && fail "vprof $* succeeded"
  local rc=$?
  [ $rc -eq 2 ] || fail "vprof $*: exit $rc, not 2: $(cat err)"
  [ "$(lines err)" -eq 1 ] || fail "vprof $*: not one line on stderr: $(cat err)"
  grep -q -- "$pattern" err || fail "vprof $*: '$pattern' not in: $(cat err)"
}
# The counts of vprof run's summary line in err
# ("vprof: trace in DIR (F thread files): R records, D dropped[, L threads without a file (M records lost)]"): FILES RECORDS DROPPED LOST_THREADS LOST_RECORDS
summary() {
  local l
  l=$(grep 'vprof: trace in' err) || fail "no summary line: $(cat err)"
  echo "$l" | sed -E 's/.* \(([0-9]+) thread files\): ([0-9]+) records, ([0-9]+) dropped(, ([0-9]+) threads without a file \(([0-9]+) records lost\))?.*/\1 \2 \3 \5 \6/'
}

missing_manifest_is_refused_keeping_the_old_trace() {
  make_old_trace T
  expect_usage_error "no-such-manifest.json: cannot read the manifest" \
    run --trace-dir T --manifest no-such-manifest.json -- "$TARGET" hello ran-new
  [ ! -e ran-new ] || fail "the command ran"
  old_trace_intact T
  # One that is not JSON: refused before anything runs (the analysis refused
  # it only after the recording).
  echo 'not { json' > bad-manifest.json
  expect_usage_error "bad-manifest.json: not a manifest: not valid JSON" \
    run --trace-dir T --manifest bad-manifest.json -- "$TARGET" hello ran-new
  [ ! -e ran-new ] || fail "the command ran with a bad manifest"
  old_trace_intact T
  # dump's --limit is a whole number, not a negative one read as "all".
  expect_usage_error "limit" dump T --limit -1
}

command_that_cannot_start_keeps_the_old_trace() {
  make_old_trace T
  echo 'echo hi' > not-executable.sh
  chmod 644 not-executable.sh
  expect_usage_error "not-executable.sh: not executable" run --trace-dir T -- ./not-executable.sh
  old_trace_intact T
  mkdir a-directory
  expect_usage_error "a-directory: not a regular file" run --trace-dir T -- ./a-directory
  old_trace_intact T
  expect_usage_error "no-such-command-vprof: command not found" run --trace-dir T -- no-such-command-vprof
  old_trace_intact T
  # Executable, but exec fails (its interpreter does not exist): found only
  # once the old trace was moved aside, which must then be put back.
  printf '#!/no/such/interpreter\n' > bad-interpreter.sh
  chmod 755 bad-interpreter.sh
  expect_usage_error "bad-interpreter.sh: cannot execute" run --trace-dir T -- ./bad-interpreter.sh
  old_trace_intact T
}

manifest_inside_the_trace_dir_is_kept() {
  make_old_trace T
  # The trace's own manifest as the input: read before the old trace is
  # retired, so the new run keeps it.
  "$VPROF" run --trace-dir T --manifest T/manifest.json -- "$TARGET" hello ran-new 2>err ||
    fail "exit $?: $(cat err)"
  [ -e ran-new ] || fail "the command did not run"
  cmp -s T/manifest.json old-manifest.json || fail "the manifest changed: $(cat T/manifest.json)"
  [ ! -e T/.old ] || fail "T/.old was left behind"
  [ "$(ls T/t-*.vpt | wc -l)" -eq 1 ] || fail "not exactly the new run's thread file: $(ls T)"
  read -r files records dropped _ <<<"$(summary)"
  [ "$files $records $dropped" = "1 2 0" ] || fail "summary: $(cat err)"
}

old_trace_of_a_killed_vprof_is_kept() {
  # vprof killed after it moved the old trace aside and before the command
  # wrote anything: the next run treats T/.old as the latest trace.
  make_old_trace T
  mkdir T/.old
  mv T/t-*.vpt T/p-*.vpp T/p-*.maps T/manifest.json T/.old/
  printf '#!/no/such/interpreter\n' > bad-interpreter.sh
  chmod 755 bad-interpreter.sh
  expect_usage_error "bad-interpreter.sh: cannot execute" run --trace-dir T -- ./bad-interpreter.sh
  old_trace_intact T
  # And when T holds a newer trace, T/.old is the older one: deleted.
  mkdir T/.old
  echo stale > T/.old/t-1-1.vpt
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran-new 2>err || fail "exit $?: $(cat err)"
  [ ! -e T/.old ] || fail "T/.old was left behind"
  [ "$(ls T/t-*.vpt | wc -l)" -eq 1 ] || fail "not exactly the new run's thread file: $(ls T)"
}

unwritable_dir_is_refused() {
  make_old_trace T
  chattr +i T 2>/dev/null || skip "chattr +i is not available on $(df --output=fstype . | tail -1)"
  touch T/probe 2>/dev/null && skip "an immutable directory is still writable here"
  expect_usage_error "cannot write in the trace directory" run --trace-dir T -- "$TARGET" hello ran-new
  [ ! -e ran-new ] || fail "the command ran"
  old_trace_intact T
  # The runtime on its own (no vprof run): one line, recording off, the
  # program unharmed.
  VPROF_TRACE_DIR=$PWD/T "$TARGET" hello ran-direct 2>err || fail "the program failed: $(cat err)"
  [ -e ran-direct ] || fail "the program did not run"
  [ "$(lines err)" -eq 1 ] && grep -q "cannot write in trace directory.*recording is off" err ||
    fail "runtime stderr: $(cat err)"
  chattr -i T
  old_trace_intact T
  # A trace directory that cannot be created: its parent is a regular file.
  touch a-file
  expect_usage_error "a-file/trace: cannot create the trace directory" \
    run --trace-dir a-file/trace -- "$TARGET" hello ran-new
  [ ! -e ran-new ] || fail "the command ran"
}

fd_limit_with_many_threads_loses_nothing() {
  # 40 threads alive at once, then 20 files of the program's own, under a
  # limit of 32 descriptors: the runtime must hold none of them.
  (ulimit -n 32 && "$VPROF" run --trace-dir T -- "$TARGET" threads 40 1000) >out 2>err ||
    fail "exit $?: $(cat err)"
  read -r files records dropped lost_threads _ <<<"$(summary)"
  [ "$files $records $dropped ${lost_threads:-0}" = "41 82000 0 0" ] || fail "summary: $(cat err)"
}

no_fd_left_for_a_thread_is_counted() {
  # The program itself uses every descriptor while a thread records: that
  # thread's records are lost, and counted in the process file.
  (ulimit -n 64 && "$VPROF" run --trace-dir T -- "$TARGET" exhaust 5000) >out 2>err ||
    fail "exit $?: $(cat err)"
  read -r files records dropped lost_threads lost_records <<<"$(summary)"
  [ "$files $records $dropped ${lost_threads:-0} ${lost_records:-0}" = "1 10000 0 1 10000" ] ||
    fail "summary: $(cat err)"
  # The refusal's line names the errno; no second guess at the cause, and no
  # empty warning.
  grep -q "could not create thread files in .*: Too many open files" err || fail "no refusal line: $(cat err)"
  ! grep -q "records were lost\|^vprof: warning: $" err || fail "a guessed cause: $(cat err)"
}

# Records lost at a process's budget, on a disk with room: the run names the
# budget, and says nothing when nothing was lost.
budget_reached_is_named() {
  VPROF_BUFFER_MB=1 VPROF_CHUNK_KB=256 "$VPROF" run --trace-dir T -- "$TARGET" threads 4 200000 >out 2>err ||
    fail "exit $?: $(cat err)"
  read -r _ _ dropped _ <<<"$(summary)"
  [ "$dropped" -gt 0 ] || fail "nothing dropped at a 1 MiB budget: $(cat err)"
  grep -q "vprof: warning: records were lost: a process reached its budget (VPROF_BUFFER_MB, 1 MiB)" err ||
    fail "no line naming the budget: $(cat err)"
  # The budget the program read, set by its own command: vprof's environment
  # has none (the default, 1024, is not the one to name). And of the process
  # that dropped: a second one that read the default and dropped nothing (as
  # PostgreSQL's `pg_ctl stop` after a `pg_ctl start` given a budget) named
  # 1024 MiB on a real server.
  rm -rf T
  "$VPROF" run --trace-dir T -- sh -c 'env VPROF_BUFFER_MB=2 VPROF_CHUNK_KB=256 "$0" threads 4 200000 && "$0" hello ran-new' \
    "$TARGET" >out 2>err || fail "exit $?: $(cat err)"
  grep -q "vprof: warning: records were lost: a process reached its budget (VPROF_BUFFER_MB, 2 MiB)" err ||
    fail "the budget the command set is not named: $(cat err)"
  "$VPROF" run --trace-dir U -- "$TARGET" threads 2 1000 >out 2>err || fail "exit $?: $(cat err)"
  ! grep -q "records were lost" err || fail "a run that lost nothing says it did: $(cat err)"
}

# Records a signal handler's probe dropped because it interrupted a record
# (PostgreSQL's latch handler: 1-3 a 20 s pgbench run), on a disk with room
# and far below the budget: the run says so, and does not blame the budget.
reentry_is_not_the_budget() {
  "$VPROF" run --trace-dir T -- "$TARGET" reenter >out 2>err || fail "exit $?: $(cat err)"
  read -r _ _ dropped _ <<<"$(summary)"
  [ "$dropped" -gt 0 ] || fail "nothing dropped: $(cat err)"
  grep -Eq "vprof: warning: records were lost: [0-9]+ of a signal handler's probes? that ran while (its|their) thread was writing a record" err ||
    fail "the re-entry is not named: $(cat err)"
  ! grep -q "budget" err || fail "the budget is blamed: $(cat err)"
}

full_disk_counts_every_record() {
  # A 2 MiB file system and a program that records 16 MB: the program runs to
  # completion, and every record is either in the trace or counted as lost.
  mkdir mnt
  mount -t tmpfs -o size=2m tmpfs mnt 2>err || skip "cannot mount a tmpfs: $(cat err)"
  MNT=$PWD/mnt
  local chunk
  for chunk in 256 1024; do
    rm -rf mnt/T
    VPROF_CHUNK_KB=$chunk "$VPROF" run --trace-dir mnt/T -- "$TARGET" threads 4 200000 >out 2>err ||
      fail "chunk ${chunk} KiB: exit $?: $(cat err)"
    read -r files records dropped lost_threads lost_records <<<"$(summary)"
    lost_records=${lost_records:-0}
    [ $((records + dropped + lost_records)) -eq 2000000 ] ||
      fail "chunk ${chunk} KiB: records + dropped + lost != 2000000: $(cat err)"
    [ $((dropped + lost_records)) -gt 0 ] || fail "chunk ${chunk} KiB: no drop counted: $(cat err)"
    [ "$records" -gt 0 ] || fail "chunk ${chunk} KiB: nothing recorded: $(cat err)"
    # and the run says why (found on PostgreSQL: 29 M dropped, no reason given)
    grep -q "vprof: warning: records were lost: $MNT/T has [0-9.]* MiB free: its file system filled up" err ||
      fail "chunk ${chunk} KiB: no line naming the full file system: $(cat err)"
  done
  # Reading a trace back on a full file system. A trace file with a hole (a
  # range a crash or a tool punched out, here one data chunk) reads as zeros,
  # but through a mapping on a full tmpfs the read of a hole must allocate a
  # page: analyze and dump died of SIGBUS. Now the hole is damage, not a crash.
  rm -rf mnt/T
  VPROF_CHUNK_KB=64 "$VPROF" run --trace-dir mnt/T -- "$TARGET" threads 1 20000 >out 2>err ||
    fail "short run: $(cat err)"
  local f rc
  f=$(ls mnt/T/t-*.vpt | tail -1)
  fallocate -p -o $((4096 + 65536)) -l 65536 "$f" 2>err || skip "cannot punch a hole: $(cat err)"
  dd if=/dev/zero of=mnt/fill bs=4k 2>/dev/null
  "$VPROF" analyze mnt/T >out 2>err; rc=$?
  [ $rc -lt 128 ] || fail "analyze died of signal $((rc - 128)) reading a trace with a hole on a full disk"
  grep -q "intervals" out || fail "analyze printed no report (exit $rc): $(cat err)"
  "$VPROF" dump mnt/T >out 2>err; rc=$?
  [ $rc -lt 128 ] || fail "dump died of signal $((rc - 128)) reading a trace with a hole on a full disk"
  rm -f mnt/fill
  # Full before the program starts: not even the process file fits, so the
  # runtime says on stderr what it lost. (vprof run refuses to start there:
  # full_disk_keeps_old_trace.)
  rm -rf mnt/T
  dd if=/dev/zero of=mnt/fill bs=64k 2>/dev/null
  VPROF_TRACE_DIR=$PWD/mnt/T "$TARGET" threads 4 200000 >out 2>err ||
    fail "full from the start: exit $?: $(cat err)"
  grep -q "^vprof: 5 threads of process [0-9]* got no trace file in .*; 2000000 records lost$" err ||
    fail "full from the start: $(cat err)"
}

killed_vprof_not_yet_reaped_still_holds_the_dir() {
  # vprof run killed under a parent that has not waited for it (a script that
  # started it in the background and went on: here a shell that execs sleep):
  # a zombie, which kill(pid, 0) still finds. A second run said "another vprof
  # run (pid N) is recording here"; it is the killed run's command that is.
  rm -f ready
  sh -c '"$0" run --trace-dir T -- "$1" term ready >out 2>err & echo $! >vprof.pid; exec sleep 300' \
    "$VPROF" "$TARGET" &
  local holder=$!
  BG="$BG $holder"
  for _ in $(seq 300); do [ -e ready ] && break; sleep 0.1; done
  [ -e ready ] || fail "the program never started recording: $(cat err)"
  local pid cmd rc
  pid=$(cat vprof.pid)
  cmd=$(pgrep -P "$pid") || fail "no command under vprof $pid"
  BG="$BG $cmd"
  kill -KILL "$pid"
  for _ in $(seq 100); do running "$pid" || break; sleep 0.05; done
  grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null || skip "the killed vprof was reaped at once (no zombie to test)"
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran-new >out2 2>err2 && fail "a run beside a killed vprof's command succeeded"
  rc=$?
  [ $rc -eq 2 ] && [ "$(lines err2)" -eq 1 ] &&
    grep -q "^vprof: error: $PWD/T: the command of a killed vprof run (pid $pid) is still recording here (fuser $PWD/T/.lock)$" err2 ||
    fail "a run beside a killed vprof (not yet reaped) and its command: exit $rc: $(cat err2)"
  kill -TERM "$cmd" "$holder"
}

bad_option_values_are_warned_and_replaced() {
  local setting
  for setting in VPROF_CALIBRATE_US=-1 VPROF_CALIBRATE_US=1e3 VPROF_CALIBRATE_US=99999999999 \
      VPROF_CHUNK_KB=-4 VPROF_CHUNK_KB=6 VPROF_CHUNK_KB=99999999999999999999999 \
      VPROF_CHUNK_KB=1073741824 VPROF_BUFFER_MB=0 VPROF_BUFFER_MB=abc "VPROF_BUFFER_MB= 12" \
      VPROF_OWNERSHIP_SLOTS=-1 VPROF_OWNERSHIP_SLOTS=12k; do
    local name=${setting%%=*}
    rm -rf T
    # timeout: VPROF_CALIBRATE_US=-1 used to spin for ever at start-up.
    env "$setting" timeout 60 "$VPROF" run --trace-dir T -- "$TARGET" threads 2 1000 >out 2>err ||
      fail "$setting: exit $?: $(cat err)"
    [ "$(grep -c "$name" err)" -eq 1 ] && grep -q "^vprof: $name=.* is not valid .*; using [0-9]*$" err ||
      fail "$setting: not one warning line: $(cat err)"
    [ "$(lines err)" -eq 2 ] || fail "$setting: more than the warning and the summary: $(cat err)"
    read -r files records dropped _ <<<"$(summary)"
    [ "$files $records $dropped" = "3 6000 0" ] || fail "$setting: $(cat err)"
  done
  # A ring larger than the whole budget would drop every record.
  rm -rf T
  VPROF_CHUNK_KB=262144 VPROF_BUFFER_MB=1 "$VPROF" run --trace-dir T -- "$TARGET" threads 0 1000 >out 2>err ||
    fail "ring > budget: exit $?: $(cat err)"
  grep -q "^vprof: VPROF_CHUNK_KB=262144 is larger than VPROF_BUFFER_MB=1; using 1024$" err ||
    fail "ring > budget: $(cat err)"
  read -r files records dropped _ <<<"$(summary)"
  [ "$files $records $dropped" = "1 2000 0" ] || fail "ring > budget: $(cat err)"
  # A trace directory too long for a path: one line, recording off.
  VPROF_TRACE_DIR=$(printf 'd%.0s' $(seq 5000)) "$TARGET" hello ran 2>err || fail "long dir: $(cat err)"
  [ "$(lines err)" -eq 1 ] && grep -q "VPROF_TRACE_DIR is 5000 bytes long" err || fail "long dir: $(cat err)"
}

# Starts `vprof run -- run_target term`, waits until it records; sets PID.
start_term_target() {
  # Job control on: without it, bash starts background commands with SIGINT
  # ignored, and an ignored signal stays ignored (vprof keeps it so).
  set -m
  rm -f ready
  "$VPROF" run --trace-dir T -- "$TARGET" term ready >out 2>err &
  PID=$!
  BG="$BG $PID"  # vprof forwards SIGTERM to the program
  for _ in $(seq 300); do [ -e ready ] && return; sleep 0.1; done
  fail "the program never started recording: $(cat err)"
}
wait_for_vprof() {
  for _ in $(seq 300); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$PID" 2>/dev/null; then
    pkill -KILL -P "$PID"; kill -KILL "$PID"
    fail "vprof run did not end after $1 (not forwarded?)"
  fi
  wait "$PID"
}

sigterm_is_forwarded() {
  start_term_target
  kill -TERM "$PID"
  wait_for_vprof SIGTERM
  local rc=$?
  [ $rc -eq 0 ] || fail "exit $rc, not the program's 0: $(cat err)"
  grep -qx "signals=1" out || fail "the program did not get SIGTERM exactly once: $(cat out)"
  read -r files records dropped _ <<<"$(summary)"
  [ "$files" -eq 1 ] && [ "$records" -gt 0 ] || fail "summary: $(cat err)"
}

sigint_is_forwarded() {
  # SIGINT sent to vprof alone (not a terminal's Ctrl-C, which reaches the
  # whole group): forwarded; the program dies of it; vprof reports 128 + 2.
  start_term_target
  kill -INT "$PID"
  wait_for_vprof SIGINT
  local rc=$?
  [ $rc -eq 130 ] || fail "exit $rc, not 130: $(cat err)"
  read -r files records dropped _ <<<"$(summary)"
  [ "$files" -eq 1 ] && [ "$records" -gt 0 ] || fail "summary: $(cat err)"
}

# Whether process $1 still runs (not a zombie its new parent has not reaped).
running() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }

second_run_into_one_dir_is_refused() {
  # With no lock, a second run into T moved the first's
  # live files into T/.old and deleted them, and the first printed the
  # second's counts as its own. Now the second fails at once, touching nothing.
  start_term_target
  local names
  names=$(ls -a T)
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran-new >out2 2>err2 && fail "the second run succeeded: $(cat err2)"
  local rc=$?
  [ $rc -eq 2 ] || fail "second run: exit $rc, not 2: $(cat err2)"
  [ "$(lines err2)" -eq 1 ] && grep -q "^vprof: error: $PWD/T: another vprof run (pid $PID) is recording here$" err2 ||
    fail "second run: $(cat err2)"
  [ ! -e ran-new ] || fail "the second run's command ran"
  [ "$(ls -a T)" = "$names" ] || fail "the first run's files changed: $names -> $(ls -a T)"
  kill -TERM "$PID"
  wait_for_vprof SIGTERM
  rc=$?
  [ $rc -eq 0 ] || fail "first run: exit $rc: $(cat err)"
  read -r files records dropped _ <<<"$(summary)"
  [ "$files" -eq 1 ] && [ "$records" -gt 1 ] || fail "first run's summary: $(cat err)"
  # vprof killed while its command records: the command holds the lock on.
  start_term_target
  local cmd
  cmd=$(pgrep -P "$PID") || fail "no command under vprof $PID"
  BG="$BG $cmd"
  kill -KILL "$PID"
  wait "$PID" 2>/dev/null
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran-new >out2 2>err2 && fail "a run beside a killed vprof's command succeeded"
  rc=$?
  [ $rc -eq 2 ] && [ "$(lines err2)" -eq 1 ] &&
    grep -q "^vprof: error: $PWD/T: the command of a killed vprof run (pid $PID) is still recording here (fuser $PWD/T/.lock)$" err2 ||
    fail "a run beside a killed vprof's command: exit $rc: $(cat err2)"
  [ ! -e ran-new ] || fail "the command ran beside a killed vprof's command"
  kill -TERM "$cmd"
  for _ in $(seq 300); do running "$cmd" || break; sleep 0.1; done
  running "$cmd" && fail "the killed vprof's command did not end"
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran-new >out2 2>err2 || fail "the run after: exit $?: $(cat err2)"
  [ -e ran-new ] || fail "the run after did not run its command"
  # The lock is no trace file: analyze and dump read the trace beside it.
  [ -e T/.lock ] || fail "no T/.lock"
  "$VPROF" analyze T >out2 2>err2 || fail "analyze beside the lock: $(cat err2)"
  "$VPROF" dump T >out2 2>err2 || fail "dump beside the lock: $(cat err2)"
}

ulimit_f_does_not_kill() {
  # Under `ulimit -f` the runtime grew its files past the
  # limit (posix_fallocate of a ring, pwrite of a chunk) and the kernel killed
  # the program with SIGXFSZ (exit 153). It must drop and count instead. The
  # 1 MiB default ring is past a 64 KiB limit at once; 16 KiB rings fit and
  # their third chunk does not. Appends by the writer thread and (VPROF_WRITER=0)
  # by the program's own threads.
  local chunk writer rc f
  for chunk in 1024 16; do
    for writer in 1 0; do
      rm -rf D
      (ulimit -f 64 && VPROF_CHUNK_KB=$chunk VPROF_WRITER=$writer VPROF_TRACE_DIR=$PWD/D \
        "$TARGET" threads 2 20000) >out 2>err
      rc=$?
      [ $rc -eq 0 ] || fail "chunk $chunk KiB, writer $writer: exit $rc, not 0: $(cat err)"
      for f in D/*; do
        [ "$(stat -c %s "$f")" -le 65536 ] || fail "chunk $chunk KiB, writer $writer: $f is past the limit"
      done
    done
  done
  # Under vprof run: the summary counts every record, recorded or dropped.
  for writer in 1 0; do
    rm -rf T
    (ulimit -f 64 && VPROF_CHUNK_KB=16 VPROF_WRITER=$writer "$VPROF" run --trace-dir T -- "$TARGET" threads 2 20000) \
      >out 2>err || fail "vprof run, writer $writer: exit $?: $(cat err)"
    read -r files records dropped lost_threads lost_records <<<"$(summary)"
    lost_records=${lost_records:-0}
    [ "$files" -eq 3 ] && [ "$records" -gt 0 ] && [ "$dropped" -gt 0 ] ||
      fail "vprof run, writer $writer: summary: $(cat err)"
    [ $((records + dropped + lost_records)) -eq 120000 ] ||
      fail "vprof run, writer $writer: records + dropped + lost != 120000: $(cat err)"
    # The loss line names the limit, not the budget or a full disk.
    grep -q "records were lost: the file size limit (ulimit -f) is 65536 bytes here" err ||
      fail "vprof run, writer $writer: the loss is not put on the file size limit: $(grep 'lost' err)"
  done
}

full_disk_keeps_old_trace() {
  # On a full file system the writability probe passed (an
  # empty file needs no block), the previous trace was deleted, vprof exited
  # 0 and its summary said "0 records, 0 dropped" while the runtime printed
  # 12000 records lost.
  mkdir mnt
  mount -t tmpfs -o size=200k tmpfs mnt 2>err || skip "cannot mount a tmpfs: $(cat err)"
  MNT=$PWD/mnt
  local T=mnt/T rc
  VPROF_CHUNK_KB=4 make_old_trace $T
  # Full before the run: refused before anything moves.
  dd if=/dev/zero of=mnt/fill bs=4k 2>/dev/null
  expect_usage_error "$PWD/$T: cannot write in the trace directory: No space left on device" \
    run --trace-dir $T -- "$TARGET" hello ran-new
  [ ! -e ran-new ] || fail "the command ran on a full file system"
  old_trace_intact $T
  rm mnt/fill
  # Full once the command runs (it fills the file system, then starts the
  # recorded program): not even the program's process file fits. The old
  # trace stays in T/.old; the summary counts the 3 threads' 12000 records as
  # lost and names the full file system; vprof exits 2, or the command's
  # status when that failed.
  local fill="dd if=/dev/zero of=$PWD/mnt/fill bs=4k 2>/dev/null"
  for status in 0 3; do
    "$VPROF" run --trace-dir $T -- sh -c "$fill; \"\$0\" threads 2 2000; exit $status" "$TARGET" >out 2>err
    rc=$?
    rm mnt/fill
    [ $rc -eq $((status ? status : 2)) ] || fail "command status $status: vprof exit $rc: $(cat err)"
    read -r files records dropped lost_threads lost_records <<<"$(summary)"
    [ "$records $((dropped + ${lost_records:-0}))" = "0 12000" ] || fail "command status $status: summary: $(cat err)"
    grep -q "^vprof: error: $PWD/$T: nothing recorded: 12000 records lost; the previous trace is kept in $PWD/$T/.old$" err ||
      fail "command status $status: no error line: $(cat err)"
    grep -q "^vprof: warning: records were lost: $PWD/$T has [0-9.]* MiB free: its file system filled up" err ||
      fail "command status $status: no line naming the full file system: $(cat err)"
    [ "$(lines err)" -eq 3 ] || fail "command status $status: not the summary, the cause and the error line: $(cat err)"
    fingerprint $T/.old | cmp -s - $T.fp || fail "command status $status: the old trace in $T/.old changed"
  done
  # The next run that records puts it back first, then replaces it.
  VPROF_CHUNK_KB=4 "$VPROF" run --trace-dir $T -- "$TARGET" hello ran-new >out 2>err || fail "with room: exit $?: $(cat err)"
  [ ! -e $T/.old ] || fail "$T/.old left behind by a run that recorded"
  read -r files records dropped _ <<<"$(summary)"
  [ "$files $records $dropped" = "1 2 0" ] || fail "with room: summary: $(cat err)"
}

ownership_map_full_is_counted() {
  # The ownership map is 4 MiB by default; the objects a smaller one
  # has no slot for are counted, and vprof run's summary says so (analyze
  # warns too: ownership_misses). 3000 objects, 1024 slots.
  VPROF_MIN_WAIT_NS=1000 VPROF_OWNERSHIP_SLOTS=1024 "$VPROF" run --trace-dir T -- "$TARGET" objects 3000 >out 2>err ||
    fail "run: $(cat err)"
  local n
  n=$(sed -n 's/.*, \([0-9]*\) waits or signals on objects without a slot in the ownership map (their wake-ups name no waker: raise VPROF_OWNERSHIP_SLOTS).*/\1/p' err)
  [ -n "$n" ] && [ "$n" -ge $((3000 - 1024)) ] || fail "no count of the objects without a slot: $(cat err)"
  rm -rf T
  VPROF_MIN_WAIT_NS=1000 "$VPROF" run --trace-dir T -- "$TARGET" objects 3000 >out 2>err || fail "run: $(cat err)"
  grep -q "vprof: trace in" err && ! grep -q "without a slot" err || fail "the default map: $(cat err)"
}

# A server that drops root (httpd's children setuid to daemon) made no thread
# file in the root-owned trace directory, and nothing said why. A trace
# directory `vprof run` makes as root is writable by all (sticky, as /tmp):
# the child's threads record as their new user. One that exists, and refuses
# them, is named in one line: which process, which user, which directory, and
# what to do.
server_that_drops_root_still_records() {
  [ "$(id -u)" = 0 ] || skip "needs root (the program drops it)"
  id nobody >/dev/null 2>&1 || skip "no user nobody"
  # Under a directory others cannot search (mktemp -d's 0700), no mode of
  # the trace directory helps: the refusal names the directory above.
  "$VPROF" run --trace-dir T0 -- "$TARGET" dropuid nobody 10 >out 2>err
  grep -q "^vprof: warning: process .*; $PWD above it is not searchable by other users (mode 700)$" err ||
    fail "the refusal does not name the 0700 directory above: $(cat err)"
  chmod 0755 "$PWD"
  "$VPROF" run --trace-dir T -- "$TARGET" dropuid nobody 500 >out 2>err || fail "exit $?: $(cat err)"
  [ "$(stat -c %a T)" = 1777 ] || fail "the trace directory is $(stat -c %a T), not 1777"
  read -r files records dropped lost_threads lost_records <<<"$(summary)"
  [ "$files $records $dropped ${lost_threads:-0}" = "3 2002 0 0" ] || fail "summary: $(cat err)"
  [ "$(find T -name 't-*.vpt' -user nobody | wc -l)" = 2 ] || fail "the child's files are not nobody's: $(ls -l T)"
  # A directory that exists is left as it is; the refusal is said.
  mkdir -m 0755 T2
  "$VPROF" run --trace-dir T2 -- "$TARGET" dropuid nobody 500 >out 2>err
  read -r files records dropped lost_threads lost_records <<<"$(summary)"
  [ "$files $records $lost_threads $lost_records" = "1 2 2 2000" ] || fail "summary T2: $(cat err)"
  grep -Eq "^vprof: warning: process [0-9]+ \(run_target\), running as nobody \(uid [0-9]+\), could not create thread files in $PWD/T2: Permission denied; .*writable, and every directory above it searchable, by nobody" err ||
    fail "no line naming the process, the user and the directory: $(cat err)"
  "$VPROF" analyze T2 >report 2>/dev/null
  grep -q "^warning: process [0-9]* (run_target), running as nobody" report || fail "analyze does not say it: $(head -3 report)"
}

# A trace directory root shares with a server's users (1777): another local
# user (nobody here) must not steer root's writes, with the kernel's link
# protections off as in many containers. Each attack leaves its target as it
# was, and vprof says what it refused.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
shared_dir_links_are_never_followed() {
  [ "$(id -u)" = 0 ] || skip "needs root (the attacker is another user)"
  command -v setpriv >/dev/null || skip "no setpriv"
  local saved
  saved=$(cat /proc/sys/fs/protected_symlinks 2>/dev/null)
  [ "$saved" = 0 ] || { echo 0 > /proc/sys/fs/protected_symlinks 2>/dev/null && BG_RESTORE_SYMLINKS=$saved; }
  chmod 0755 "$PWD"
  echo "root's secret" > secret && chmod 0600 secret
  mkdir -m 0700 rootdir && echo keep > rootdir/manifest.json
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran >out 2>err || fail "the first run: $(cat err)"
  [ "$(stat -c %a T)" = 1777 ] || fail "T is $(stat -c %a T)"
  # .lock a link to a root-only file: refused, the file untouched.
  rm -f T/.lock
  as_nobody ln -s "$PWD/secret" T/.lock
  expect_usage_error "T/.lock: is a symbolic link" run --trace-dir T -- "$TARGET" hello ran
  [ "$(cat secret)" = "root's secret" ] || fail ".lock's target was written: $(cat secret)"
  rm -f T/.lock
  # .lock of another user's (holding "1"): refused, naming its owner, not its text.
  as_nobody sh -c 'echo 1 > T/.lock'
  expect_usage_error "T/.lock: belongs to uid 65534" run --trace-dir T -- "$TARGET" hello ran
  grep -q "pid 1" err && fail "the attacker's text is in the message: $(cat err)"
  rm -f T/.lock
  # .old a link to a root-only directory: refused, nothing moved into it.
  as_nobody ln -s "$PWD/rootdir" T/.old
  expect_usage_error "T/.old: is a symbolic link" run --trace-dir T -- "$TARGET" hello ran
  [ "$(ls rootdir)" = manifest.json ] && [ "$(cat rootdir/manifest.json)" = keep ] ||
    fail "the linked directory changed: $(ls rootdir)"
  rm -f T/.old
  # p-<pid>.maps.tmp links for the next pids: no target written.
  local next p
  next=$(cat /proc/sys/kernel/ns_last_pid)
  for p in $(seq $((next + 1)) $((next + 60))); do as_nobody ln -s "$PWD/secret" "T/p-$p.maps.tmp"; done
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran >out 2>err || fail "run with planted maps links: $(cat err)"
  [ "$(cat secret)" = "root's secret" ] || fail "a planted maps link's target was written"
  # manifest.json linked during a run: the program's registered manifest is
  # copied in beside the link, never through it.
  echo '{"functions": []}' > registered.json
  "$VPROF" run --trace-dir T -- "$TARGET" plant "$PWD/registered.json" "$PWD/T/manifest.json" "$PWD/secret" \
    >out 2>err || fail "plant: $(cat err)"
  [ "$(cat secret)" = "root's secret" ] || fail "the registered manifest was written through the link"
  [ ! -L T/manifest.json ] || [ "$(readlink T/manifest.json)" = "$PWD/secret" ] || true
  # The trace directory itself a link: refused.
  as_nobody mkdir -m 0777 /tmp/vprof-attacker-$$ 2>/dev/null || true
  ln -s /tmp/vprof-attacker-$$ L
  expect_usage_error "L: refused as a trace directory: it is a symbolic link" run --trace-dir L -- "$TARGET" hello ran
  # Made beforehand by another user (777): refused.
  expect_usage_error "refused as a trace directory: it belongs to uid 65534" \
    run --trace-dir /tmp/vprof-attacker-$$ -- "$TARGET" hello ran
  # The runtime alone (no vprof run) refuses it too, and says recording is off.
  VPROF_TRACE_DIR=/tmp/vprof-attacker-$$ "$TARGET" hello ran 2>err
  grep -q "belongs to uid 65534.*recording is off" err || fail "the runtime recorded there: $(cat err)"
  [ -z "$(ls /tmp/vprof-attacker-$$)" ] || fail "the runtime wrote in another user's directory"
  rm -rf /tmp/vprof-attacker-$$
  # A thread file another user copied in is not read.
  "$VPROF" run --trace-dir T -- "$TARGET" threads 2 100 >out 2>err || fail "threads: $(cat err)"
  local f
  f=$(ls T/t-*.vpt | head -1)
  as_nobody cp "$f" "${f%.vpt}.7.vpt"
  "$VPROF" dump T >dump 2>derr
  grep -q "another user put it here; not read" dump derr || fail "the copied thread file was read: $(head -5 derr dump)"
  # One of another recording (its process, another pid, left no process file
  # here): said at the loss level, and the data quality is not ok.
  rm -rf T2
  "$VPROF" run --trace-dir T2 -- "$TARGET" threads 1 50 >out 2>err || fail "threads into T2: $(cat err)"
  f=$(ls T2/t-*.vpt | head -1)
  as_nobody cp "$f" "T/$(basename "$f")"
  "$VPROF" analyze T >report 2>&1
  grep -q "no process file p-[0-9]*.vpp beside it" report || fail "an orphan thread file was not said: $(head -20 report)"
  grep -q "data quality: ok" report && fail "an orphan thread file left the data quality ok"
  [ -n "${BG_RESTORE_SYMLINKS:-}" ] && echo "$BG_RESTORE_SYMLINKS" > /proc/sys/fs/protected_symlinks
  return 0
}

# Started with its standard output and error closed (a supervisor's way), vprof
# run's command writes nothing into the trace directory's lock.
closed_stdout_writes_nothing_into_the_lock() {
  "$VPROF" run --trace-dir T -- sh -c 'echo into-the-lock; echo into-the-lock >&2' >&- 2>&-
  [ -f T/.lock ] || fail "no lock made"
  grep -q into-the-lock T/.lock && fail "the command's output went into T/.lock"
  # A report with nowhere to go is a failure, not exit 0 (the second hostile
  # walk); vprof run itself (above) says what it did on stderr.
  "$VPROF" run --trace-dir T -- "$TARGET" threads 1 10 >out 2>err || fail "run: $(cat err)"
  local rc=0
  "$VPROF" dump T >&- 2>err || rc=$?
  [ "$rc" = 2 ] || fail "dump with stdout closed: exit $rc"
  grep -q "stdout: closed when vprof started" err || fail "dump with stdout closed: $(cat err)"
  return 0
}

# A forked child that leaves by _exit (no atexit handler runs) is a process
# that exited, not one killed: the data quality of a clean run stays ok, in
# full and in windows.
forked_child_that_exits_is_not_killed() {
  local sample
  for sample in "" "--sample 50"; do
    rm -rf T
    # shellcheck disable=SC2086
    "$VPROF" run --trace-dir T $sample -- "$TARGET" forkexit 100 >out 2>err || fail "run $sample: $(cat err)"
    "$VPROF" analyze T >report 2>&1
    grep -q "no thread-exit record" report && fail "the child read as killed ($sample): $(grep -m1 'thread-exit' report)"
    # (run_target's ids have no manifest: unnamed_ids is the only counter expected)
    grep "^data quality:" report | grep -q "reader_warnings" && fail "data quality ($sample): $(grep '^data quality' report)"
  done
  return 0
}

# A command that starts a daemon and exits at once: vprof run says that
# processes it started still record there, instead of a summary that reads
# as the whole run ("0 thread files").
a_daemon_that_goes_on_recording_is_said() {
  "$VPROF" run --trace-dir T -- sh -c "\"$TARGET\" hello ran; (sleep 2; \"$TARGET\" hello ran2) & exit 0" >out 2>err ||
    fail "run: $(cat err)"
  grep -q "^vprof: warning: sh exited, but processes it started still record in $PWD/T (a daemon)" err ||
    fail "not said: $(cat err)"
  sleep 3
  [ -e ran2 ] || fail "the daemon did not run"
  "$VPROF" run --trace-dir T -- "$TARGET" hello ran3 >out 2>err || fail "the next run: $(cat err)"
  grep -q "still record" err && fail "said again: $(cat err)"
  return 0
}

# At a budget that runs out, each record the program asked for is either in
# the trace or counted as dropped, once: a labelled interval's begin whose
# label strings could not be written was counted once per string too (records
# + dropped read up to 87% more than were written, VPROF_BUFFER_MB=1).
labelled_intervals_past_the_budget_add_up() {
  VPROF_BUFFER_MB=1 VPROF_CHUNK_KB=64 "$VPROF" run --trace-dir T -- "$TARGET" labelled 200000 >out 2>err
  read -r files records dropped lost_threads lost_records <<<"$(summary)"
  [ "${dropped:-0}" -gt 0 ] || fail "nothing dropped: the budget was not reached: $(cat err)"
  [ $((records + dropped + ${lost_records:-0})) -eq 400000 ] ||
    fail "records + dropped + lost = $((records + dropped + ${lost_records:-0})), not 400000: $(cat err)"
}

# Names vprof writes in a shared directory, planted by another user where
# the kernel's protections are off: a hard link to
# a root file as .lock (root's run truncated it to its pid), links as the
# temporary an analysis names its places in (the target was overwritten), a
# FIFO as places.json (analyze hung), and a places.json of another user's
# (its names were read as the program's).
shared_dir_names_planted_by_another_user() {
  [ "$(id -u)" = 0 ] || skip "needs root (the attacker is another user)"
  command -v setpriv >/dev/null || skip "no setpriv"
  local saved_h saved_s
  saved_h=$(cat /proc/sys/fs/protected_hardlinks 2>/dev/null)
  saved_s=$(cat /proc/sys/fs/protected_symlinks 2>/dev/null)
  echo 0 > /proc/sys/fs/protected_hardlinks 2>/dev/null || skip "cannot turn protected_hardlinks off"
  echo 0 > /proc/sys/fs/protected_symlinks 2>/dev/null || true
  # shellcheck disable=SC2064
  trap "echo $saved_h > /proc/sys/fs/protected_hardlinks; echo $saved_s > /proc/sys/fs/protected_symlinks" EXIT
  chmod 0755 "$PWD"
  mkdir -m 1777 S
  printf "root's secret\n" > S/../secret && chmod 0600 secret
  as_nobody ln "$PWD/secret" S/.lock || skip "nobody cannot hard-link root's file here"
  expect_usage_error "S/.lock: has other hard links" run --trace-dir S -- "$TARGET" hello ran
  [ "$(cat secret)" = "root's secret" ] || fail "the hard-linked .lock's file was written: $(cat secret)"
  rm -f S/.lock
  "$VPROF" run --trace-dir S -- "$TARGET" held 20 >out 2>err || fail "held: $(cat err)"
  rm -f S/places.json
  # Links, hard and symbolic, for the next pids' temporaries.
  local next p
  next=$(cat /proc/sys/kernel/ns_last_pid)
  for p in $(seq $((next + 1)) $((next + 40))); do
    if [ $((p % 2)) = 0 ]; then as_nobody ln "$PWD/secret" "S/places.json.$p.tmp"
    else as_nobody ln -s "$PWD/secret" "S/places.json.$p.tmp"; fi
  done
  "$VPROF" analyze S >report 2>&1 || fail "analyze: $(head -3 report)"
  [ "$(cat secret)" = "root's secret" ] || fail "a planted temporary's target was written: $(cat secret)"
  # Named where its share may be ~0 (20 waits of ~1 ms each: the variance is
  # their jitter, and one preempted interval took all of it in a CI run), so
  # in the blame, which lists the blocked time whatever its share.
  grep -q "<- .* in background_release (outside instrumented code)" report ||
    fail "the holder was not named: $(grep -m3 'held\|<-' report)"
  rm -f S/places.json.*.tmp S/places.json
  # A FIFO as places.json: read as no file, said, never waited on.
  as_nobody mkfifo S/places.json
  timeout 60 "$VPROF" analyze S >report 2>&1
  local rc=$?
  [ $rc -ne 124 ] || fail "analyze hung on a FIFO named places.json"
  [ $rc -eq 0 ] || fail "analyze with a FIFO places.json: exit $rc: $(head -3 report)"
  grep -q "places.json: is not a regular file" report || fail "the FIFO was not said: $(head -20 report)"
  rm -f S/places.json
  # Another user's places.json: its names are not read.
  as_nobody sh -c 'echo "{\"places\": []}" > S/places.json'
  "$VPROF" analyze S >report 2>&1 || fail "analyze: $(head -3 report)"
  grep -q "places.json: belongs to another user" report || fail "nobody's places.json was not said: $(head -20 report)"
  grep -q "<- .* in background_release (outside instrumented code)" report ||
    fail "the holder was not named again: $(grep -m3 'held\|<-' report)"
  # A trace directory whose path goes through another user's link: refused
  # before anything is made where the link points.
  mkdir -m 0700 rootonly
  as_nobody ln -s "$PWD/rootonly" S/link
  expect_usage_error "goes through S/link, a symbolic link of uid 65534" run --trace-dir S/link/T -- "$TARGET" hello ran
  [ -z "$(ls rootonly)" ] || fail "a trace directory was made through another user's link: $(ls rootonly)"
}

# The trace directory renamed while the command runs: its summary said "0
# thread files" (exit 0); now it says where the trace went is not here.
trace_dir_moved_during_the_run_is_said() {
  mkdir T
  (sleep 0.5; mv T T-moved) &
  "$VPROF" run --trace-dir T -- sh -c "sleep 1.5; '$TARGET' hello ran" >out 2>err || fail "run: $(cat err)"
  wait
  grep -q "T was moved or replaced while the command ran" err || fail "the move was not said: $(cat err)"
  grep -q "0 thread files" err && fail "a summary of what is not there: $(cat err)"
}

"$CASE"
echo "PASS ($CASE)"
