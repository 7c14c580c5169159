#include "analyzer/tree/stats.h"

#include <algorithm>
#include <cmath>

namespace vprof::analyzer {

Eigen::MatrixXd covariance_in_place(Eigen::Ref<Eigen::MatrixXd> m) {
  const Eigen::Index n = m.rows();
  if (n < 2) return Eigen::MatrixXd::Zero(m.cols(), m.cols());
  const Eigen::RowVectorXd mean = m.colwise().mean();
  m.rowwise() -= mean;
  return (m.adjoint() * m) / double(n - 1);
}

double variance(const Eigen::Ref<const Eigen::VectorXd> &v) {
  if (v.size() < 2) return 0.0;
  return (v.array() - v.mean()).square().sum() / double(v.size() - 1);
}

std::vector<double> quantiles(std::vector<double> &v, const std::vector<double> &qs) {
  std::vector<double> out;
  if (v.empty()) return std::vector<double>(qs.size(), 0.0);
  auto from = v.begin();
  for (double q : qs) {
    size_t rank = std::clamp<size_t>(static_cast<size_t>(std::ceil(q * double(v.size()))), 1,
                                     v.size()) - 1;
    auto at = v.begin() + ptrdiff_t(rank);
    if (at >= from) {  // else an equal or smaller q: the same value as before
      std::nth_element(from, at, v.end());
      from = at;
    }
    out.push_back(*at);
  }
  return out;
}

LatencyStats latency_stats(std::vector<double> l) {
  LatencyStats s;
  if (l.empty()) return s;
  Eigen::Map<const Eigen::VectorXd> v(l.data(), Eigen::Index(l.size()));
  s.mean_ns = v.mean();
  s.variance_ns2 = variance(v);
  s.stddev_ns = std::sqrt(s.variance_ns2);
  auto p = quantiles(l, {0.50, 0.90, 0.99, 0.999, 1.0});
  s.p50_ns = p[0];
  s.p90_ns = p[1];
  s.p99_ns = p[2];
  s.p999_ns = p[3];
  s.max_ns = p[4];
  return s;
}

}  // namespace vprof::analyzer
