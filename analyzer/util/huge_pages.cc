#include "analyzer/util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace vprof::analyzer {

void advise_huge_pages(const void *begin, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;  // nothing 2 MiB-aligned inside worth it
  uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t e = (reinterpret_cast<uintptr_t>(begin) + bytes) & ~(kHuge - 1);
  if (e > b) madvise(reinterpret_cast<void *>(b), e - b, MADV_HUGEPAGE);
#else
  (void)begin;
  (void)bytes;
#endif
}

}  // namespace vprof::analyzer
