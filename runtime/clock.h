// The recorder's clock: raw ticks from vprof_now() (probes.h) and their
// relation to CLOCK_MONOTONIC, measured at start-up and re-anchored later so
// the reader can refine the rate over the whole run.
#ifndef VPROF_RUNTIME_CLOCK_H
#define VPROF_RUNTIME_CLOCK_H

#include <stdint.h>

namespace vprof::rt {

struct Anchor {
  uint64_t ticks;
  uint64_t ns;  // CLOCK_MONOTONIC
};

uint64_t monotonic_ns();
uint64_t realtime_ns();
// One bracket of clock_gettime between two tick reads: cheap, for a time
// that only cuts a stretch (the switch drain's).
Anchor take_anchor();
// The narrowest of several brackets: for the pairs that convert a whole
// file's ticks (anchor0, anchor1), where one bracket stretched by a fault
// or a preemption would shift every record of the process.
Anchor take_anchor_narrow();
// Spins for `us` microseconds and returns ticks per ns.
double calibrate(uint64_t us);
uint32_t clock_source();
bool invariant_tsc();

}  // namespace vprof::rt

#endif
