#include "analyzer/factors/factors.h"

#include "analyzer/util/prefault.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "analyzer/factors/resample.h"
#include "analyzer/tree/stats.h"

namespace vprof::analyzer {
namespace {

// A (preempted) or (recorder) leaf: time the code did not run, because the
// kernel preempted it or the recorder paused it; and a wait's Held part of
// the same kind, its holder off its CPU ("held by …, preempted while
// holding", "(recorder) pausing the holder"), which the report's preemption
// figure counts too.
bool not_the_codes(const VarNode &n) {
  auto ends = [&](std::string_view tail) {
    return n.key.size() >= tail.size() && n.key.compare(n.key.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends("/preempted") || ends("/recorder") || held_off_cpu(n);
}

// What the (preempted) and (recorder) leaves below n carry: not the code's
// fault (docs/method.md, "The variance tree"), so a function's factor does not
// carry it.
void preempted_below(const VarNode &n, std::vector<const VarNode *> &out) {
  for (const auto &c : n.children)
    if (not_the_codes(c))
      out.push_back(&c);
    else
      preempted_below(c, out);
}


bool has_preempted(const VarNode &n) {
  if (not_the_codes(n)) return true;
  for (const auto &c : n.children)
    if (has_preempted(c)) return true;
  return false;
}

bool has_held_part(const VarNode &n) {
  return std::any_of(n.children.begin(), n.children.end(), [](const VarNode &c) { return is_held_part(c); });
}

void collect(const VarNode &n, bool paper, bool preempted, bool held_parts,
             std::multiset<std::string> &active, std::map<std::string, Factor> &out,
             const std::optional<CallSiteInfo> &parent_site) {
  bool counted = false;
  bool candidate = paper || n.kind != VarNode::Kind::Cov;
  // Held parts stand in for their wait, or are only its breakdown.
  if (held_parts ? has_held_part(n) : is_held_part(n)) candidate = false;
  if (candidate && !n.factor.empty() && n.key != "root" && !active.count(n.factor)) {
    Factor &f = out[n.factor];
    f.name = n.factor;
    f.covariance = n.kind == VarNode::Kind::Cov;
    if (f.functions.empty()) f.functions = n.functions;
    f.contribution += n.contribution;
    double share = n.share.value_or(0.0) - (preempted ? preempted_share(n) : 0.0);
    f.share += share;
    f.instances.push_back(&n);
    f.call_sites.push_back({n.call_site, n.other_call_site, n.label, parent_site, n.contribution,
                            share});
    counted = true;
  }
  // The root function is no factor (it is all of Var(root)), but what
  // recursion nests below it is inside it all the same (docs/method.md,
  // "Factors").
  bool root_fn = n.key == "root" && !n.factor.empty();
  if (counted || root_fn) active.insert(n.factor);
  for (const auto &c : n.children)
    collect(c, paper, preempted, held_parts, active, out, n.call_site ? n.call_site : parent_site);
  if (counted || root_fn) active.erase(active.find(n.factor));
}

// One instance inside the other: a key is its node's path from the root.
bool nested(const VarNode &a, const VarNode &b) {
  return a.key.size() <= b.key.size() ? key_within(b.key, a.key) : key_within(a.key, b.key);
}

// Ranks 1..k go to the first factors of [begin, end) (in ranking order) whose
// value reaches d. With shares, a factor nested with one already selected (an
// instance of one inside an instance of the other: wait_until inside
// wait_for_grant inside lock_row) is skipped: its share is already on the
// list, and the selected shares stay disjoint parts of Var(L), so they add up
// to at most the whole (docs/method.md). The paper's terms keep Algorithm 1.
template <class It>
void select_first_k(It begin, It end, const FactorOptions &o, bool mark_candidates) {
  std::vector<const Factor *> chosen;
  for (It it = begin; it != end && int(chosen.size()) < o.k; ++it) {
    Factor &f = *it;
    if (std::abs(ranked_value(f, o.paper)) < o.d) break;
    f.nested_with.clear();
    if (!o.paper)
      for (const Factor *c : chosen)
        for (const VarNode *a : f.instances)
          for (const VarNode *b : c->instances)
            if (f.nested_with.empty() && nested(*a, *b)) f.nested_with = c->name;
    if (!f.nested_with.empty()) continue;
    chosen.push_back(&f);
    f.rank = int(chosen.size());
    if (mark_candidates) f.candidate = true;
  }
}

}  // namespace

double preempted_share(const VarNode &n) {
  std::vector<const VarNode *> p;
  preempted_below(n, p);
  double s = 0;
  for (const VarNode *v : p) s += v->share.value_or(0.0);
  return s;
}

double selection_threshold(const VarNode &tree, double d) {
  const double machine = std::clamp(preempted_share(tree), 0.0, 1.0);
  return d * (1.0 - machine);
}

std::vector<Factor> rank_factors(const VarNode &tree, const Heights &h, const FactorOptions &o) {
  std::map<std::string, Factor> by_name;
  std::multiset<std::string> active;
  collect(tree, o.paper, has_preempted(tree), o.held_parts, active, by_name, std::nullopt);
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
    f.score = f.specificity * ranked_value(f, o.paper);
    std::stable_sort(f.call_sites.begin(), f.call_sites.end(), [&](const FactorSite &a, const FactorSite &b) {
      return std::abs(ranked_value(a, o.paper)) > std::abs(ranked_value(b, o.paper));
    });
    all.push_back(std::move(f));
  }
  std::stable_sort(all.begin(), all.end(), [](const Factor &a, const Factor &b) {
    return std::abs(a.score) > std::abs(b.score);
  });
  // Selected first (the top k by score whose |value| >= d: docs/method.md,
  // "Factors"), the rest after them in score order.
  std::stable_partition(all.begin(), all.end(), [&](const Factor &f) {
    return std::abs(ranked_value(f, o.paper)) >= o.d;
  });
  select_first_k(all.begin(), all.end(), o, /*mark_candidates=*/true);
  return all;
}

bool widen_candidates(std::vector<Factor> &factors, const FactorOptions &o) {
  // Halving a selected fragile factor's score lets in only factors whose
  // score exceeds that half; the stable selected ones all score more than
  // any factor below them. None fragile: the selection stands.
  double lowest = -1;  // the smallest fragile selected |score|
  int count = 0;
  for (const Factor &f : factors) {
    count += f.candidate;
    if (f.rank > 0 && f.fragile && (lowest < 0 || std::abs(f.score) < lowest))
      lowest = std::abs(f.score);
  }
  if (lowest < 0) return false;
  bool added = false;
  // Factors are in rank_factors' order: selected, then eligible by |score|.
  for (Factor &f : factors) {
    if (count >= 2 * o.k) break;
    if (f.candidate) continue;
    if (std::abs(ranked_value(f, o.paper)) < o.d || std::abs(f.score) <= 0.5 * lowest) break;
    f.candidate = added = true;
    ++count;
  }
  return added;
}

namespace {

// A part's value in its run as the bootstrap measures it (bootstrap_factors):
// a share less its (preempted) and (recorder) leaves, which are the machine's.
// Gross, run_value lay outside its own ci95 wherever the run was preempted
// (the demo's wait_until: 92.8% against [77.6, 82.9]).
double run_value_of(const VarNode &v, bool paper) {
  if (paper) return v.contribution;
  return v.share.value_or(0.0) - (v.kind == VarNode::Kind::Cov ? 0.0 : preempted_share(v));
}

// Each run's own tree by node key (with each node's parent), made when a
// run is first asked for: where a factor is found again in another run.
class RunIndex {
 public:
  struct Placed {
    const VarNode *node = nullptr, *parent = nullptr;
  };
  using Map = std::unordered_map<std::string, Placed>;
  explicit RunIndex(const std::vector<const VarNode *> &run_trees) : trees_(run_trees), maps_(run_trees.size()) {}
  const Map &operator[](size_t r) {
    if (!maps_[r]) {
      Map &m = maps_[r].emplace();
      std::vector<Placed> stack;
      if (trees_[r]) stack.push_back({trees_[r], nullptr});
      while (!stack.empty()) {
        Placed p = stack.back();
        stack.pop_back();
        m.emplace(p.node->key, p);
        for (const VarNode &c : p.node->children) stack.push_back({&c, p.node});
      }
    }
    return *maps_[r];
  }

