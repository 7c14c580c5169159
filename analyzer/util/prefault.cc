#include "analyzer/util/prefault.h"

#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace vprof::analyzer {

void prefault(const void *begin, size_t bytes) {
  constexpr uintptr_t kPage = 4096;
  uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  uintptr_t e = (reinterpret_cast<uintptr_t>(begin) + bytes) & ~(kPage - 1);
  if (e > b) madvise(reinterpret_cast<void *>(b), e - b, MADV_POPULATE_WRITE);
}

void keep_freed_memory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's upper limit on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

void give_back_freed_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

void PrefaultAhead::advance(const void *data, size_t used, size_t cap) {
  const char *d = static_cast<const char *>(data);
  if (d != base_) base_ = upto_ = d;  // reallocated (or first call)
  const char *want = d + std::min(cap, used + step_ / 2);
  if (upto_ >= want) return;
  const char *to = d + std::min(cap, used + step_);
  prefault(upto_, size_t(to - upto_));
  upto_ = to;
}

}  // namespace vprof::analyzer
