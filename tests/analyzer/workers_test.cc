// The analysis's worker pool: every worker index runs once per hand-off,
// the caller sees all their writes when run() returns, and workers that fell
// asleep between hand-offs wake for the next one and for shutdown.
#include <chrono>
#include <memory>
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

// Workers asleep (past their spin) wake for the next hand-off, every index
// once, and for shutdown: a worker that missed either would hang the test
// (its timeout), and one that missed a hand-off would miscount.
TEST(Workers, WakesFromSleepForWorkAndForShutdown) {
  auto pool = std::make_unique<Workers>(3);
  std::vector<int> calls(3, 0);
  pool->run([&](unsigned w) { ++calls[w]; });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: asleep
  pool->run([&](unsigned w) { ++calls[w]; });
  EXPECT_EQ(calls, (std::vector<int>{2, 2, 2}));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  pool.reset();  // shut down while asleep: returns
  EXPECT_EQ(pool, nullptr);
}

}  // namespace
}  // namespace vprof::testing
