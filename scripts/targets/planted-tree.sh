# Sourced by the target scripts whose tree gets vprof's intervals as a patch
# ($intervals) and, with PLANT=1, a planted stall ($stall), and is
# instrumented in src/ (redis.sh, memcached.sh):
#   plant_unwind  stops the server (the script's stop_server), restores the
#                 tree, takes out the patches that are in: what an EXIT trap
#                 runs whatever happened, and what a script runs to start clean;
#   plant_apply   patches the intervals, and the stall when $plant is 1;
#   plant_finish  below.
# Needs the script's $vprof, $plant, step, stop_server, and instrumented,
# patched and planted (whether each is in the tree now).
plant_unwind() {
  stop_server
  if instrumented; then "$vprof" restore -p src >/dev/null; fi
  if planted; then (cd src && patch -p1 -R -s < "$stall"); fi
  if patched; then (cd src && patch -p1 -R -s < "$intervals"); fi
}
plant_apply() {
  step "patch: one vprof interval per command$([ "$plant" = 1 ] && echo ', and the planted stall' || true)"
  (cd src && patch -p1 -s < "$intervals")
  if [ "$plant" = 1 ]; then (cd src && patch -p1 -s < "$stall"); fi
}
# plant_finish: plant_unwind, then every source checked against the
# fetch-time sums (the script's pristine; its die when one differs).
plant_finish() {
  step "restore and un-patch"
  plant_unwind
  pristine || die "restored sources differ from the pristine tree"
  echo "restored sources identical to the pristine tree"
}
