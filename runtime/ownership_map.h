// Who released a sync object last, and when: object address -> (tid, low 32
// bits of the release tick). The wait-end probe reads it to name the waker.
//
// Lives in one MAP_SHARED anonymous mapping made at start-up, so forked
// children (PostgreSQL backends) share it and see each other's releases: a
// release in one process names the waker of a wait in another. Lock-free:
// keys are claimed with a CAS and never removed (a freed-and-reused address
// keeps a plausible last releaser; the reader checks the release time against
// the wait). A probe sequence longer than kMaxProbe gives up and counts a miss.
#ifndef VPROF_RUNTIME_OWNERSHIP_MAP_H
#define VPROF_RUNTIME_OWNERSHIP_MAP_H

#include <stdint.h>

#include <atomic>

namespace vprof::rt {

class OwnershipMap {
 public:
  struct Slot {
    std::atomic<uint64_t> key;
    std::atomic<uint64_t> value;  // tid | release_tick_low32 << 32
  };
  static_assert(sizeof(Slot) == 16, "two words per slot");
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared across processes");

  // `slots` is rounded up to a power of two. False when the mapping failed.
  bool init(uint64_t slots);
  void put(const void *obj, uint32_t tid, uint64_t tick);
  // 0 when unknown.
  uint64_t get(const void *obj) const;
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  static constexpr unsigned kMaxProbe = 64;
  uint64_t index(uint64_t key) const;
  Slot *slots_ = nullptr;
  uint64_t mask_ = 0;
  mutable std::atomic<uint64_t> misses_{0};
};

}  // namespace vprof::rt

#endif
