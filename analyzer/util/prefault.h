// Faults memory in before it is written, in one system call per range.
//
// On the VMs we measure on, a first-touch page fault costs 8-25 µs; writing
// 64 MiB of fresh memory took 163-188 ms, against 51 ms when the range was
// populated first with MADV_POPULATE_WRITE (13 ms for the call, the rest for
// the first writes), and 1.7 ms when the pages were already mapped
// (docs/performance.md). Transparent huge pages would do better but were
// never granted there (AnonHugePages stayed 0 under MADV_HUGEPAGE).
// Advisory only: on kernels before 5.14 the call fails and pages are
// faulted in one by one, as without it.
#ifndef VPROF_ANALYZER_UTIL_PREFAULT_H
#define VPROF_ANALYZER_UTIL_PREFAULT_H

#include <cstddef>
#include <vector>

namespace vprof::analyzer {

// Populates the whole pages inside [begin, begin + bytes) for writing.
void prefault(const void *begin, size_t bytes);

// Keeps the reserved capacity just ahead of a growing vector populated, a
// step at a time, so appends do not fault page by page. Call after appends.
class PrefaultAhead {
 public:
  explicit PrefaultAhead(size_t step_bytes = size_t{4} << 20) : step_(step_bytes) {}
  template <class T>
  void operator()(const std::vector<T> &v) {
    advance(v.data(), v.size() * sizeof(T), v.capacity() * sizeof(T));
  }

 private:
  void advance(const void *data, size_t used, size_t cap);
  size_t step_;
  const char *base_ = nullptr, *upto_ = nullptr;
};

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_PREFAULT_H
