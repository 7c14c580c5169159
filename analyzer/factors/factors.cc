#include "analyzer/factors/factors.h"

#include "analyzer/util/prefault.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyzer/tree/stats.h"

namespace vprof::analyzer {
namespace {

void collect(const VarNode &n, std::multiset<std::string> &active,
             std::map<std::string, Factor> &out) {
  bool counted = false;
  if (!n.factor.empty() && n.key != "root" && !active.count(n.factor)) {
    Factor &f = out[n.factor];
    f.name = n.factor;
    f.covariance = n.kind == VarNode::Kind::Cov;
    if (f.functions.empty()) f.functions = n.functions;
    f.contribution += n.contribution;
    f.instances.push_back(&n);
    f.call_sites.push_back({n.call_site, n.other_call_site, n.label, n.contribution});
    counted = true;
  }
  if (counted) active.insert(n.factor);
  for (const auto &c : n.children) collect(c, active, out);
  if (counted) active.erase(active.find(n.factor));
}

}  // namespace

std::vector<Factor> rank_factors(const VarNode &tree, const Heights &h, const FactorOptions &o) {
  std::map<std::string, Factor> by_name;
  std::multiset<std::string> active;
  collect(tree, active, by_name);
  std::vector<Factor> all;
  for (auto &[name, f] : by_name) {
    // A body has nothing below it; a covariance takes the larger height.
    const VarNode &n = *f.instances.front();
    if (f.covariance) {
      // Each side is a function (its height) or a body (nothing below: 0).
      int ha = n.a.self ? 0 : h.height(n.functions[0]);
      int hb = n.b.self ? 0 : h.height(n.functions[1]);
      f.height = std::max(ha, hb);
    } else {
      f.height = n.body ? 0 : h.height(f.functions.front());
    }
    f.specificity = std::pow(std::max(0, h.root - f.height), o.e);
    f.score = f.specificity * f.contribution;
    std::stable_sort(f.call_sites.begin(), f.call_sites.end(),
                     [](const FactorSite &a, const FactorSite &b) {
                       return std::abs(a.contribution) > std::abs(b.contribution);
                     });
    all.push_back(std::move(f));
  }
  std::stable_sort(all.begin(), all.end(), [](const Factor &a, const Factor &b) {
    return std::abs(a.score) > std::abs(b.score);
  });
  // Selected first (Algorithm 1's threshold, METHOD's "top k ... whose
  // contribution >= d"), the rest after them in score order.
  std::stable_partition(all.begin(), all.end(), [&](const Factor &f) {
    return std::abs(f.contribution) >= o.d;
  });
  int rank = 0;
  for (auto &f : all) {
    if (rank >= o.k || std::abs(f.contribution) < o.d) break;
    f.rank = ++rank;
  }
  return all;
}

void bootstrap_factors(std::vector<Factor> &factors, const Columns &c, int run,
                       const FactorOptions &o) {
  const Eigen::Index n = c.total.rows();
  if (o.bootstrap <= 0 || n < 2) return;
  // Gather every column the selected factors need, plus the root, once.
  std::vector<Part> parts{{0, false}};
  auto slot = [&](const Part &p) {
    for (size_t i = 0; i < parts.size(); ++i)
      if (parts[i].node == p.node && parts[i].self == p.self) return Eigen::Index(i);
    parts.push_back(p);
    return Eigen::Index(parts.size() - 1);
  };
  struct Term { Eigen::Index a, b; bool cov; };
  std::vector<std::vector<Term>> terms;
  std::vector<Factor *> todo;
  for (auto &f : factors) {
    if (f.rank == 0) continue;
    bool same_run = std::all_of(f.instances.begin(), f.instances.end(),
                                [&](const VarNode *v) { return v->run == run; });
    if (!same_run) continue;
    std::vector<Term> t;
    for (const VarNode *v : f.instances)
      t.push_back({slot(v->a), v->kind == VarNode::Kind::Cov ? slot(v->b) : 0,
                   v->kind == VarNode::Kind::Cov});
    terms.push_back(std::move(t));
    todo.push_back(&f);
  }
  if (todo.empty()) return;
  // A resample is a vector of counts w (how often each interval was drawn).
  // With the columns centered once on the full-sample mean, a resample's
  // covariance of columns a, b is (Σ w·ga·gb - n·ma·mb) / (n-1), ma = Σ w·ga / n:
  // dot products with precomputed column products, no row copies, and still
  // centered data, so no catastrophic cancellation.
  Eigen::MatrixXd g(n, Eigen::Index(parts.size()));
  prefault(g.data(), size_t(g.size()) * sizeof(double));
  for (size_t i = 0; i < parts.size(); ++i)
    g.col(Eigen::Index(i)) = parts[i].self ? c.self.col(parts[i].node) : c.total.col(parts[i].node);
  g.rowwise() -= g.colwise().mean();
  std::vector<std::pair<Eigen::Index, Eigen::Index>> pairs{{0, 0}};
  auto pair_slot = [&](Eigen::Index a, Eigen::Index b) {
    if (a > b) std::swap(a, b);
    for (size_t i = 0; i < pairs.size(); ++i)
      if (pairs[i] == std::make_pair(a, b)) return i;
    pairs.emplace_back(a, b);
    return pairs.size() - 1;
  };
  std::vector<std::vector<std::pair<size_t, double>>> uses(todo.size());  // (pair, factor 1|2)
  for (size_t f = 0; f < todo.size(); ++f)
    for (const Term &t : terms[f])
      uses[f].push_back({pair_slot(t.a, t.cov ? t.b : t.a), t.cov ? 2.0 : 1.0});
  Eigen::MatrixXd prod(n, Eigen::Index(pairs.size()));
  prefault(prod.data(), size_t(prod.size()) * sizeof(double));
  for (size_t i = 0; i < pairs.size(); ++i)
    prod.col(Eigen::Index(i)) = g.col(pairs[i].first).cwiseProduct(g.col(pairs[i].second));
  // splitmix64: cheap, and the stream depends only on the seed.
  uint64_t state = o.seed;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<std::vector<double>> samples(todo.size());
  Eigen::VectorXd w(n);
  for (int b = 0; b < o.bootstrap; ++b) {
    w.setZero();
    for (Eigen::Index r = 0; r < n; ++r)
      w(Eigen::Index((unsigned __int128)next() * uint64_t(n) >> 64)) += 1.0;  // Lemire's range map
    Eigen::VectorXd m = g.transpose() * w / double(n);
    Eigen::VectorXd sw = prod.transpose() * w;
    auto cov = [&](size_t i) {
      return (sw(Eigen::Index(i)) - double(n) * m(pairs[i].first) * m(pairs[i].second)) /
             double(n - 1);
    };
    double var_root = cov(0);
    if (var_root <= 0) continue;
    for (size_t f = 0; f < todo.size(); ++f) {
      double sum = 0;
      for (const auto &[i, k] : uses[f]) sum += k * cov(i);
      samples[f].push_back(sum / var_root);
    }
  }
  for (size_t f = 0; f < todo.size(); ++f) {
    auto &v = samples[f];
    if (v.size() < 2) continue;
    std::sort(v.begin(), v.end());
    double lo = percentile_sorted(v, 0.025), hi = percentile_sorted(v, 0.975);
    todo[f]->ci95 = std::make_pair(lo, hi);
    todo[f]->significant = lo > 0 || hi < 0;
  }
}

}  // namespace vprof::analyzer
