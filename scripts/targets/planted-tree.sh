# Sourced by the target scripts whose tree gets vprof's intervals as a patch
# ($intervals) and, with PLANT=1, a planted stall ($stall), and is
# instrumented in src/ (redis.sh, memcached.sh, nginx.sh):
#   plant_unwind  stops the server (the script's stop_server), restores the
#                 tree, takes out the patches that are in: what an EXIT trap
#                 runs whatever happened, and what a script runs to start clean;
#   plant_apply   patches the intervals, and the stall when $plant is 1;
#   plant_finish  below.
# Needs the script's $vprof, $plant, stop_server, and instrumented, patched
# and planted (whether each is in the tree now), and foreground.sh's step and die.
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

# plant_fetch PACKAGE: Debian's source of PACKAGE in src/, fetched once, and
# pristine.sha1, the sums of its C sources and headers (what vprof rewrites;
# a configure rewrites other files Debian ships: memcached's doc/Makefile),
# which the script's pristine checks.
plant_sums() {
  (cd src && find . -type f \( -name '*.c' -o -name '*.h' \) -not -path './.vprof/*' -print0 |
     sort -z | xargs -0 sha1sum)
}
plant_fetch() {
  step "fetch Debian's $1 source, build it with bear (compile db in src/)"
  if [ ! -d src ]; then
    "$here/scripts/targets/deb-source.sh" "$1" src
    plant_sums > pristine.sha1  # before any build writes into the tree
  fi
  [ -s pristine.sha1 ] || plant_sums > pristine.sha1
}
