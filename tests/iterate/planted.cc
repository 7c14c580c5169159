// A target with a planted cause of variance: `injected_delay` spins for an
// exponentially distributed time when called from the victim named on the
// command line (planted VICTIM SEED). Every other part costs a fixed time.
// Busy loops, not calls, so the planted function has no callees.
#include <vprof/vprof.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

static std::mt19937 rng;
static const char *victim = "";

void busy(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

void injected_delay(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

static long draw(const char *here) {
  if (std::strcmp(here, victim) != 0) return 1000;
  std::exponential_distribution<double> d(1.0 / 600000);  // ~0.5 ms mean: above the machine's noise
  return 1000 + (long)d(rng);
}

void stage3() {
  busy(20000);
  injected_delay(draw("stage3"));
}

void stage2() {
  busy(10000);
  stage3();
  injected_delay(draw("stage2"));
}

void stage1() {
  injected_delay(draw("stage1"));
  busy(10000);
  stage2();
}

void handle() {
  stage1();
  busy(5000);
}

int main(int argc, char **argv) {
  if (argc > 1) victim = argv[1];
  rng.seed(argc > 2 ? (unsigned)std::atoi(argv[2]) : 1);
  for (uint64_t i = 1; i <= 300; ++i) {
    vprof_interval_begin(i);
    handle();
    vprof_interval_end(i);
  }
  std::puts("done");
  return 0;
}
