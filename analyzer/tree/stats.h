// Statistics in double with Eigen. Every variance and covariance centers the
// data first (two passes) instead of using sums of squares, which cancel
// catastrophically for nanosecond latencies (STYLE.md: never integer or
// one-pass sums of squares).
#ifndef VPROF_ANALYZER_TREE_STATS_H
#define VPROF_ANALYZER_TREE_STATS_H

#include <vector>

#include <Eigen/Dense>

namespace vprof::analyzer {

struct LatencyStats {
  double mean_ns = 0, variance_ns2 = 0, stddev_ns = 0;
  double p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
};

// Sample (n-1) covariance matrix of the columns of m; zero when m has < 2
// rows. Centers m in place (no copy of the data).
Eigen::MatrixXd covariance_in_place(Eigen::Ref<Eigen::MatrixXd> m);

// Sample variance of one column.
double variance(const Eigen::Ref<const Eigen::VectorXd> &v);

// Nearest-rank percentiles (for q in [0, 1], the smallest value with at least
// q of the sample at or below it) of an unsorted sample for ascending qs, by
// selection over shrinking ranges (not a sort); v's order is lost.
std::vector<double> quantiles(std::vector<double> &v, const std::vector<double> &qs);

LatencyStats latency_stats(std::vector<double> latencies_ns);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_STATS_H
