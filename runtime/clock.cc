#include "clock.h"

#include <stdint.h>
#include <time.h>

#include <atomic>
#include <type_traits>

#include <vprof/probes.h>

// probes.h names its types from the compiler's macros, not <stdint.h> (it is
// included ahead of a rewritten file's feature-test macros): they must be
// the types this library is built with.
static_assert(std::is_same<vprof_u64, uint64_t>::value, "vprof_u64 is uint64_t");
static_assert(std::is_same<vprof_u32, uint32_t>::value, "vprof_u32 is uint32_t");
static_assert(std::is_same<vprof_u16, uint16_t>::value, "vprof_u16 is uint16_t");
static_assert(std::is_same<vprof_u8, uint8_t>::value, "vprof_u8 is uint8_t");

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace vprof::rt {

static uint64_t read_clock(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(VPROF_CONTROLLED_CLOCK)
// The runtime's in-process tests (tests/runtime/controlled_clock_test.cc)
// build it with a clock they set: ticks are its ns, and every time the
// runtime reads (probes, anchors, pauses) is the test's, exactly.
static std::atomic<uint64_t> controlled_ns{1000000};
uint64_t monotonic_ns() { return controlled_ns.load(std::memory_order_relaxed); }
#else
uint64_t monotonic_ns() { return read_clock(CLOCK_MONOTONIC); }
#endif
uint64_t realtime_ns() { return read_clock(CLOCK_REALTIME); }

// Brackets the clock_gettime between two tick reads and takes the midpoint,
// so the pair is not skewed by the (tens of ns) cost of clock_gettime;
// `width` is the bracket's, in ticks.
static Anchor bracket(uint64_t &width) {
  uint64_t a = vprof_now();
  uint64_t ns = monotonic_ns();
  uint64_t b = vprof_now();
  width = b - a;
  return Anchor{a + (b - a) / 2, ns};
}

Anchor take_anchor() {
  uint64_t width;
  return bracket(width);
}

Anchor take_anchor_narrow() {
  // A forked child's first bracket takes copy-on-write faults between its
  // reads: its pair read 2-4 us late against its parent's, every run
  // (tests/runtime/cross_process_test.cc, 40 runs beside two CPU hogs), so
  // the child's records all did. The narrowest of 8 brackets (~0.5 us).
  uint64_t width, w;
  Anchor best = bracket(width);
  for (int i = 1; i < 8; ++i) {
    const Anchor a = bracket(w);
    if (w < width) {
      width = w;
      best = a;
    }
  }
  return best;
}

double calibrate(uint64_t us) {
  if (clock_source() == VPROF_CLOCK_MONOTONIC) return 1.0;
  if (us < 100) us = 100;
  Anchor a = take_anchor();
  Anchor b;
  do {
    b = take_anchor();
  } while (b.ns - a.ns < us * 1000);
  return (double)(b.ticks - a.ticks) / (double)(b.ns - a.ns);
}

uint32_t clock_source() {
#if defined(VPROF_CONTROLLED_CLOCK)
  return VPROF_CLOCK_MONOTONIC;
#elif defined(__x86_64__)
  return VPROF_CLOCK_TSC;
#elif defined(__aarch64__)
  return VPROF_CLOCK_CNTVCT;
#else
  return VPROF_CLOCK_MONOTONIC;
#endif
}

bool invariant_tsc() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000007, &a, &b, &c, &d)) return false;
  return (d >> 8) & 1;
#else
  return true;
#endif
}

}  // namespace vprof::rt

// vprof_now() where there is no cycle counter to read inline (probes.h).
extern "C" uint64_t vprof_rt_clock_ns(void) { return vprof::rt::monotonic_ns(); }

#if defined(VPROF_CONTROLLED_CLOCK)
extern "C" void vprof_controlled_clock_set(uint64_t ns) {
  vprof::rt::controlled_ns.store(ns, std::memory_order_relaxed);
}
#endif
