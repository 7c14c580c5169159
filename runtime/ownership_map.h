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
// the wait). A probe sequence longer than kMaxProbe gives up: a miss, which
// the recorder counts in the process file (ownership_misses).
//
// A slot also counts the threads timing a wait on its object (wait_begins,
// wait_ends). Recording in full, a release is written only while that count
// is not zero (put_if_waited): a lock nobody waits for costs its release a
// load, not a clock read and a write to a line other cores read.
// A release that the count missed (it began after the release looked) ends a
// wait of a few ns, which the recorder takes back as uncontended.
//
// In front of the slots, the same counts by a hash of the object in one page
// (1 << kFilterBits counters): a release reads its counter, and only when a
// wait is timed on an object of that hash does it look for the slot, which
// is most likely a cache miss in a sparse table. The page is written only by
// waits (contended acquires), so it stays in every core's cache.
//
// The table's size is the runtime's VPROF_OWNERSHIP_SLOTS. Every lookup
// lands on a random page of it: at a million slots (32 MiB) PostgreSQL's
// pgbench lost 18% of its throughput recording, at 128 Ki (4 MiB) 8%
// (docs/performance.md).
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
    std::atomic<uint64_t> waiting;  // threads timing a wait on the object now
  };
  static_assert(sizeof(Slot) == 32, "a slot is half a cache line: a release writes one line");
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared across processes");

  // `slots` is rounded up to a power of two. False when the mapping failed.
  bool init(uint64_t slots);
  // False when the map had no slot for obj (a miss). `*waited`: whether a
  // thread was timing a wait on obj.
  bool put(const void *obj, uint32_t tid, uint64_t tick, uint64_t pc, bool *waited);
  // The release only if a thread is timing a wait on obj; false when it was
  // not written (then no clock is needed: `tick` is read only when true).
  template <class Tick>
  bool put_if_waited(const void *obj, uint32_t tid, Tick &&tick, uint64_t pc) {
    if (!filter_ || filter_[filter_index(obj)].load(std::memory_order_acquire) == 0) return false;
    Slot *s = find(obj, false);
    if (!s || s->waiting.load(std::memory_order_acquire) == 0) return false;
    write(*s, tid, tick(), pc);
    return true;
  }
  // A wait on obj is being timed: its slot (claimed if new) with the count
  // up, or nullptr (map full there: a miss); its hash's count up in either
  // case. wait_ends(obj, that) takes both back down.
  Slot *wait_begins(const void *obj);
  void wait_ends(const void *obj, Slot *s) {
    if (s) s->waiting.fetch_sub(1, std::memory_order_acq_rel);
    if (filter_) filter_[filter_index(obj)].fetch_sub(1, std::memory_order_acq_rel);
  }
  struct Release {
    uint64_t value = 0;  // tid | release_tick_low32 << 32; 0 when unknown
    uint64_t pc = 0;     // that release's place, or a later one's (read after value)
  };
  Release get(const void *obj) const;

  // The filter's counter of obj's waits.
  static constexpr unsigned kFilterBits = 10;  // 1024 counters of 4 bytes: a page
  static uint64_t filter_index(const void *obj) {
    // The product's top bits (Fibonacci hashing), not the slots' middle ones.
    return (reinterpret_cast<uint64_t>(obj) * 0x9E3779B97F4A7C15ull) >> (64 - kFilterBits);
  }

 private:
  static constexpr unsigned kMaxProbe = 64;
  uint64_t index(uint64_t key) const;
  Slot *find(const void *obj, bool claim);
  static void write(Slot &s, uint32_t tid, uint64_t tick, uint64_t pc);
  std::atomic<uint32_t> *filter_ = nullptr;
  Slot *slots_ = nullptr;
  uint64_t mask_ = 0;
};

}  // namespace vprof::rt

#endif