 private:
  const std::vector<const VarNode *> &trees_;
  std::vector<std::optional<Map>> maps_;
};

}  // namespace

void place_in_runs(std::vector<Factor> &factors, const std::vector<const VarNode *> &run_trees,
                   bool paper) {
  RunIndex index(run_trees);
  for (Factor &f : factors) {
    if (!f.candidate || f.run >= 0 || f.instances.empty()) continue;
    int r = 0;
    for (const VarNode *v : f.instances) r = std::max(r, v->run);
    if (size_t(r) >= run_trees.size() || !run_trees[size_t(r)]) continue;
    const RunIndex::Map &m = index[size_t(r)];
    std::vector<const VarNode *> found;
    double value = 0;
    for (const VarNode *v : f.instances) {
      auto it = m.find(v->key);
      if (it == m.end()) break;
      found.push_back(it->second.node);
      value += run_value_of(*it->second.node, paper);
    }
    if (found.size() != f.instances.size()) continue;
    f.run = r;
    f.run_instances = std::move(found);
    f.run_value = value;
  }
}

namespace {

// The parts a body is the rest of: its parent's calls and functions, not the
// parts that come and go with the data (Held parts, the machine's and the
// recorder's leaves, covariance terms).
std::vector<std::string_view> parts_beside(const VarNode *parent) {
  std::vector<std::string_view> keys;
  if (!parent) return keys;
  for (const VarNode &c : parent->children)
    if (c.kind != VarNode::Kind::Cov && !is_held_part(c) && !(c.label.size() && c.label[0] == '('))
      keys.push_back(c.key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

void between_runs(std::vector<Factor> &factors, const std::vector<const VarNode *> &run_trees, bool paper) {
  RunIndex index(run_trees);
  for (Factor &f : factors) {
    if (!f.candidate || f.run < 0 || !f.run_value || size_t(f.run) >= run_trees.size()) continue;
    f.run_values = {*f.run_value};
    f.runs_ci95.reset();
    if (run_trees.size() < 2) continue;  // one run: nothing to index
    const RunIndex::Map &home = index[size_t(f.run)];
    for (size_t r = 0; r < run_trees.size(); ++r) {
      if (int(r) == f.run || !run_trees[r]) continue;
      const RunIndex::Map &there = index[r];
      double value = 0;
      bool holds = true;
      for (const VarNode *v : f.run_instances) {
        auto it = there.find(v->key);
        auto mine = home.find(v->key);
        if (it == there.end() || mine == home.end()) {
          holds = false;
          break;
        }
        // A body (a self part) is what its parent left: the same only beside
        // the same parts. A call's or a function's time is its own in any run.
        if (v->body && parts_beside(mine->second.parent) != parts_beside(it->second.parent)) {
          holds = false;
          break;
        }
        value += run_value_of(*it->second.node, paper);
      }
      if (holds) f.run_values.push_back(value);
    }
    if (f.run_values.size() < 2 || !f.ci95) continue;
    const double n = double(f.run_values.size());
    double mean = 0;
    for (double v : f.run_values) mean += v / n;
    double spread = 0;
    for (double v : f.run_values) spread += (v - mean) * (v - mean) / (n - 1);
    const double v0 = *f.run_value, lo = f.ci95->first, hi = f.ci95->second;
    const double within = (hi - lo) / (2 * 1.96);
    const double between = 1.96 * std::sqrt(std::max(0.0, spread - within * within));
    // Each side's half-width and the between-run term add in quadrature
    // (a side that does not reach v0 is widened by the same amount).
    auto wider = [&](double half) { return std::hypot(half, between) - std::fabs(half); };
    f.runs_ci95 = std::make_pair(lo - wider(v0 - lo), hi + wider(hi - v0));
  }
}

void rerank_fragile(std::vector<Factor> &factors, const FactorOptions &o) {
  // Candidates come first (rank_factors, widen_candidates): re-sort them.
  auto end = std::stable_partition(factors.begin(), factors.end(),
                                   [](const Factor &f) { return f.candidate; });
  auto key = [](const Factor &f) { return std::abs(f.score) * (f.fragile ? 0.5 : 1.0); };
  std::stable_sort(factors.begin(), end,
                   [&](const Factor &a, const Factor &b) { return key(a) > key(b); });
  for (auto it = factors.begin(); it != factors.end(); ++it) it->rank = 0;
  select_first_k(factors.begin(), end, o, /*mark_candidates=*/false);
}

namespace {

// The concentration of each term whose per-interval pieces are columns
// first, first + 1, ... of the row-major x (any common scale): the top
// ceil(0.1% · n) pieces' part of their sum, and the largest one's, in the
// direction of the sum's sign. One pass over the rows for all the terms (a
// row is one cache line or two), each with a min-heap of the m largest so far:
// most rows cost one comparison per term.
template <class Matrix>
void concentration(const Matrix &x, Eigen::Index first, const std::vector<Factor *> &fs) {
  const Eigen::Index n = x.rows();
  const size_t m = std::max<size_t>(1, size_t(std::ceil(0.001 * double(n))));
  const size_t k = fs.size();
  std::vector<std::vector<double>> heaps(k);
  std::vector<double> sign(k), sum(k);
  // The term's sign is known from the tree (the pieces add up to it); where
  // the sum says otherwise, that term takes a second pass. thr[f]: the
  // smallest piece in heap f once it is full (-inf until then).
  std::vector<double> thr(k);
  auto top_pieces = [&](const std::vector<size_t> &which) {
    for (size_t f : which) {
      heaps[f].clear();
      heaps[f].reserve(m);
      sum[f] = 0;
      thr[f] = -std::numeric_limits<double>::infinity();
    }
    auto keep = [&](size_t f, double v) {
      std::vector<double> &heap = heaps[f];
      if (heap.size() < m) {
        heap.push_back(v);
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
        if (heap.size() == m) thr[f] = heap.front();
        return;
      }
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.back() = v;
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
      thr[f] = heap.front();
    };
    if (which.size() == k) {
      for (Eigen::Index i = 0; i < n; ++i) {
        const double *row = &x(i, first);
        for (size_t f = 0; f < k; ++f) {
          sum[f] += row[f];
          if (sign[f] * row[f] > thr[f]) keep(f, sign[f] * row[f]);
        }
      }
      return;
    }
    for (Eigen::Index i = 0; i < n; ++i)
      for (size_t f : which) {
        const double p = x(i, first + Eigen::Index(f));
        sum[f] += p;
        if (sign[f] * p > thr[f]) keep(f, sign[f] * p);
      }
  };
  std::vector<size_t> all(k), again;
  for (size_t f = 0; f < k; ++f) {
    all[f] = f;
    const std::optional<double> &r = fs[f]->run_value;
    sign[f] = r && *r != 0 ? (*r > 0 ? 1.0 : -1.0) : 1.0;
  }
  top_pieces(all);
  for (size_t f = 0; f < k; ++f)
    if (sum[f] != 0 && std::isfinite(sum[f]) && (sum[f] > 0 ? 1.0 : -1.0) != sign[f]) {
      sign[f] = -sign[f];
      again.push_back(f);
    }
  if (!again.empty()) top_pieces(again);
  for (size_t f = 0; f < k; ++f) {
    if (sum[f] == 0 || !std::isfinite(sum[f])) continue;
    double top = 0, largest = heaps[f].front();
    for (double v : heaps[f]) {
      top += v;
      largest = std::max(largest, v);
    }
    fs[f]->top_share = top / std::abs(sum[f]);
    fs[f]->max_one = largest / std::abs(sum[f]);
  }
}

}  // namespace

void bootstrap_factors(std::vector<Factor> &factors, const Columns &c, int run,
                       const FactorOptions &o) {
  std::vector<Factor *> all;
  for (Factor &f : factors) all.push_back(&f);
  bootstrap_factors(all, c, run, o);
}

void bootstrap_factors(const std::vector<Factor *> &factors, const Columns &c, int run,
                       const FactorOptions &o) {
  const Eigen::Index n = c.rows();
  if (n < 2) return;
  // Gather every column the selected factors need, plus the root, once.
  std::vector<Part> parts{{0, false}};
  auto slot = [&](const Part &p) {
    for (size_t i = 0; i < parts.size(); ++i)
      if (parts[i].node == p.node && parts[i].self == p.self) return Eigen::Index(i);
    parts.push_back(p);
    return Eigen::Index(parts.size() - 1);
  };
  // A factor's numerator is Σ k·cov(a, b) over its instances (k = 1 for a
  // variance, 2 for a covariance; a share is cov(a, root)); the last
  // "factor" is Var(root).
  struct Term { Eigen::Index a, b; double k; };
  std::vector<std::vector<Term>> terms;
  std::vector<Factor *> todo;
  // If fixed (tail.h): a variance factor's X is the sum of its instances'
  // columns, these slots (none for a covariance).
  std::vector<std::vector<Eigen::Index>> fixed_x;
  for (Factor *fp : factors) {
    Factor &f = *fp;
    if (!f.candidate || f.run != run || f.assessed) continue;
    f.assessed = true;
    std::vector<Term> t;
    std::vector<Eigen::Index> xf;
    for (const VarNode *v : f.run_instances) {
      bool cov = v->kind == VarNode::Kind::Cov;
      Eigen::Index a = slot(v->a);
      if (!f.covariance) xf.push_back(a);
      if (!o.paper) {
        t.push_back({a, 0, 1.0});
        std::vector<const VarNode *> pre;  // less its (preempted) leaves, as its share
        if (!cov) preempted_below(*v, pre);  // the selected factors only: k subtrees
        for (const VarNode *p : pre) t.push_back({slot(p->a), 0, -1.0});
      } else t.push_back({a, cov ? slot(v->b) : a, cov ? 2.0 : 1.0});
    }
    terms.push_back(std::move(t));
    fixed_x.push_back(std::move(xf));
    todo.push_back(&f);
  }
  if (todo.empty()) return;
  terms.push_back({{0, 0, 1.0}});
  const Eigen::Index P = Eigen::Index(parts.size()), F = Eigen::Index(terms.size());
  // The Poisson bootstrap (resample.h): each resample draws every interval
  // w ~ Poisson(1) times. With N = Σ w, the columns g centered once on the
  // full-sample mean, and m_a = Σ w·g_a / N, a resample's covariance is
  //   cov(a, b) = (Σ w·g_a·g_b − N·m_a·m_b) / (N − 1),
  // so a numerator is (Σ w·s − N·Σ k·m_a·m_b) / (N − 1) with the per-interval
  // s = Σ k·g_a·g_b: every resample needs only N and the weighted sums of the
  // columns x = [g, s], one pass over the intervals for all resamples.
  // The data stay centered, so no catastrophic cancellation.
  // If fixed, L' = L − X + E[X]: Var(L') − Var(L) = Var(X) − 2·Cov(X, L) is
  // one more numerator of the same kind, with s = g_X·(g_X − 2·g_L): a column
  // per variance factor after the terms' (fixed_col), when there are resamples.
  std::vector<Eigen::Index> fixed_col(todo.size(), -1);
  Eigen::Index C = P + F;
  for (size_t f = 0; f < todo.size(); ++f)
    if (!fixed_x[f].empty() && o.bootstrap > 0) fixed_col[f] = C++;
  const Eigen::Index stride = (C + 3) / 4 * 4;
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMajor x(n, stride);
  prefault(x.data(), size_t(x.size()) * sizeof(double));
  x.setZero();
  for (Eigen::Index p = 0; p < P; ++p) {
    const Part &pt = parts[size_t(p)];
    c.part_into(pt.node, pt.self, x.col(p));
  }
  x.leftCols(P).rowwise() -= x.leftCols(P).colwise().mean();
  for (Eigen::Index f = 0; f < F; ++f)
    for (const Term &t : terms[size_t(f)])
      x.col(P + f) += t.k * x.col(t.a).cwiseProduct(x.col(t.b));
  // Column P + f holds the term's per-interval pieces, times (n − 1)·Var(L).
  concentration(x, P, todo);
  for (Factor *f : todo) f->fragile = f->max_one && *f->max_one > 0.5;
  if (o.bootstrap <= 0) return;
  // Each variance factor's g_X = X − E[X] gives its fixed column and its
  // L' = L − g_X, in one pass over the rows.
  const Eigen::VectorXd l = c.root();
  std::vector<Eigen::VectorXd> lf(todo.size());
  for (size_t f = 0; f < todo.size(); ++f)
    if (fixed_col[f] >= 0) lf[f].resize(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    double *row = &x(r, 0);
    for (size_t f = 0; f < todo.size(); ++f) {
      if (fixed_col[f] < 0) continue;
      double g = 0;
      for (Eigen::Index s : fixed_x[f]) g += row[s];
      row[fixed_col[f]] = g * (g - 2 * row[0]);
      lf[f](r) = l(r) - g;
    }
  }
  const Eigen::Index B = o.bootstrap;
  RowMajor sums(B, stride);
  std::vector<double> total(size_t(B), 0.0);
  // Workers take contiguous ranges of resamples, multiples of 4 (the AVX2
  // code's group); each resample's sums do not depend on the split.
  const size_t groups = size_t(B + 3) / 4, nw = o.workers ? o.workers->size() : 1;
  auto share = [&](unsigned w) {
    const size_t b0 = std::min(size_t(B), groups * w / nw * 4);
    const size_t b1 = std::min(size_t(B), groups * (w + 1) / nw * 4);
    poisson_sums_range(x.data(), size_t(n), size_t(stride), b0, b1, o.seed,
                       sums.data() + Eigen::Index(b0) * stride, total.data() + b0);
  };
  if (o.workers) o.workers->run(share);
  else share(0);
  std::vector<std::vector<double>> samples(todo.size()), var_fixed(todo.size()), p99_fixed(todo.size());
  for (Eigen::Index b = 0; b < B; ++b) {
    const double N = total[size_t(b)];
    if (N < 2) continue;
    auto numerator = [&](Eigen::Index f) {
      double means = 0;
      for (const Term &t : terms[size_t(f)])
        means += t.k * (sums(b, t.a) / N) * (sums(b, t.b) / N);
      return sums(b, P + f) - N * means;  // × (N − 1) for the covariance
    };
    double var_root = numerator(F - 1);
    if (var_root <= 0) continue;
    for (size_t f = 0; f < todo.size(); ++f) {
      samples[f].push_back(numerator(Eigen::Index(f)) / var_root);
      if (fixed_col[f] < 0) continue;
      double mx = 0, ml = sums(b, 0) / N;
      for (Eigen::Index s : fixed_x[f]) mx += sums(b, s) / N;
      var_fixed[f].push_back((sums(b, fixed_col[f]) - N * (mx * mx - 2 * mx * ml)) / var_root);
    }
  }
  // p99(L') / p99(L) − 1 in the same resamples: their quantiles, read off
  // the same weights (resample.h).
  PoissonWeights weights(o.seed, size_t(n), size_t(B));  // the top rows are mostly the same ones
  const std::vector<double> p99_l =
      poisson_quantile(l.data(), size_t(n), 0.99, size_t(B), o.seed, total.data(), 0, &weights);
  for (size_t f = 0; f < todo.size(); ++f) {
    if (fixed_col[f] < 0) continue;
    const std::vector<double> p =
        poisson_quantile(lf[f].data(), size_t(n), 0.99, size_t(B), o.seed, total.data(), 0, &weights);
    for (size_t b = 0; b < size_t(B); ++b)
      if (total[b] >= 2 && p99_l[b] > 0) p99_fixed[f].push_back(p[b] / p99_l[b] - 1);
  }
  auto ci95 = [](std::vector<double> &v) -> std::optional<std::pair<double, double>> {
    if (v.size() < 2) return std::nullopt;
    auto q = quantiles(v, {0.025, 0.975});
    return std::make_pair(q[0], q[1]);
  };
  for (size_t f = 0; f < todo.size(); ++f) {
    todo[f]->fixed_var_ci95 = ci95(var_fixed[f]);
    todo[f]->fixed_p99_ci95 = ci95(p99_fixed[f]);
    auto ci = ci95(samples[f]);
    if (!ci) continue;
    const auto [lo, hi] = *ci;
    todo[f]->ci95 = ci;
    todo[f]->significant = lo > 0 || hi < 0;
    if (todo[f]->run_value && hi - lo > std::abs(*todo[f]->run_value)) todo[f]->fragile = true;
  }
}

}  // namespace vprof::analyzer
