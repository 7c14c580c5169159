// A hash map from 64-bit keys to values for tables that only grow (the merge's
// interval ids and task pointers). std::unordered_map allocates a node per
// entry and, on these tables, its allocation, rehashing and freeing were a
// tenth of an analysis.
//
// Open addressing with linear probing over 8-byte slots (the key's low 32
// bits and an index), the keys and values in chunks that never move: growing
// copies only the slots, so memory is written (and faulted in) about once.
// No erase.
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
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot &s = probe(key);
    if (s.index != 0) return {&entry(s.index - 1).value, false};
    if (size_ % kChunk == 0) chunks_.push_back(std::make_unique<Entry[]>(kChunk));
    Entry &e = entry(size_++);
    e.key = key;
    s = {uint32_t(key), uint32_t(size_)};
    return {&e.value, true};
  }
  V *find(uint64_t key) {
    if (slots_.empty()) return nullptr;
    const Slot &s = probe(key);
    return s.index == 0 ? nullptr : &entry(s.index - 1).value;
  }
  V &operator[](uint64_t key) { return *try_emplace(key).first; }
  size_t size() const { return size_; }
  // Entries in insertion order.
  uint64_t key_at(size_t i) const { return entry(i).key; }
  const V &value_at(size_t i) const { return entry(i).value; }

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
  // The slot holding key, or the empty slot where it would go.
  Slot &probe(uint64_t key) {
    const uint32_t tag = uint32_t(key);
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Slot &s = slots_[i];
      if (s.index == 0 || (s.tag == tag && entry(s.index - 1).key == key)) return s;
    }
  }
  const Entry &entry(size_t i) const { return chunks_[i / kChunk][i % kChunk]; }

  // Keys that come in runs (interval ids counting up, tasks allocated one
  // after another) land in neighbouring slots: inserting a run touches a few
  // cache lines, where a scrambling hash missed the cache on every insert.
  // Shifted copies fold the higher bits in, so that aligned pointers and ids
  // with a per-thread prefix do not pile onto few slots.
  size_t home(uint64_t key) const {
    return size_t(key ^ (key >> 4) ^ (key >> 16) ^ (key >> 32) ^ (key >> 48)) & mask_;
  }
  void grow() {
    slots_.assign(slots_.empty() ? 1024 : 2 * slots_.size(), Slot{});
    mask_ = slots_.size() - 1;
    for (size_t k = 0; k < size_; ++k) {  // in insertion order: runs stay together
      const uint64_t key = entry(k).key;
      size_t i = home(key);
      while (slots_[i].index != 0) i = (i + 1) & mask_;
      slots_[i] = {uint32_t(key), uint32_t(k + 1)};
    }
  }

  std::vector<Slot> slots_;  // a power of two, at most half full
  std::vector<std::unique_ptr<Entry[]>> chunks_;
  size_t size_ = 0, mask_ = 0;
};

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_FLAT_MAP_H
