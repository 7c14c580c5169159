// Asks the kernel to back a large, not yet touched buffer with transparent
// huge pages. On the VMs we measure on, a minor page fault costs ~8 µs, and
// first-touch faults of the merge's arrays were most of the analysis time
// (docs/performance.md); 2 MiB pages cut the fault count ~500-fold. Advisory
// only: where THP is off or the call fails, nothing changes.
#ifndef VPROF_ANALYZER_UTIL_HUGE_PAGES_H
#define VPROF_ANALYZER_UTIL_HUGE_PAGES_H

#include <cstddef>
#include <vector>

namespace vprof::analyzer {

void advise_huge_pages(const void *begin, size_t bytes);

// Reserves capacity for n elements and advises huge pages for it. Call
// before the vector is filled: pages already touched stay small.
template <class T>
void reserve_huge(std::vector<T> &v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_HUGE_PAGES_H
