#include "analyzer/diff/diff.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "analyzer/factors/causes.h"
#include "analyzer/factors/factors.h"
#include "analyzer/factors/heights.h"
#include "analyzer/factors/resample.h"
#include "analyzer/tree/stats.h"
#include "analyzer/tree/variance_tree.h"

namespace vprof::analyzer {

const char *status_name(NodeStatus s) {
  switch (s) {
    case NodeStatus::Same: return "same";
    case NodeStatus::Moved: return "moved";
    case NodeStatus::Appeared: return "appeared";
    case NodeStatus::Disappeared: return "disappeared";
  }
  return "?";
}

namespace {

std::string basename_of(const std::string &f) {
  size_t s = f.rfind('/');
  return s == std::string::npos ? f : f.substr(s + 1);
}

// One side's runs, pooled: the latency and any node's column over all of
// their intervals (a run without the node contributes zeros).
class Side {
 public:
  explicit Side(std::vector<const ProfileRun *> runs) : runs_(std::move(runs)) {
    for (size_t r = 0; r < runs_.size(); ++r) {
      offsets_.push_back(n_);
      n_ += runs_[r]->intervals();
      for (size_t i = 0; i < runs_[r]->nodes.size(); ++i) {
        auto &v = index_[runs_[r]->nodes[i].key];
        v.resize(runs_.size(), -1);
        v[r] = int(i);
      }
    }
  }
  size_t size() const { return n_; }
  const std::vector<const ProfileRun *> &runs() const { return runs_; }
  bool has(const std::string &key) const { return index_.count(key) > 0; }
  // Broken down in some run of this side.
  bool has_children(const std::string &key) const {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    for (size_t r = 0; r < runs_.size(); ++r)
      if (it->second[r] >= 0 && !runs_[r]->nodes[size_t(it->second[r])].leaf) return true;
    return false;
  }
  const ProfileNode *node(const std::string &key) const {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    for (size_t r = runs_.size(); r-- > 0;)
      if (it->second[r] >= 0) return &runs_[r]->nodes[size_t(it->second[r])];
    return nullptr;
  }
  std::string parent_key(const std::string &key) const {
    auto it = index_.find(key);
    for (size_t r = 0; it != index_.end() && r < runs_.size(); ++r)
      if (it->second[r] >= 0) {
        int p = runs_[r]->nodes[size_t(it->second[r])].parent;
        return p < 0 ? "" : runs_[r]->nodes[size_t(p)].key;
      }
    return "";
  }
  std::vector<double> column(const std::string &key) const {
    std::vector<double> out(n_, 0.0);
    auto it = index_.find(key);
    if (it == index_.end()) return out;
    for (size_t r = 0; r < runs_.size(); ++r)
      if (it->second[r] >= 0)
        runs_[r]->column_into(size_t(it->second[r]), out, offsets_[r]);
    return out;
  }
  const std::vector<size_t> &offsets() const { return offsets_; }

