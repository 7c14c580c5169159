#include "ownership_map.h"

#include <sys/mman.h>

namespace vprof::rt {

bool OwnershipMap::init(uint64_t slots) {
  uint64_t n = 1024;
  while (n < slots) n <<= 1;
  // MAP_NORESERVE + lazy zero pages: the slots cost address space and only
  // the touched pages of memory. The filter is the first page.
  constexpr uint64_t kFilterBytes = (uint64_t{1} << kFilterBits) * sizeof(std::atomic<uint32_t>);
  static_assert(kFilterBytes == 4096 && kFilterBytes % sizeof(Slot) == 0, "one page, then the slots");
  void *p = mmap(nullptr, kFilterBytes + n * sizeof(Slot), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  filter_ = static_cast<std::atomic<uint32_t> *>(p);
  slots_ = reinterpret_cast<Slot *>(static_cast<char *>(p) + kFilterBytes);
  mask_ = n - 1;
  return true;
}

uint64_t OwnershipMap::index(uint64_t key) const {
  // Fibonacci hashing: addresses are 8- or 64-byte aligned, so mix high bits in.
  return ((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
}

OwnershipMap::Slot *OwnershipMap::find(const void *obj, bool claim) {
  if (!slots_) return nullptr;
  uint64_t key = reinterpret_cast<uint64_t>(obj);
  uint64_t i = index(key);
  for (unsigned probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & mask_) {
    Slot &s = slots_[i];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == 0) {
      if (!claim) return nullptr;
      uint64_t expected = 0;
      if (s.key.compare_exchange_strong(expected, key, std::memory_order_acq_rel))
        k = key;
      else
        k = expected;
    }
    if (k == key) return &s;
  }
  return nullptr;
}

void OwnershipMap::write(Slot &s, uint32_t tid, uint64_t tick, uint64_t pc) {
  s.pc.store(pc, std::memory_order_relaxed);
  s.value.store((uint64_t)tid | (tick << 32), std::memory_order_release);
}

bool OwnershipMap::put(const void *obj, uint32_t tid, uint64_t tick, uint64_t pc, bool *waited) {
  Slot *s = find(obj, true);
  if (s) write(*s, tid, tick, pc);
  *waited = s && s->waiting.load(std::memory_order_acquire) != 0;
  return s != nullptr;
}

OwnershipMap::Slot *OwnershipMap::wait_begins(const void *obj) {
  if (filter_) filter_[filter_index(obj)].fetch_add(1, std::memory_order_acq_rel);
  Slot *s = find(obj, true);
  if (s) s->waiting.fetch_add(1, std::memory_order_acq_rel);
  return s;
}

OwnershipMap::Release OwnershipMap::get(const void *obj) const {
  if (!slots_) return {};
  uint64_t key = reinterpret_cast<uint64_t>(obj);
  uint64_t i = index(key);
  for (unsigned probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & mask_) {
    const Slot &s = slots_[i];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) {
      Release r;
      r.value = s.value.load(std::memory_order_acquire);
      r.pc = s.pc.load(std::memory_order_relaxed);
      return r;
    }
    if (k == 0) return {};
  }
  return {};
}

}  // namespace vprof::rt
