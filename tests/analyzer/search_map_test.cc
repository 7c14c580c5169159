// The merge's lookup helpers against their std counterparts: the galloping
// search gives std::upper_bound's answer from every hint, and FlatMap agrees
// with std::unordered_map on keys that come in runs, aligned pointers, keys
// whose low 32 bits collide, and across many growths.
#include <algorithm>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/util/flat_map.h"
#include "analyzer/util/gallop.h"

namespace vprof::testing {
namespace {

using analyzer::FlatMap;
using analyzer::upper_bound_from;

TEST(Gallop, MatchesUpperBoundFromEveryHint) {
  std::mt19937_64 rng(7);
  for (size_t n : {0, 1, 2, 3, 7, 64, 200}) {
    std::vector<int64_t> v(n);
    for (auto &x : v) x = int64_t(rng() % 50);  // many repeats
    std::sort(v.begin(), v.end());
    const int64_t *b = v.data(), *e = v.data() + n;
    for (size_t h = 0; h <= n; ++h)
      for (int64_t x = -1; x <= 51; ++x)
        ASSERT_EQ(upper_bound_from(b, e, b + h, x, [](int64_t y) { return y; }),
                  std::upper_bound(b, e, x))
            << "n=" << n << " hint=" << h << " v=" << x;
  }
}

void expect_same(const std::vector<uint64_t> &keys) {
  FlatMap<uint64_t> m;
  std::unordered_map<uint64_t, uint64_t> ref;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [p, inserted] = m.try_emplace(keys[i]);
    auto [it, ref_inserted] = ref.try_emplace(keys[i], 0);
    ASSERT_EQ(inserted, ref_inserted) << "key " << keys[i];
    ASSERT_EQ(*p, it->second);
    *p += i + 1;
    it->second += i + 1;
  }
  ASSERT_EQ(m.size(), ref.size());
  for (const auto &[k, v] : ref) {
    const uint64_t *p = m.find(k);
    ASSERT_NE(p, nullptr) << "key " << k;
    EXPECT_EQ(*p, v);
  }
  for (uint64_t k : {uint64_t{3}, uint64_t{1} << 63, ~uint64_t{0}})
    if (!ref.count(k)) EXPECT_EQ(m.find(k), nullptr);
  // Insertion order, as the merge reports intervals.
  std::vector<uint64_t> first;
  for (uint64_t k : keys)
    if (std::find(first.begin(), first.end(), k) == first.end()) first.push_back(k);
  ASSERT_EQ(first.size(), m.size());
  for (size_t i = 0; i < first.size(); i += 97) EXPECT_EQ(m.key_at(i), first[i]);
}

TEST(FlatMap, AgreesWithUnorderedMap) {
  std::vector<uint64_t> runs, pointers, high_bits, random;
  for (uint64_t i = 0; i < 20000; ++i) runs.push_back(1 + i % 15000);  // repeats too
  for (uint64_t i = 0; i < 20000; ++i) pointers.push_back(0x7f0000001000 + 64 * i);
  std::mt19937_64 rng(3);
  // Equal low 32 bits: the slot's tag matches, the key does not.
  for (int i = 0; i < 20000; ++i) high_bits.push_back((rng() << 32) | 0x40);
  for (int i = 0; i < 20000; ++i) random.push_back(rng() % 30000);
  expect_same(runs);
  expect_same(pointers);
  expect_same(high_bits);
  expect_same(random);
  expect_same({0});  // key 0 is a key like any other
}

TEST(FlatMap, ValuesDoNotMoveWhenItGrows) {
  FlatMap<int> m;
  int *first = m.try_emplace(42).first;
  *first = 7;
  for (uint64_t k = 0; k < 100000; ++k) m.try_emplace(k * 3 + 1000);
  EXPECT_EQ(m.find(42), first);
  EXPECT_EQ(*first, 7);
}


// The cost of a lookup must not depend on the ids' values.
// Two runs of ids far apart (per-thread ranges, a pid in the high bits,
// pointers from malloc) stepped over tens of thousands of slots a lookup
// with a hash that kept the keys' order (2 x 200 000 ids took 10-47 s to
// analyze: a mean of 61 320 slots at one size); now a few, within a cache
// line or two, whatever the ids.
TEST(FlatMap, SparseIdsCostWhatContiguousOnesDo) {
  // The worst over the table's sizes: the pile-up came and went as it grew
  // (measured when it is fullest, just before each doubling).
  auto mean_distance = [](const std::vector<uint64_t> &keys) {
    FlatMap<int> m;
    double worst = 0;
    size_t next = 512;
    for (uint64_t k : keys) {
      m.try_emplace(k);
      if (m.size() == next) worst = std::max(worst, m.mean_probe_distance()), next *= 2;
    }
    return worst;
  };
  std::vector<uint64_t> contiguous, two_ranges, pid_high, pointers, strided;
  for (uint64_t i = 1; i <= 400000; ++i) contiguous.push_back(i);
  for (uint64_t i = 1; i <= 200000; ++i) two_ranges.push_back(i), two_ranges.push_back(100000000 + i);
  for (uint64_t i = 1; i <= 200000; ++i)
    pid_high.push_back((uint64_t{4242} << 32) | i), pid_high.push_back((uint64_t{4243} << 32) | i);
  for (uint64_t i = 0; i < 400000; ++i) pointers.push_back(0x55d0c0a01000 + 96 * i + (i % 7) * 0x100000);
  for (uint64_t i = 0; i < 400000; ++i) strided.push_back(i << 20);
  for (const auto *keys : {&contiguous, &two_ranges, &pid_high, &pointers, &strided}) {
    double d = mean_distance(*keys);
    EXPECT_LT(d, 8.0) << "keys starting " << keys->front() << ", " << (*keys)[1];
  }
}

}  // namespace
}  // namespace vprof::testing