 private:
  std::vector<const ProfileRun *> runs_;
  std::vector<size_t> offsets_;
  size_t n_ = 0;
  std::unordered_map<std::string, std::vector<int>> index_;  // key -> node index per run
};

// Sample covariance, two passes (centered; stats.h).
double covariance(const std::vector<double> &x, const std::vector<double> &l) {
  const size_t n = x.size();
  if (n < 2) return 0;
  double mx = 0, ml = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], ml += l[i];
  mx /= double(n);
  ml /= double(n);
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += (x[i] - mx) * (l[i] - ml);
  return s / double(n - 1);
}

// What one resample of a side gives.
struct Sample {
  bool drawn = false;  // false: the draw weighed under 2 intervals, nothing measured
  double mean = 0, var = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0;
  std::vector<double> cov;  // per requested column: Cov(X, L)
};

// Resamples of one side: with several runs, the runs are drawn with
// replacement first, and every drawn copy of a run gets its own Poisson
// weights for its intervals.
std::vector<Sample> resample(const Side &side, const std::vector<std::string> &keys, int B,
                             uint64_t seed) {
  const size_t n = side.size();
  const size_t R = side.runs().size();
  std::vector<double> lat = side.column("root");
  double ml = 0;
  for (double v : lat) ml += v;
  ml /= double(std::max<size_t>(1, n));
  std::vector<double> lc(n);
  for (size_t i = 0; i < n; ++i) lc[i] = lat[i] - ml;
  std::vector<std::vector<double>> xc;
  for (const std::string &k : keys) {
    std::vector<double> x = side.column(k);
    double m = 0;
    for (double v : x) m += v;
    m /= double(std::max<size_t>(1, n));
    for (double &v : x) v -= m;
    xc.push_back(std::move(x));
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lat[a] < lat[b]; });
  std::vector<Sample> out(size_t(std::max(0, B)));
  std::vector<double> w(n);
  for (int b = 0; b < B; ++b) {
    std::fill(w.begin(), w.end(), 0.0);
    if (R == 1) {
      for (size_t i = 0; i < n; ++i) w[i] = poisson_weight(seed, n, size_t(b), i);
    } else {
      std::mt19937_64 rng(seed * 1000003u + uint64_t(b));
      for (size_t j = 0; j < R; ++j) {
        size_t r = size_t(rng() % R);
        size_t off = side.offsets()[r], nr = side.runs()[r]->intervals();
        for (size_t i = 0; i < nr; ++i) w[off + i] += poisson_weight(seed + 1 + j, nr, size_t(b), i);
      }
    }
    double W = 0, sl = 0, sll = 0;
    for (size_t i = 0; i < n; ++i) {
      W += w[i];
      sl += w[i] * lc[i];
      sll += w[i] * lc[i] * lc[i];
    }
    Sample &s = out[size_t(b)];
    if (W < 2) continue;
    s.drawn = true;
    s.mean = ml + sl / W;
    s.var = (sll - sl * sl / W) / (W - 1);
    for (const auto &x : xc) {
      double sx = 0, sxl = 0;
      for (size_t i = 0; i < n; ++i) {
        sx += w[i] * x[i];
        sxl += w[i] * x[i] * lc[i];
      }
      s.cov.push_back((sxl - sx * sl / W) / (W - 1));
    }
    // Nearest rank under weights: the smallest value with at least q of the
    // weight at or below it.
    const double qs[4] = {0.5, 0.9, 0.99, 0.999};
    double *dst[4] = {&s.p50, &s.p90, &s.p99, &s.p999};
    double cum = 0;
    int q = 0;
    for (size_t i : order) {
      cum += w[i];
      while (q < 4 && cum >= qs[q] * W) *dst[q++] = lat[i];
      if (q == 4) break;
    }
  }
  return out;
}

Interval percentile_interval(std::vector<double> v, double confidence) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.size() < 10) return std::nullopt;
  std::sort(v.begin(), v.end());
  const double a = (1 - confidence) / 2;
  auto at = [&](double q) {
    double pos = q * double(v.size() - 1);
    size_t lo = size_t(std::floor(pos));
    size_t hi = std::min(v.size() - 1, lo + 1);
    return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
  };
  return std::make_pair(at(a), at(1 - a));
}

double ratio(double h, double b) { return b != 0 ? h / b : (h == 0 ? 1.0 : INFINITY); }

}  // namespace

namespace {

// A comparison's steps, each a method, over the state they share: the sides
// pooled, the nodes compared, the tree of changes, the resamples.
class Comparison {
 public:
  Comparison(const std::vector<const ProfileRun *> &br, const std::vector<const ProfileRun *> &hr,
             const DiffOptions &o, Diff &d)
      : o_(o), d_(d), bs_(br), hs_(hr), lb_(bs_.column("root")), lh_(hs_.column("root")),
        var_b_(covariance(lb_, lb_)), var_h_(covariance(lh_, lh_)) {}

  // The union of the two sides' nodes, parents before children; an error
  // when no named part of the program is on both sides.
  Status union_keys(const std::string &base_source, const std::string &head_source);
  // Each node's change in covariance with the latency, over the base's variance.
  void compare_nodes();
  // The tree of changes (below a node broken down on one side only nothing
  // is compared), for analyze's factor ranking.
  VarNode change_tree();
  // The distribution's ratios and, per node in `keys`, the change's interval.
  void intervals(const std::vector<std::string> &keys);
  FactorDiff describe(const Factor &f, bool with_ci) const;

 private:
  Interval change_ci(const std::vector<std::string> &ks) const;
  Ratio ratio_of(double Sample::*m, double vb, double vh, bool sqrt_of) const;
  const NodeDiff *find(const std::string &key) const;

