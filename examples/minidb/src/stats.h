// Latency summaries, in double with Welford's update (no integer sums of
// squares: one long stall would overflow them).
#ifndef MINIDB_STATS_H
#define MINIDB_STATS_H

#include <cstdint>
#include <vector>

namespace minidb {

struct LatencySummary {
  uint64_t count = 0;
  double mean_ns = 0;
  double variance_ns2 = 0;  // population variance
  int64_t p50_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
};

// Percentiles are nearest-rank on the sorted samples; nothing is dropped.
LatencySummary summarize(std::vector<int64_t> samples_ns);

// Cov(part, total) / Var(total): the share of the total's variance that
// `part` accounts for (the quantity vprof's variance tree estimates).
// Returns 0 when there are fewer than two samples or Var(total) is 0.
double variance_share(const std::vector<int64_t> &part, const std::vector<int64_t> &total);

}  // namespace minidb

#endif
