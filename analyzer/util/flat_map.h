// A hash map from 64-bit keys to values for tables that only grow (the merge's
// interval ids and task pointers). std::unordered_map allocates a node per
// entry and, on these tables, its allocation, rehashing and freeing were a
// tenth of an analysis.
//
// Open addressing with linear probing over 8-byte slots (the key's low 32
// bits and an index), the keys and values in chunks that never move: growing
// copies only the slots, so memory is written (and faulted in) about once.
// No erase.
//
// Two hashes. The first keeps runs of keys (ids counting up, tasks allocated
// one after another) in neighbouring slots, which the cache and prefetcher
// like; but two runs far apart (per-thread id ranges, a pid in the high bits)
// can land on each other, and linear probing then walks the pile-up on every
// insert (two threads' ids 1.. and 100000001.., 2 x 200 000, took
// 10.3 s to analyze). The first probe longer than kLongProbe switches the
// table to the second hash, a full mix, for good: its cost no longer depends
// on the keys' values.
#ifndef VPROF_ANALYZER_UTIL_FLAT_MAP_H
#define VPROF_ANALYZER_UTIL_FLAT_MAP_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace vprof::analyzer {

template <class V>
class FlatMap {
 public:
  // The value of key, value-initialized when new (then the bool is true).
  // Values never move: the pointer stays valid.
  std::pair<V *, bool> try_emplace(uint64_t key) {
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.empty() ? 1024 : 2 * slots_.size());
    Slot *s = &probe(key);
    if (s->index != 0) return {&entry(s->index - 1).value, false};
    if (!mixed_ && long_probe_) {  // a pile-up: mix from now on
      mixed_ = true;
      rehash(slots_.size());
      s = &probe(key);
    }
    if (size_ % kChunk == 0) chunks_.push_back(std::make_unique<Entry[]>(kChunk));
    Entry &e = entry(size_++);
    e.key = key;
    *s = {uint32_t(key), uint32_t(size_)};
    return {&e.value, true};
  }
  V *find(uint64_t key) {
    if (slots_.empty()) return nullptr;
    const Slot &s = probe(key);
    return s.index == 0 ? nullptr : &entry(s.index - 1).value;
  }
  V &operator[](uint64_t key) { return *try_emplace(key).first; }
  // Starts loading key's slot: the slots of keys that are not in a run are
  // a cache miss each, hidden when the caller asks a few keys ahead.
  void prefetch(uint64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }
  size_t size() const { return size_; }
  // Entries in insertion order.
  uint64_t key_at(size_t i) const { return entry(i).key; }
  const V &value_at(size_t i) const { return entry(i).value; }
  // Slots a lookup of each key steps over before its own, on average: about
  // a few at this load whatever the keys are (tests check it, not the time).
  double mean_probe_distance() const {
    if (size_ == 0) return 0;
    double sum = 0;
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].index != 0) sum += double((i - home(entry(slots_[i].index - 1).key)) & mask_);
    return sum / double(size_);
  }

 private:
  static constexpr size_t kChunk = 4096;
  struct Entry {
    uint64_t key = 0;
    V value{};
  };
  struct Slot {
    uint32_t tag = 0;    // the key's low 32 bits
    uint32_t index = 0;  // entry index plus one; 0: empty
  };
  Entry &entry(size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  // The slot holding key, or the empty slot where it would go; notes a
  // probe longer than kLongProbe.
  Slot &probe(uint64_t key) {
    const uint32_t tag = uint32_t(key);
    const size_t h = home(key);
    for (size_t i = h;; i = (i + 1) & mask_) {
      Slot &s = slots_[i];
      if (s.index == 0 || (s.tag == tag && entry(s.index - 1).key == key)) {
        long_probe_ = long_probe_ || ((i - h) & mask_) > kLongProbe;
        return s;
      }
    }
  }
  const Entry &entry(size_t i) const { return chunks_[i / kChunk][i % kChunk]; }

  // Where a key's probe starts. Unmixed: the key itself, its higher bits
  // folded in so that aligned pointers and ids with a per-thread prefix do not
  // all share their low bits' slots; runs stay runs. Mixed: the block of 8
  // slots (one cache line) from splitmix64's finalizer of the rest, the slot
  // within it from the low 3 bits, so a run of 8 still shares a line.
  size_t home(uint64_t key) const {
    if (!mixed_) return size_t(key ^ (key >> 4) ^ (key >> 16) ^ (key >> 32) ^ (key >> 48)) & mask_;
    uint64_t z = key >> 3;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return size_t((z << 3) | (key & 7)) & mask_;
  }
  void rehash(size_t slots) {
    slots_.assign(slots, Slot{});
    mask_ = slots_.size() - 1;
    for (size_t k = 0; k < size_; ++k) {  // in insertion order: runs stay together
      const uint64_t key = entry(k).key;
      size_t i = home(key);
      while (slots_[i].index != 0) i = (i + 1) & mask_;
      slots_[i] = {uint32_t(key), uint32_t(k + 1)};
    }
    long_probe_ = false;
  }

  static constexpr size_t kLongProbe = 64;  // slots: 8 cache lines
  std::vector<Slot> slots_;  // a power of two, at most half full
  std::vector<std::unique_ptr<Entry[]>> chunks_;
  size_t size_ = 0, mask_ = 0;
  bool mixed_ = false;       // the second hash (above)
  bool long_probe_ = false;  // a probe since the last rehash was longer than kLongProbe
};

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_FLAT_MAP_H
