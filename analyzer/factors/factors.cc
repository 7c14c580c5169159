#include "analyzer/factors/factors.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
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
  Eigen::MatrixXd g(n, Eigen::Index(parts.size()));
  for (size_t i = 0; i < parts.size(); ++i)
    g.col(Eigen::Index(i)) = parts[i].self ? c.self.col(parts[i].node) : c.total.col(parts[i].node);
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<Eigen::Index> pick(0, n - 1);
  std::vector<std::vector<double>> samples(todo.size());
  Eigen::MatrixXd s(n, g.cols());
  for (int b = 0; b < o.bootstrap; ++b) {
    for (Eigen::Index r = 0; r < n; ++r) s.row(r) = g.row(pick(rng));
    Eigen::MatrixXd cov = covariance(s);
    double var_root = cov(0, 0);
    if (var_root <= 0) continue;
    for (size_t f = 0; f < todo.size(); ++f) {
      double sum = 0;
      for (const Term &t : terms[f]) sum += t.cov ? 2.0 * cov(t.a, t.b) : cov(t.a, t.a);
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
