#include "analyzer/factors/tail.h"

#include <algorithm>
#include <vector>

#include "analyzer/tree/stats.h"

namespace vprof::analyzer {

namespace {

// The rows in the q-tail (L >= p_q) and E[L | tail] - E[L]; no rows when
// p_q <= E[L] (the share is undefined there).
struct Tail {
  std::vector<Eigen::Index> rows;
  double gap = 0;
};

Tail tail_of(const Eigen::VectorXd &l, double pq) {
  Tail t;
  const double mean = l.mean();
  if (pq <= mean) return t;
  double sum = 0;
  for (Eigen::Index i = 0; i < l.size(); ++i)
    if (l(i) >= pq) {
      t.rows.push_back(i);
      sum += l(i);
    }
  t.gap = sum / double(t.rows.size()) - mean;
  return t;
}

double variance_of(const Eigen::VectorXd &v) {
  if (v.size() < 2) return 0;
  return (v.array() - v.mean()).square().sum() / double(v.size() - 1);
}

std::optional<double> share(const Eigen::VectorXd &x, const Tail &t) {
  if (t.rows.empty()) return std::nullopt;
  double sum = 0;
  for (Eigen::Index i : t.rows) sum += x(i);
  return (sum / double(t.rows.size()) - x.mean()) / t.gap;
}

}  // namespace

void tail_shares(std::vector<Factor> &factors, const Columns &c, int run) {
  const Eigen::Index n = c.rows();
  if (n == 0) return;
  const Eigen::VectorXd l = c.root();
  std::vector<double> v(l.data(), l.data() + n);
  auto pq = quantiles(v, {0.99, 0.999});
  const Tail t99 = tail_of(l, pq[0]), t999 = tail_of(l, pq[1]);
  const double var = variance_of(l);
  for (Factor &f : factors) {
    if (f.rank == 0 || f.covariance || f.run != run) continue;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(n), part(n);
    for (const VarNode *i : f.run_instances) {
      c.part_into(i->a.node, i->a.self, part);
      x += part;
    }
    f.tail99 = share(x, t99);
    f.tail999 = share(x, t999);
    if (var > 0 && pq[0] > 0) {
      const Eigen::VectorXd fixed = l - x + Eigen::VectorXd::Constant(n, x.mean());
      f.fixed_var_change = variance_of(fixed) / var - 1;
      std::vector<double> fv(fixed.data(), fixed.data() + n);
      f.fixed_p99_change = quantiles(fv, {0.99})[0] / pq[0] - 1;
    } else {
      f.fixed_var_ci95.reset();  // no interval without its value
      f.fixed_p99_ci95.reset();
    }
  }
}

}  // namespace vprof::analyzer
