#include "stats.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace minidb;

TEST(StatsTest, SummaryOfKnownSamples) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= 1000; ++i) v.push_back(i);
  LatencySummary s = summarize(v);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_DOUBLE_EQ(s.mean_ns, 500.5);
  EXPECT_NEAR(s.variance_ns2, (1000.0 * 1000.0 - 1.0) / 12.0, 1e-6);  // discrete uniform
  EXPECT_EQ(s.p50_ns, 500);
  EXPECT_EQ(s.p99_ns, 990);
  EXPECT_EQ(s.p999_ns, 999);
  EXPECT_EQ(s.max_ns, 1000);
}

TEST(StatsTest, VarianceIsStableForLargeOffsets) {
  // Five-second latencies that differ by nanoseconds: a naive sum of squares
  // in double loses the variance entirely.
  std::vector<int64_t> v = {5000000000, 5000000002, 5000000004};
  EXPECT_NEAR(summarize(v).variance_ns2, 8.0 / 3.0, 1e-6);
}

TEST(StatsTest, VarianceShareOfAPart) {
  std::vector<int64_t> part = {1, 5, 2, 8, 3}, rest = {10, 10, 10, 10, 10}, total;
  for (size_t i = 0; i < part.size(); ++i) total.push_back(part[i] + rest[i]);
  EXPECT_NEAR(variance_share(part, total), 1.0, 1e-12);  // the rest is constant
  EXPECT_NEAR(variance_share(rest, total), 0.0, 1e-12);
  // Two parts with equal, independent-looking spread split the variance.
  std::vector<int64_t> a = {0, 2, 0, 2}, b = {0, 0, 2, 2}, ab = {0, 2, 2, 4};
  EXPECT_NEAR(variance_share(a, ab), 0.5, 1e-12);
  EXPECT_NEAR(variance_share(b, ab), 0.5, 1e-12);
  EXPECT_EQ(variance_share({1}, {1}), 0.0);
}
