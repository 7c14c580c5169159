// The analysis's worker pool: every worker index runs once per hand-off,
// the caller sees all their writes when run() returns, and workers that fell
// asleep between hand-offs wake for the next one and for shutdown.
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/util/workers.h"

namespace vprof::testing {
namespace {

using analyzer::Workers;

TEST(Workers, EveryIndexOncePerRun) {
  for (unsigned n : {0u, 1u, 2u, 3u, 5u}) {
    Workers pool(n);
    const unsigned size = n == 0 ? 1 : n;
    ASSERT_EQ(pool.size(), size);
    std::vector<int> calls(size, 0);
    std::vector<uint64_t> sums(size, 0);
    for (int round = 0; round < 2000; ++round) {
      pool.run([&](unsigned w) {
        ++calls[w];  // one writer per slot; read only after run() returns
        for (int k = 0; k <= round % 50; ++k) sums[w] += uint64_t(k + w);
      });
      if (round == 1000) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // idle: sleep
    }
    for (unsigned w = 0; w < size; ++w) {
      EXPECT_EQ(calls[w], 2000) << "n=" << n << " w=" << w;
      uint64_t want = 0;
      for (int round = 0; round < 2000; ++round)
        for (int k = 0; k <= round % 50; ++k) want += uint64_t(k + w);
      EXPECT_EQ(sums[w], want) << "n=" << n << " w=" << w;
    }
  }
}

TEST(Workers, ShutsDownWhileAsleep) {
  Workers pool(3);
  pool.run([](unsigned) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: asleep
}

}  // namespace
}  // namespace vprof::testing
