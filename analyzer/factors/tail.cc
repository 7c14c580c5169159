#include "analyzer/factors/tail.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "analyzer/tree/stats.h"

namespace vprof::analyzer {

std::optional<double> tail_share(const Factor &f, const Columns &c, int run, double q) {
  const Eigen::Index n = c.total.rows();
  if (f.covariance || n == 0) return std::nullopt;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  for (const VarNode *v : f.instances) {
    if (v->run != run) return std::nullopt;
    x += v->a.self ? c.self.col(v->a.node) : c.total.col(v->a.node);
  }
  Eigen::VectorXd l = c.total.col(0);
  // The q-quantile by selection, not a sort (this runs per factor and q).
  std::vector<double> v(l.data(), l.data() + n);
  size_t rank = std::clamp<size_t>(size_t(std::ceil(q * double(n))), 1, size_t(n)) - 1;
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(rank), v.end());
  double pq = v[rank], mean = l.mean();  // == percentile_sorted(sorted(l), q)
  if (pq <= mean) return std::nullopt;
  double tail_x = 0, tail_l = 0;
  Eigen::Index tail_n = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (l(i) >= pq) {
      tail_x += x(i);
      tail_l += l(i);
      ++tail_n;
    }
  }
  double gap = tail_l / double(tail_n) - mean;
  return (tail_x / double(tail_n) - x.mean()) / gap;
}

}  // namespace vprof::analyzer
