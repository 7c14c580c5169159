// Who released a sync object last, when, and where: object address -> (tid,
// low 32 bits of the release tick; the return address in the code that
// released). The wait-end probe reads it to name the waker, and the place,
// which says what a waker outside instrumented code was doing.
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
    std::atomic<uint64_t> pc;     // where it was released (0: not known); written before value
    uint64_t unused;
  };
  static_assert(sizeof(Slot) == 32, "a slot is half a cache line: a release writes one line");
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared across processes");

  // `slots` is rounded up to a power of two. False when the mapping failed.
  bool init(uint64_t slots);
  void put(const void *obj, uint32_t tid, uint64_t tick, uint64_t pc);
  struct Release {
    uint64_t value = 0;  // tid | release_tick_low32 << 32; 0 when unknown
    uint64_t pc = 0;     // that release's place, or a later one's (read after value)
  };
  Release get(const void *obj) const;
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
