#include "analyzer/tree/stats.h"

#include <algorithm>
#include <cmath>

namespace vprof::analyzer {

Eigen::MatrixXd covariance(const Eigen::MatrixXd &m) {
  const Eigen::Index n = m.rows();
  if (n < 2) return Eigen::MatrixXd::Zero(m.cols(), m.cols());
  Eigen::MatrixXd c = m.rowwise() - m.colwise().mean();
  return (c.adjoint() * c) / double(n - 1);
}

double variance(const Eigen::Ref<const Eigen::VectorXd> &v) {
  if (v.size() < 2) return 0.0;
  return (v.array() - v.mean()).square().sum() / double(v.size() - 1);
}

double percentile_sorted(const std::vector<double> &sorted, double q) {
  if (sorted.empty()) return 0.0;
  // Nearest rank: the smallest value with at least q of the sample at or below it.
  size_t rank = static_cast<size_t>(std::ceil(q * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LatencyStats latency_stats(std::vector<double> l) {
  LatencyStats s;
  if (l.empty()) return s;
  Eigen::Map<const Eigen::VectorXd> v(l.data(), Eigen::Index(l.size()));
  s.mean_ns = v.mean();
  s.variance_ns2 = variance(v);
  s.stddev_ns = std::sqrt(s.variance_ns2);
  std::sort(l.begin(), l.end());
  s.p50_ns = percentile_sorted(l, 0.50);
  s.p90_ns = percentile_sorted(l, 0.90);
  s.p99_ns = percentile_sorted(l, 0.99);
  s.p999_ns = percentile_sorted(l, 0.999);
  s.max_ns = l.back();
  return s;
}

}  // namespace vprof::analyzer
