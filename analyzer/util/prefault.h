// Faults memory in before it is written, in one system call per range.
//
// On the VMs we measure on, writing 64 MiB of never-touched memory took
// 172-181 ms page by page, 46-52 ms after MADV_POPULATE_WRITE, and 2-3 ms
// once mapped (`vprof_bench_faults`, docs/performance.md). MADV_HUGEPAGE on
// a 2 MiB-aligned range took 6 ms, but adding it here changed nothing
// measurable: since the merge streams, few large arrays are fresh.
// Advisory only: on kernels before 5.14 pages are faulted in one by one.
#ifndef VPROF_ANALYZER_UTIL_PREFAULT_H
#define VPROF_ANALYZER_UTIL_PREFAULT_H

#include <cstddef>
#include <vector>

namespace vprof::analyzer {

// Populates the whole pages inside [begin, begin + bytes) for writing.
void prefault(const void *begin, size_t bytes);

// Asks the C library's allocator to keep what is freed for reuse: blocks up to
// 32 MiB come from the heap instead of fresh mappings, and the heap is not
// trimmed. An analysis frees and allocates tables and matrices of a few MB
// (growing hash tables, per-node Eigen temporaries); with glibc's defaults
// each came back as new pages, faulted in one by one (5 700 faults for the
// 16x benchmark, 4 300 with this; docs/performance.md). Process-wide: call
// once, at start-up, from a program that analyzes. No-op without glibc.
void keep_freed_memory();

// Gives what is free in every arena of the C library's allocator back to the
// system (malloc_trim). For a long-lived process that drops an analysis and
// makes the next (an iterate session): with keep_freed_memory() the freed
// analysis stays resident, and the next one's peak comes on top of it.
// No-op without glibc.
void give_back_freed_memory();

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
