// What fresh memory costs on this machine, which decides how the analyzer
// allocates (analyzer/util/prefault.h): writing 64 MiB of never-touched
// pages, the same after MADV_POPULATE_WRITE, after MADV_HUGEPAGE (and
// whether huge pages were granted: AnonHugePages), and writing them again
// once mapped. Best of 3 each.
//
// Last line: fresh_ms=<f> populated_ms=<p> huge_ms=<h> warm_ms=<w> anon_huge_kb=<k>
#include <sys/mman.h>

#include <chrono>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "analyzer/util/prefault.h"

namespace {

constexpr size_t kBytes = size_t{64} << 20;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// 2 MiB-aligned, so that huge pages can back it.
char *fresh() {
  constexpr size_t kHuge = size_t{2} << 20;
  void *p = mmap(nullptr, kBytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) std::exit(1);
  uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~uintptr_t(kHuge - 1);
  return reinterpret_cast<char *>(a);  // the slack is never unmapped: a benchmark
}

long anon_huge_kb() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string key;
  long kb = -1;
  while (f >> key)
    if (key == "AnonHugePages:" && (f >> kb)) break;
  return kb;
}

}  // namespace

int main() {
  double best_fresh = 1e30, best_pop = 1e30, best_huge = 1e30, best_warm = 1e30;
  long huge_kb = 0;
  for (int rep = 0; rep < 3; ++rep) {
    char *a = fresh();
    auto t0 = std::chrono::steady_clock::now();
    std::memset(a, 1, kBytes);  // page faults one by one
    double f = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    std::memset(a, 2, kBytes);  // mapped already
    double w = ms_since(t0);
    munmap(a, kBytes);

    char *h = fresh();
    madvise(h, kBytes, MADV_HUGEPAGE);
    t0 = std::chrono::steady_clock::now();
    std::memset(h, 1, kBytes);
    double g = ms_since(t0);
    huge_kb = anon_huge_kb();
    munmap(h, kBytes);

    char *b = fresh();
    t0 = std::chrono::steady_clock::now();
    vprof::analyzer::prefault(b, kBytes);  // one call, then the writes
    std::memset(b, 1, kBytes);
    double p = ms_since(t0);
    munmap(b, kBytes);
    std::printf("rep=%d fresh_ms=%.1f populated_ms=%.1f huge_ms=%.1f warm_ms=%.1f "
                "anon_huge_kb=%ld\n", rep, f, p, g, w, huge_kb);
    best_fresh = std::min(best_fresh, f);
    best_pop = std::min(best_pop, p);
    best_huge = std::min(best_huge, g);
    best_warm = std::min(best_warm, w);
  }
  std::printf("fresh_ms=%.1f populated_ms=%.1f huge_ms=%.1f warm_ms=%.1f anon_huge_kb=%ld\n",
              best_fresh, best_pop, best_huge, best_warm, huge_kb);
  return 0;
}