  const DiffOptions &o_;
  Diff &d_;
  Side bs_, hs_;
  std::vector<double> lb_, lh_;
  double var_b_, var_h_;
  std::vector<std::string> keys_;
  std::unordered_map<std::string, size_t> at_;  // key -> d_.nodes before they are sorted
  std::unordered_map<std::string, std::vector<std::string>> kids_;
  std::unordered_map<std::string, size_t> col_;  // key -> resampled column
  std::vector<Sample> sb_, sh_;
};

int depth_of(const std::string &k) { return int(std::count(k.begin(), k.end(), '/')); }

Status Comparison::union_keys(const std::string &base_source, const std::string &head_source) {
    std::unordered_set<std::string> seen;
  size_t common = 0;
  for (const Side *s : {&hs_, &bs_})
    for (const ProfileRun *r : s->runs())
      for (const ProfileNode &n : r->nodes)
        if (seen.insert(n.key).second) keys_.push_back(n.key);
  // A part of the program (a function, a call site, a holder's) is shared
  // when both sides have it. The leaves every tree has, (outside) first, do
  // not make two programs comparable: they count only when neither side has
  // a named part (intervals with nothing instrumented: latency alone).
  auto named = [](const std::string &k) {
    return k.find("/fn:") != std::string::npos || k.find("/site") != std::string::npos ||
           k.find("/held:") != std::string::npos;
  };
  bool any_named = false;
  for (const std::string &k : keys_) any_named = any_named || named(k);
  for (const std::string &k : keys_)
    common += k != "root" && (named(k) || !any_named) && bs_.has(k) && hs_.has(k);
  if (common == 0)
    return Error{fmt::format("{} and {}: no node of the variance tree below the root in common "
                             "(other programs, or instrumented differently): nothing to compare",
                             base_source, head_source)};
  // Parents first: a key's parent is a prefix of it, so sort by depth.
  std::stable_sort(keys_.begin(), keys_.end(), [&](const std::string &a, const std::string &b) {
    return depth_of(a) < depth_of(b);
  });

  return Status::Ok();
}

void Comparison::compare_nodes() {
  d_.delta_var = var_h_ - var_b_;
  for (const std::string &k : keys_) {
    NodeDiff n;
    n.key = k;
    n.depth = depth_of(k);
    const ProfileNode *pb = bs_.node(k), *ph = hs_.node(k);
    const ProfileNode *p = ph ? ph : pb;
    n.label = p->label;
    n.factor = p->factor;
    n.functions = p->functions;
    n.parent_key = ph ? hs_.parent_key(k) : bs_.parent_key(k);
    if (pb) n.base_site = pb->call_site;
    if (ph) n.head_site = ph->call_site;
    if (!pb) n.status = NodeStatus::Appeared;
    else if (!ph) n.status = NodeStatus::Disappeared;
    else if (pb->call_site && ph->call_site &&
             (basename_of(pb->call_site->file) != basename_of(ph->call_site->file) ||
              pb->call_site->line != ph->call_site->line))
      n.status = NodeStatus::Moved;
    bool cb = bs_.has_children(k), ch = hs_.has_children(k);
    n.one_sided = pb && ph && cb != ch;
    n.base_cov = pb ? covariance(bs_.column(k), lb_) : 0.0;
    n.head_cov = ph ? covariance(hs_.column(k), lh_) : 0.0;
    n.delta = n.head_cov - n.base_cov;
    n.of_base = var_b_ > 0 ? n.delta / var_b_ : 0.0;
    n.part = d_.delta_var != 0 ? n.delta / d_.delta_var : 0.0;
    d_.moved += n.status == NodeStatus::Moved;
    d_.appeared += n.status == NodeStatus::Appeared;
    d_.disappeared += n.status == NodeStatus::Disappeared;
    at_[k] = d_.nodes.size();
    d_.nodes.push_back(std::move(n));
  }
}

VarNode Comparison::change_tree() {
  std::unordered_set<std::string> cut;
  for (const NodeDiff &n : d_.nodes) {
    if (n.parent_key.empty() || cut.count(n.parent_key)) {
      if (!n.parent_key.empty()) cut.insert(n.key);
      continue;
    }
    if (d_.nodes[at_.at(n.parent_key)].one_sided) {
      cut.insert(n.key);
      continue;
    }
    kids_[n.parent_key].push_back(n.key);
  }
  for (NodeDiff &n : d_.nodes) n.leaf = !kids_.count(n.key);

  std::function<VarNode(const std::string &)> build = [&](const std::string &k) {
    const NodeDiff &n = d_.nodes[at_.at(k)];
    VarNode v;
    v.key = k;
    v.label = n.label;
    v.functions = n.functions;
    v.call_site = n.head_site ? n.head_site : n.base_site;
    const ProfileNode *p = hs_.node(k) ? hs_.node(k) : bs_.node(k);
    v.factor = n.factor;
    v.cause = p->cause;
    v.body = p->body;
    v.value_ns2 = n.delta;
    v.contribution = n.of_base;
    v.share = n.of_base;
    auto it = kids_.find(k);
    if (it != kids_.end())
      for (const std::string &c : it->second) v.children.push_back(build(c));
    v.kind = v.children.empty() ? VarNode::Kind::Leaf : VarNode::Kind::Var;
    return v;
  };
  return build("root");
}

Ratio Comparison::ratio_of(double Sample::*m, double vb, double vh, bool sqrt_of) const {
  Ratio r;
  r.base = sqrt_of ? std::sqrt(vb) : vb;
  r.head = sqrt_of ? std::sqrt(vh) : vh;
  r.ratio = ratio(r.head, r.base);
  if (!sb_.empty()) {
    std::vector<double> v;
    for (size_t i = 0; i < sb_.size(); ++i) {
      if (!sb_[i].drawn || !sh_[i].drawn) continue;
      double x = sb_[i].*m, y = sh_[i].*m;
      v.push_back(sqrt_of ? std::sqrt(ratio(y, x)) : ratio(y, x));
    }
    r.ci = percentile_interval(v, o_.confidence);
  }
  return r;
}

// The change of a set of nodes over the baseline's variance, per resample.
Interval Comparison::change_ci(const std::vector<std::string> &ks) const {
  if (sb_.empty()) return std::nullopt;
  std::vector<double> v;
  for (size_t i = 0; i < sb_.size(); ++i) {
    if (!sb_[i].drawn || !sh_[i].drawn || sb_[i].var <= 0) continue;
    double s = 0;
    for (const std::string &k : ks) {
      size_t c = col_.at(k);
      s += sh_[i].cov[c] - sb_[i].cov[c];
    }
    v.push_back(s / sb_[i].var);
  }
  return percentile_interval(v, o_.confidence);
}

void Comparison::intervals(const std::vector<std::string> &keys) {
  for (const std::string &k : keys) col_.emplace(k, col_.size());
  if (o_.bootstrap > 0) {
    sb_ = resample(bs_, keys, o_.bootstrap, o_.seed);
    sh_ = resample(hs_, keys, o_.bootstrap, o_.seed ^ 0x5eedull);
  }
  std::vector<double> lbc = lb_, lhc = lh_;
  LatencyStats stb = latency_stats(lbc), sth = latency_stats(lhc);
  d_.dist.base_intervals = lb_.size();
  d_.dist.head_intervals = lh_.size();
  d_.dist.mean = ratio_of(&Sample::mean, stb.mean_ns, sth.mean_ns, false);
  d_.dist.variance = ratio_of(&Sample::var, var_b_, var_h_, false);
  d_.dist.stddev = ratio_of(&Sample::var, var_b_, var_h_, true);
  d_.dist.p50 = ratio_of(&Sample::p50, stb.p50_ns, sth.p50_ns, false);
  d_.dist.p90 = ratio_of(&Sample::p90, stb.p90_ns, sth.p90_ns, false);
  d_.dist.p99 = ratio_of(&Sample::p99, stb.p99_ns, sth.p99_ns, false);
  d_.dist.p999 = ratio_of(&Sample::p999, stb.p999_ns, sth.p999_ns, false);
  for (NodeDiff &n : d_.nodes)
    if (col_.count(n.key)) n.ci = change_ci({n.key});
}

const NodeDiff *Comparison::find(const std::string &key) const {
  auto it = std::find_if(d_.nodes.begin(), d_.nodes.end(), [&](const NodeDiff &x) { return x.key == key; });
  return it == d_.nodes.end() ? nullptr : &*it;
}

FactorDiff Comparison::describe(const Factor &f, bool with_ci) const {
  FactorDiff fd;
  fd.rank = f.rank;
  fd.name = f.name;
  fd.functions = f.functions;
  fd.of_base = f.share;
  const double to_part = d_.delta_var != 0 && var_b_ > 0 ? var_b_ / d_.delta_var : 0.0;
  fd.part = f.share * to_part;
  fd.own_part = f.own_share * to_part;
  for (const Factor::HeldUp &u : f.held_up) fd.held_up.push_back({u.wait, u.share * to_part});
  fd.height = f.height;
  fd.score = f.score;
  if (with_ci) {
    std::vector<std::string> ks;
    for (const VarNode *v : f.instances) ks.push_back(v->key);
    fd.ci = change_ci(ks);
  }
  // The instance carrying most of the change, and whom it is called from.
  const VarNode *top = nullptr;
  for (const VarNode *v : f.instances)
    if (!top || std::abs(v->value_ns2) > std::abs(top->value_ns2)) top = v;
  if (!top) return fd;
  fd.site_label = top->label;
  fd.site = top->call_site;
  std::string pk = find(top->key)->parent_key;
  if (is_held_part(*top)) {
    // Held: the holder's place is its own ("held by CALLER at F (..)",
    // variance_tree.cc); the wait it held is the parent.
    const std::string &l = top->label;
    size_t at = fd.functions.empty() ? std::string::npos : l.rfind(" at " + fd.functions[0] + " (");
    if (l.rfind("held by ", 0) == 0 && at != std::string::npos && at > 8) fd.caller = l.substr(8, at - 8);
    if (const NodeDiff *w = find(pk); w && !w->functions.empty()) fd.held_wait = w->functions.front();
    pk.clear();
  }
  for (; !pk.empty();) {
    const NodeDiff *it = find(pk);
    if (!it) break;
    if (!it->functions.empty() && it->key != "root") {
      fd.caller = it->functions.front();
      break;
    }
    if (it->key == "root") {
      if (d_.root != "latency") fd.caller = d_.root;
      break;
    }
    pk = it->parent_key;
  }
  return fd;
}

}  // namespace

