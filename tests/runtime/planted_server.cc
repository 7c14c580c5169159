// A small "server" with planted variance: two worker threads
// serve requests; each request calls three constant-work functions (ids 1-3)
// and one planted heavy-tailed one (id 4: lognormal work, sigma 1.5). With
// `load`, two untraced threads spin on the machine's cores for the whole
// run, so the kernel preempts the workers inside whatever they run.
//   planted_server REQUESTS SEED LOAD(0|1)
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include <vprof/probes.h>
#include <vprof/vprof.h>

static volatile uint64_t sink;

// A volatile store per iteration: the compiler cannot fold the loop away.
static void work(uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) sink = sink + i;
}

static void constant(uint32_t id) {
  vprof_fn_enter(id);
  work(20000);
  vprof_fn_exit(id);
}

static void planted(std::mt19937_64 &rng) {
  vprof_fn_enter(4);
  std::lognormal_distribution<double> d(std::log(20000.0), 1.5);
  work(uint64_t(std::min(d(rng), 5e6)));
  vprof_fn_exit(4);
}

static void serve(uint64_t first, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (uint64_t r = first; r < first + n; ++r) {
    vprof_interval_begin(r);
    constant(1);
    constant(2);
    constant(3);
    planted(rng);
    vprof_interval_end(r);
  }
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  uint64_t requests = std::strtoull(argv[1], nullptr, 10);
  uint64_t seed = std::strtoull(argv[2], nullptr, 10);
  int load = std::atoi(argv[3]);
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < load; ++i)
    spinners.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) work(1000);
    });
  std::thread a(serve, 1, requests / 2, seed), b(serve, 1 + requests / 2, requests / 2, seed + 1);
  a.join();
  b.join();
  stop = true;
  for (auto &t : spinners) t.join();
  return 0;
}
