// A signal that lands between a probe's look at its flag and the flag, made
// to land there every time: this file's probes call before_hold() at that
// point (probes.h, VPROF_TEST_BEFORE_HOLD), and when armed it does what a
// handler's probes can do there: record until the ring is full. The probe
// it interrupted must then find no room under its flag and take the slow
// path (a new ring); when it looked at the room before its flag, it wrote
// its record at the ring's end, into the slots kept for the drop and exit
// markers (workload.cc, mode "holdrace"; runtime_test.cc).
#include <cstdint>

static void before_hold();
#define VPROF_TEST_BEFORE_HOLD() before_hold()
#include <vprof/probes.h>
#include <vprof/vprof.h>

namespace {
bool armed = false;

// A site pair is one slot (the end turns its begin into a span; sites 7 and
// 8 in turn, as one site's calls in a row would be one run), a function's
// enter and exit two: the ring fills to its end exactly. With one slot left
// a site pair's end takes the slow path (a new ring), and the fill goes on
// in that one.
void fill_the_ring() {
  for (uint32_t k = 0; vprof_tls->pos < vprof_tls->end; ++k) {
    if (vprof_tls->end - vprof_tls->pos == 2) {
      vprof_fn_enter(20);
      vprof_fn_exit(20);
    } else {
      vprof_site_begin(VPROF_SITE_CALLS(7 + k % 2, 0));
      vprof_site_end(VPROF_SITE_CALLS(7 + k % 2, 0));
    }
  }
}

// After an interrupted probe: it wrote inside the ring or into a new one.
bool room_kept() { return vprof_tls->pos <= vprof_tls->end; }
}  // namespace

static void before_hold() {
  if (!armed) return;
  armed = false;
  fill_the_ring();
}

// `rounds` intervals, each a function around a call site, every one of its
// four probes interrupted by a full ring: the enter, a begin and an exit
// (vprof_emit) and the site's end. 0 when every record kept to its ring.
int hold_race(uint32_t rounds) {
  for (uint32_t i = 1; i <= rounds; ++i) {
    vprof_interval_begin(i);
    armed = true;
    vprof_fn_enter(3);
    if (!room_kept()) return 10;
    armed = true;
    vprof_site_begin(VPROF_SITE_CALLS(9, 0));
    if (!room_kept()) return 11;
    armed = true;
    vprof_site_end(VPROF_SITE_CALLS(9, 0));
    if (!room_kept()) return 12;
    armed = true;
    vprof_fn_exit(3);
    if (!room_kept()) return 13;
    if (armed) return 14;  // the hook did not run: the test tests nothing
    vprof_interval_end(i);
  }
  return 0;
}