Expected<Diff> diff_profiles(const std::vector<const Profile *> &base,
                             const std::vector<const Profile *> &head, const DiffOptions &o) {
  if (base.empty() || head.empty()) return Error{"diff: a side has no profile"};
  const Profile &b0 = *base.front();
  for (const auto *side : {&base, &head})
    for (const Profile *p : *side)
      if (p->root != b0.root)
        return Error{fmt::format("{}: rooted at {}, but {} is rooted at {}; analyze both with the same --root",
                                 p->source, p->root, b0.source, b0.root)};
  std::vector<const ProfileRun *> br, hr;
  Diff d;
  d.root = b0.root;
  d.confidence = o.confidence;
  d.base_build = b0.build;
  d.head_build = head.front()->build;
  for (const Profile *p : base) br.push_back(&p->runs.back()), d.base_sources.push_back(p->source);
  for (const Profile *p : head) hr.push_back(&p->runs.back()), d.head_sources.push_back(p->source);
  for (size_t i = 0; i < base.size(); ++i)
    if (br[i]->intervals() < 2)
      return Error{fmt::format("{}: {} complete intervals; a comparison needs at least 2", base[i]->source, br[i]->intervals())};
  for (size_t i = 0; i < head.size(); ++i)
    if (hr[i]->intervals() < 2)
      return Error{fmt::format("{}: {} complete intervals; a comparison needs at least 2", head[i]->source, hr[i]->intervals())};
  Comparison c(br, hr, o, d);
  if (Status s = c.union_keys(b0.source, head.front()->source); !s) return Error{s.message()};
  c.compare_nodes();
  VarNode tree = c.change_tree();
  number_tree(tree);
  Heights h = compute_heights(tree, nullptr, d.root == "latency" ? "" : d.root);
  FactorOptions fo;
  fo.k = o.k;
  fo.d = o.d;
  fo.e = o.e;
  fo.bootstrap = 0;
  // What changed is named: a wait that grew because its holder got slower
  // names the holder's code (its Held parts), not the wait.
  fo.held_parts = true;
  std::vector<Factor> factors = rank_factors(tree, h, fo);
  Causes causes = rank_causes(tree, fo);

  // Intervals: for the largest changes and the factors that could be named.
  std::sort(d.nodes.begin(), d.nodes.end(), [](const NodeDiff &a, const NodeDiff &b) {
    return std::abs(a.delta) > std::abs(b.delta);
  });
  std::vector<std::string> ci_keys;
  std::unordered_set<std::string> wanted;
  auto want = [&](const std::string &k) {
    if (wanted.insert(k).second) ci_keys.push_back(k);
  };
  for (size_t i = 0; i < d.nodes.size() && i < o.interval_nodes; ++i) want(d.nodes[i].key);
  const size_t factor_limit = size_t(3 * std::max(1, o.k));
  for (size_t i = 0; i < factors.size() && i < factor_limit; ++i)
    for (const VarNode *v : factors[i].instances) want(v->key);
  if (causes.held)
    for (size_t i = 0; i < causes.ranked.size() && i < factor_limit; ++i)
      for (const VarNode *v : causes.ranked[i].instances) want(v->key);
  c.intervals(ci_keys);
  for (size_t i = 0; i < factors.size(); ++i) d.factors.push_back(c.describe(factors[i], i < factor_limit));
  d.causes_held = causes.held;
  if (causes.held)
    for (size_t i = 0; i < causes.ranked.size(); ++i)
      d.causes.push_back(c.describe(causes.ranked[i], i < factor_limit));
  return d;
}

}  // namespace vprof::analyzer
