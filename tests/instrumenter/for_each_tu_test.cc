// for_each_tu (instrumenter/parse_tu.h): the instrumenter's and the call
// graph's one way to work through translation units in parallel.
#include <atomic>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "instrumenter/parse_tu.h"

namespace vprof::instr {
namespace {

TEST(ForEachTu, EveryItemOnceWithinTheWorkers) {
  const size_t n = 100;
  std::vector<std::atomic<int>> seen(n);
  std::atomic<unsigned> top_worker{0};
  std::vector<size_t> counts;
  Status s = for_each_tu(
      n, 3,
      [&](size_t i, unsigned w) {
        ++seen[i];
        unsigned t = top_worker;
        while (w > t && !top_worker.compare_exchange_weak(t, w)) {
        }
        return Status::Ok();
      },
      [&](size_t count, size_t) { counts.push_back(count); });
  ASSERT_TRUE(s) << s.message();
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << i;
  EXPECT_LT(top_worker, 3u);
  ASSERT_EQ(counts.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(counts[i], i + 1) << "done() runs under one lock, counting";
  EXPECT_EQ(tu_workers(3, 2), 2u);
  EXPECT_EQ(tu_workers(0, 0), 1u);
}

TEST(ForEachTu, TheLowestFailureIsReportedAndNothingStartsAfterIt) {
  for (unsigned jobs : {1u, 2u, 4u}) {
    std::atomic<size_t> started{0};
    Status s = for_each_tu(1000, jobs, [&](size_t i, unsigned) -> Status {
      ++started;
      if (i == 7 || i == 5) return Error{"unit " + std::to_string(i)};
      return Status::Ok();
    });
    ASSERT_FALSE(s);
    EXPECT_EQ(s.message(), "unit 5") << jobs << " jobs";
    EXPECT_LT(started, 1000u) << jobs << " jobs: the rest is not started";
  }
}

}  // namespace
}  // namespace vprof::instr
