# Sourced by the target scripts: run a long command (a `vprof iterate`
# session, a gate) so that a signal to the script stops it first, and the
# script's EXIT trap (restore, un-patch, stop the server) runs after it has
# stopped.
#
# Without it, `kill PID` of a script waited for its foreground `vprof
# iterate`: bash defers a signal until the foreground command ends, the
# session ran on to its end, and then the script died of the signal without
# its EXIT trap, leaving the tree patched (leveldb.sh profile, checked). A
# signal sent to the script alone never reached the session.
#
#   fg_run CMD ARGS...   CMD (a program or a shell function) in the
#                        background, in its own process group, waited for;
#                        its exit status is fg_run's. On SIGINT, SIGTERM or
#                        SIGHUP the script sends SIGTERM to that whole group
#                        (as a terminal's Ctrl-C reaches a foreground job:
#                        vprof stops its build or workload and restores the
#                        tree), waits for it, and exits 128 + the signal,
#                        which runs the EXIT trap.
#
# Also the scripts' two helpers: step TEXT (a heading with the seconds since
# the script began) and die TEXT (the script's name and TEXT on stderr, exit 1).
step() { printf '\n== %s (%ds)\n' "$*" "$SECONDS"; }
die() { echo "$(basename "$0"): $*" >&2; exit 1; }

fg_pid=
fg_stop() {
  trap - INT TERM HUP
  if [ -n "$fg_pid" ]; then
    kill -TERM -- "-$fg_pid" 2>/dev/null || kill -TERM "$fg_pid" 2>/dev/null || true
    wait "$fg_pid" 2>/dev/null || true
    # The job's leader may go first: runuser (postgres.sh's as_user) exits
    # on SIGTERM while the vprof under it is still restoring the tree, and
    # the EXIT trap's restore then found the tree locked and the patch was
    # left in. Wait for the whole group, 10 min at most.
    local i=0
    while kill -0 -- "-$fg_pid" 2>/dev/null && [ $i -lt 3000 ]; do sleep 0.2; i=$((i + 1)); done
  fi
  exit $((128 + $1))
}
trap 'fg_stop 2' INT
trap 'fg_stop 15' TERM
trap 'fg_stop 1' HUP
fg_run() {
  local rc=0
  set -m  # the job gets a process group of its own
  "$@" &
  fg_pid=$!
  set +m
  wait "$fg_pid" || rc=$?
  fg_pid=
  return $rc
}

# session_auto [RUNNER...]: the session (`vprof iterate --auto --fresh`,
# under RUNNER when given: postgres.sh's as_user) in the foreground as
# fg_run runs it, its wall time, then its final report. Uses the script's
# $vprof and step.
session_auto() {
  local start=$SECONDS
  step "vprof iterate --auto"
  fg_run "$@" "$vprof" iterate --auto --fresh
  echo "session: $((SECONDS - start)) s of wall time"
  step "final report"
  cat .vprof-session/final-report.txt
}
