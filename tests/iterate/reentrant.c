/* A target shaped like an embedded SQL engine (issue 13): `step` calls the
 * interpreter `interp` (not instrumented at first), which spins in
 * `injected_delay` for an exponentially distributed time (the planted cause)
 * and, in 2 of 300 intervals, runs a statement of its own: it re-enters
 * `step`. Busy loops, not calls, so the planted function has no callees. */
#include <vprof/vprof.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 88172645463325252ull;

static double uniform01(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

void busy(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

void injected_delay(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

static long draw(void) {
  /* ~0.5 ms mean: above the machine's noise. */
  return 1000 + (long)(-600000.0 * log(1.0 - uniform01()));
}

void step(int nested);

void interp(int nested, uint64_t interval) {
  busy(5000);
  injected_delay(draw());
  if (!nested && (interval == 100 || interval == 200)) step(1);
}

void step(int nested) {
  static uint64_t interval;
  if (!nested) ++interval;
  busy(3000);
  interp(nested, interval);
  busy(2000);
}

int main(int argc, char **argv) {
  if (argc > 1) rng_state += (uint64_t)atoi(argv[1]);
  for (uint64_t i = 1; i <= 300; ++i) {
    vprof_interval_begin(i);
    step(0);
    vprof_interval_end(i);
  }
  puts("done");
  return 0;
}
