#include "analyzer/tree/variance_tree.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "analyzer/tree/stats.h"
#include "analyzer/util/prefault.h"

namespace vprof::analyzer {

const char *kind_name(VarNode::Kind k) {
  switch (k) {
    case VarNode::Kind::Var: return "var";
    case VarNode::Kind::Cov: return "cov";
    case VarNode::Kind::Leaf: return "leaf";
  }
  return "?";
}

namespace {

// How many covariance terms a node keeps per part (expand).
constexpr size_t kCovTermsPerPart = 4;
// A covariance term smaller than this fraction of Var(root) (0.01%; the
// reports print shares to 0.1%) is summed into its node's "other pairs" term
// instead of being a node of its own (expand).
constexpr double kNegligibleCov = 1e-4;

class Builder {
 public:
  Builder(const Columns &c, const Names &names, int run) : c_(c), names_(names), run_(run) {
    // A call site's identity is (caller, callee, which call of that callee in
    // the caller), not its file and line: an edit above it, or a build of
    // another commit, keeps it the same node. Ids run in source
    // order (the manifest's), so the ordinal is the rank among equal pairs.
    std::vector<uint32_t> ids;
    for (const auto &[id, site] : names_.sites) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    std::map<std::pair<uint32_t, std::string>, int> seen;
    for (uint32_t id : ids) {
      const CallSiteInfo &site = names_.sites.at(id);
      ordinal_[id] = seen[{site.function_id, site.callee}]++;
    }
    // One workspace for every node's parts, faulted in once: a fresh
    // intervals × parts matrix per node (and its centered copy) paid its
    // page faults anew each time.
    // Only dense parts go there (part_covariances): the node itself and the
    // children that fill a quarter of the rows or more.
    size_t widest = 0;
    for (const ShapeNode &s : c_.nodes) {
      size_t dense = 1;
      for (int ch : s.children) dense += is_dense(ch) ? 1 : 0;
      widest = std::max(widest, dense);
    }
    work_.resize(c_.rows(), Eigen::Index(widest));
    prefault(work_.data(), size_t(work_.size()) * sizeof(double));
  }

  VarNode root(const std::string &label) {
    VarNode r;
    r.kind = VarNode::Kind::Var;
    r.label = label;
    r.key = "root";
    r.run = run_;
    r.a = {0, false};
    if (c_.nodes[0].kind == FrameKind::Function) {
      r.functions = {fn_name(0)};
      r.factor = fn_name(0);
    }
    r.value_ns2 = c_.rows() ? variance(c_.root()) : 0.0;
    var_root_ = r.value_ns2;
    r.contribution = var_root_ > 0 ? 1.0 : 0.0;
    r.share = r.contribution;
    // The root, centered once: a part's share is one dot product with it.
    root_c_ = c_.root();
    if (root_c_.size()) root_c_.array() -= root_c_.mean();
    expand(r, 0);
    if (r.children.empty()) r.kind = VarNode::Kind::Leaf;
    return r;
  }

 private:
  std::string fn_name(int n) const {
    const ShapeNode &s = c_.nodes[n];
    if (s.kind == FrameKind::Function) return names_.function(s.id);
    if (s.callee_fn && names_.functions.count(s.callee_fn)) return names_.function(s.callee_fn);
    return names_.callee(s.id);
  }

  // Label, identity and factor of one part.
  void describe(const Part &p, VarNode &v) const {
    const ShapeNode &s = c_.nodes[p.node];
    v.a = p;
    v.run = run_;
    if (const char *label = frame_label(s.kind)) {  // a leaf of no code (the frame kinds' table)
      v.label = label;
      v.key = frame_key(s.kind);
      return;
    }
    if (s.kind == FrameKind::Held) return describe_held(s.id, v);
    std::string f = fn_name(p.node);
    v.functions = {f};
    if (p.self && s.kind == FrameKind::Site && s.callee_fn == 0 && !has_child(s, FrameKind::Function)) {
      // A wait whose blocked time is in Held parts: the rest of the call
      // (the wake-up latency, waits on this interval's own work, an
      // uncontended pass). Its factor is the call's: analyze ranks the wait
      // as a whole, and the part stays inside it (factors.cc).
      // (Beside (preempted) or (recorder) leaves alone: the call running.)
      v.label = f + (has_child(s, FrameKind::Held) ? " (not held)" : " (running)");
      v.key = "notheld";
      v.factor = f;
      v.functions = {f};
      v.body = true;
      if (const CallSiteInfo *site = names_.site(s.id)) v.call_site = *site;
      return;
    }
    if (p.self && s.kind == FrameKind::Site && s.callee_fn == 0) {
      // A site whose uninstrumented callee re-entered instrumented code in
      // some calls: its own time is the callee's, less what ran in there. Like
      // a body, nothing measured is below it (height 0); unlike a body, the
      // callee can be instrumented to break it down.
      v.label = f + " (uninstrumented part)";
      v.key = "uninstrumented";
      v.factor = v.label;
      v.body = true;
      if (const CallSiteInfo *site = names_.site(s.id)) v.call_site = *site;
      return;
    }
    if (p.self) {
      v.label = f + " (body)";
      v.key = "body";
      v.factor = v.label;
      v.body = true;
      // Beside only (preempted) and (recorder) leaves the body is the
      // function less them: the function's own factor already (factors.cc).
      const auto &ch = s.children;
      if (std::all_of(ch.begin(), ch.end(), [&](int c) {
            const FrameKind k = c_.nodes[size_t(c)].kind;
            return k == FrameKind::Preempted || k == FrameKind::Recorder;
          }))
        v.factor.clear();
      return;
    }
    v.factor = f;
    if (s.kind == FrameKind::Function) {
      v.label = f;
      v.key = "fn:" + f;
      return;
    }
    if (const CallSiteInfo *site = names_.site(s.id)) {
      v.call_site = *site;
      v.label = fmt::format("{} ({}:{})", f, site->file, site->line);
      v.key = fmt::format("site:{}>{}#{}", names_.function(site->function_id), site->callee,
                          ordinal_.at(s.id));
    } else {
      v.label = fmt::format("{} (site#{})", f, s.id);
      v.key = fmt::format("site#{}", s.id);
    }
  }


  // A loop's cause (VarNode::cause): for a part of a site some thread called
  // in a row, or held there, the function that loops; for the body of such a
  // function, or a holder in it, that function. "" otherwise.
  std::string loop_cause(const Part &p) const {
    const ShapeNode &s = c_.nodes[p.node];
    if (s.kind == FrameKind::Site)
      if (std::string f = names_.looping_function(s.id); !f.empty()) return f;
    if (s.kind == FrameKind::Held) {
      if (s.id == 0 || s.id == kHeldUnrecorded || s.id == kHeldRecorder || held_preempted(s.id) ||
          (s.id & kHeldPlace))
        return "";
      if (s.id & kHeldFunction) {
        const std::string f = names_.function(s.id & ~kHeldFunction);
        return names_.loops(f) ? f : "";
      }
      return names_.looping_function(s.id);
    }
    // A body: a function's own node, or a site its direct call folded into.
    if (p.self && (s.kind == FrameKind::Function || (s.kind == FrameKind::Site && s.callee_fn != 0))) {
      const std::string f = fn_name(p.node);
      return names_.loops(f) ? f : "";
    }
    return "";
  }

  bool has_child(const ShapeNode &s, FrameKind kind) const {
    return std::any_of(s.children.begin(), s.children.end(),
                       [&](int ch) { return c_.nodes[size_t(ch)].kind == kind; });
  }

  // A Held part: the blocked time of the wait above it while its waker, in
  // another interval or in none, was at one place (held_id, timeline.h).
  // Named and keyed by that place, not by the waker's path: stable across
  // runs and builds. Its factor is the place's, as the waker's own node's.
  void describe_held(uint32_t id, VarNode &v) const {
    if (id == 0) {
      v.label = "held by (outside)";
      v.key = kHeldOutsideKey;
      return;
    }
    if (id == kHeldUnrecorded) {  // no cause: nothing says where that thread was
      v.label = "held by an unrecorded thread";
      v.key = "held:unrecorded";
      return;
    }
    if (id == kHeldRecorder) {  // no cause: vprof's own pauses
      v.label = "(recorder) pausing the holder";
      v.key = kHeldRecorderKey;
      return;
    }
    if (held_preempted(id)) {  // no cause: the kernel's doing, at that place
      describe_held(id & ~kHeldPreempted, v);
      v.label += ", preempted while holding";
      v.key = kHeldPreemptedPrefix + v.key.substr(v.key.find(':') + 1);
      v.factor.clear();
      v.body = false;
      return;
    }
    if (id & kHeldFunction) {
      std::string f = names_.function(id & ~kHeldFunction);
      v.label = "held by " + f + " (body)";
      v.key = "held:fn:" + f;
      v.factor = f + " (body)";
      v.functions = {f};
      v.body = true;
      return;
    }
    if (id & kHeldPlace) {
      // The holder ran no instrumented function; it released in f (its
      // return address, names/symbols.h): f is what the waiter waited for,
      // and the function to instrument to see inside it.
      std::string f = names_.place(id & ~kHeldPlace);
      v.label = "held by " + names_.place_label(id & ~kHeldPlace);
      v.key = std::string(kHeldOutsideKey) + ":" + f;
      v.factor = f;
      v.functions = {f};
      return;
    }
    std::string f = names_.callee(id);
    v.functions = {f};
    v.factor = f;
    if (const CallSiteInfo *site = names_.site(id)) {
      v.call_site = *site;
      v.label = fmt::format("held by {} at {} ({}:{})", names_.function(site->function_id), f,
                            site->file, site->line);
      v.key = fmt::format("held:site:{}>{}#{}", names_.function(site->function_id), site->callee,
                          ordinal_.at(id));
    } else {
      v.label = fmt::format("held by {} (site#{})", f, id);
      v.key = fmt::format("held:site#{}", id);
    }
  }

  // A part that fills a quarter of the intervals or more is handled as a
  // dense column; the others by their cells (part_covariances).
  bool is_dense(int node) const {
    const NodeTotals &t = c_.total;
    return 4 * t.cells(node) >= size_t(c_.rows());
  }

  // The parts' covariance matrix and each part's share of Var(root). The dense
  // parts (the node's own time, and children in most intervals) are centered
  // columns in the workspace, their covariances one product as before. A
  // sparse part (a Held part or a callee in a few intervals: a wide node has
  // hundreds) is only its cells: with a dense part, Σ x·(d − d̄) over x's
  // cells; with another sparse part, the products of the two in the rows
  // they share, less n·x̄·ȳ, from the parts' cells bucketed by row. The
  // dense product over all parts cost rows × P² (80 000 intervals × 2 000
  // parts: 78 s).
  void part_covariances(const std::vector<Part> &parts, const std::vector<int> &folded,
                        Eigen::MatrixXd &cov, std::vector<double> &shares) {
    const Eigen::Index rows = c_.rows(), P = Eigen::Index(parts.size());
    cov = Eigen::MatrixXd::Zero(P, P);
    shares.assign(parts.size(), 0.0);
    std::vector<Eigen::Index> dense, sparse;  // indices into parts
    for (Eigen::Index i = 0; i < P; ++i) {
      const Part &p = parts[size_t(i)];
      (p.self || is_dense(p.node) ? dense : sparse).push_back(i);
    }
    auto m = work_.leftCols(Eigen::Index(dense.size()));
    for (size_t k = 0; k < dense.size(); ++k) {
      const Part &p = parts[size_t(dense[k])];
      c_.part_into(p.node, p.self, m.col(Eigen::Index(k)));
      if (p.self)
        for (int ch : folded) c_.total.add_into(ch, 1.0, m.col(Eigen::Index(k)));
    }
    const Eigen::MatrixXd dd = covariance_in_place(m);  // m is now centered
    for (size_t a = 0; a < dense.size(); ++a)
      for (size_t b = 0; b < dense.size(); ++b)
        cov(dense[a], dense[b]) = dd(Eigen::Index(a), Eigen::Index(b));
    if (rows < 2) return;
    const double n1 = double(rows - 1);
    if (var_root_ > 0)
      for (size_t k = 0; k < dense.size(); ++k)
        shares[size_t(dense[k])] = m.col(Eigen::Index(k)).dot(root_c_) / n1 / var_root_;
    if (sparse.empty()) return;
    const NodeTotals &t = c_.total;
    std::vector<double> mean(sparse.size(), 0.0);
    std::vector<size_t> by_row(size_t(rows) + 1, 0);  // the sparse parts' cells bucketed by row
    for (size_t k = 0; k < sparse.size(); ++k) {
      const int node = parts[size_t(sparse[k])].node;
      double sum = 0, root = 0;
      Eigen::VectorXd with_dense = Eigen::VectorXd::Zero(Eigen::Index(dense.size()));
      t.for_each(node, [&](Eigen::Index r, double v) {
        sum += v;
        root += v * root_c_(r);
        with_dense += v * m.row(r).transpose();
        ++by_row[size_t(r) + 1];
      });
      mean[k] = sum / double(rows);
      if (var_root_ > 0) shares[size_t(sparse[k])] = root / n1 / var_root_;
      for (size_t d = 0; d < dense.size(); ++d)
        cov(sparse[k], dense[d]) = cov(dense[d], sparse[k]) = with_dense(Eigen::Index(d)) / n1;
    }
    for (size_t r = 0; r < size_t(rows); ++r) by_row[r + 1] += by_row[r];
    std::vector<std::pair<uint32_t, double>> cells(by_row.back());  // (sparse part, value)
    std::vector<size_t> next(by_row.begin(), by_row.end() - 1);
    for (size_t k = 0; k < sparse.size(); ++k) {
      const int node = parts[size_t(sparse[k])].node;
      t.for_each(node, [&](Eigen::Index r, double v) { cells[next[size_t(r)]++] = {uint32_t(k), v}; });
    }
    Eigen::MatrixXd g = Eigen::MatrixXd::Zero(Eigen::Index(sparse.size()), Eigen::Index(sparse.size()));
    for (size_t r = 0; r < size_t(rows); ++r)
      for (size_t i = by_row[r]; i < by_row[r + 1]; ++i)
        for (size_t j = by_row[r]; j < by_row[r + 1]; ++j)
          g(cells[i].first, cells[j].first) += cells[i].second * cells[j].second;
    for (size_t a = 0; a < sparse.size(); ++a)
      for (size_t b = 0; b < sparse.size(); ++b)
        cov(sparse[a], sparse[b]) =
            (g(Eigen::Index(a), Eigen::Index(b)) - double(rows) * mean[a] * mean[b]) / n1;
  }

  void expand(VarNode &out, int n) {
    const ShapeNode &s = c_.nodes[n];
    if (s.children.empty()) return;
    // A call site whose callee this run did not instrument is not broken
    // down: what nests in it (calls in its arguments, f(g(x))) is no
    // breakdown of f, and its "body" would be all of f. It stays a leaf until
    // a run instruments f; runs merge by the earliest breakdown, so a
    // pseudo-breakdown here would hide that run's real one.
    // Unless instrumented functions ran inside it (its callee re-entered them
    // in some calls): then its own time stays its own, "<callee>
    // (uninstrumented part)", beside theirs, in every interval (merge_runs
    // lets a run that instruments the callee replace this breakdown).
    // A wait's Held parts are a breakdown of its blocked time, whatever its
    // callee: they are expanded.
    // Unless the call was preempted (or paused by the recorder) inside: that
    // time is the machine's, not the call's (a library call that wakes
    // another thread is where a busy machine preempts the caller: sendmsg
    // read 53% of Var, 21 of its 22 points preempted). The site then splits
    // into its running rest, which keeps the call's factor, and those
    // leaves, which are no cause; merge_runs lets a run that instruments the
    // callee replace the split, as it replaces a leaf.
    if (s.kind == FrameKind::Site && s.callee_fn == 0 && !has_child(s, FrameKind::Function) &&
        !has_child(s, FrameKind::Held) && !has_child(s, FrameKind::Preempted) && !has_child(s, FrameKind::Recorder))
      return;
    // A wait's Held parts split such a site, but the calls in its arguments
    // (mysql_update(thd, ..., lim.get_select_limit(), ...), found on MariaDB)
    // are still no part of its callee: they fold into its own "(not held)"
    // part, so that its children stay Held parts only and a run that
    // instruments the callee replaces them (merge_runs.cc, held_only).
    const bool held_split = s.kind == FrameKind::Site && s.callee_fn == 0 && !has_child(s, FrameKind::Function);
    std::vector<Part> parts;
    std::vector<int> folded;
    if (c_.has_self[size_t(n)]) parts.push_back({n, true});
    for (int ch : s.children)
      if (c_.total.any(ch)) {
        if (held_split && c_.nodes[size_t(ch)].kind == FrameKind::Site) folded.push_back(ch);
        else parts.push_back({ch, false});
      }
    if (!folded.empty() && (parts.empty() || !parts.front().self)) parts.insert(parts.begin(), {n, true});
    if (parts.empty()) return;
    // Computed before the recursion below reuses the workspace.
    Eigen::MatrixXd cov;
    std::vector<double> shares;
    part_covariances(parts, folded, cov, shares);
    std::vector<VarNode> terms(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      VarNode &v = terms[i];
      describe(parts[i], v);
      if (!v.factor.empty()) v.cause = loop_cause(parts[i]);
      v.key = out.key + "/" + v.key;
      v.value_ns2 = cov(Eigen::Index(i), Eigen::Index(i));
      v.contribution = var_root_ > 0 ? v.value_ns2 / var_root_ : 0.0;
      v.share = shares[i];
      if (!parts[i].self) expand(v, parts[i].node);
      v.kind = v.children.empty() ? VarNode::Kind::Leaf : VarNode::Kind::Var;
    }
    // A pair's covariance term where it is not negligible (kNegligibleCov of
    // Var(root)); on a wide node (a server's hundreds of Held parts under one
    // wait) only the kCovTermsPerPart·P largest of those. The others' sum is
    // one term, so the children still add up to the node's variance. Two
    // thousand parts made two million terms; a late MariaDB run's tree had
    // 140 630 terms, 139 580 of them under 0.001% of Var(root), and they
    // were most of the analysis's memory.
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    size_t notable = 0;  // pairs[0, notable) are not negligible
    const double negligible = kNegligibleCov * var_root_;
    for (size_t i = 0; i < parts.size(); ++i)
      for (size_t j = i + 1; j < parts.size(); ++j) {
        pairs.push_back({uint32_t(i), uint32_t(j)});
        if (2.0 * std::abs(cov(Eigen::Index(i), Eigen::Index(j))) >= negligible)
          std::swap(pairs[notable++], pairs.back());
      }
    std::sort(pairs.begin(), pairs.begin() + std::ptrdiff_t(notable));
    const size_t keep = std::min(notable, kCovTermsPerPart * parts.size());
    auto larger = [&](const std::pair<uint32_t, uint32_t> &x, const std::pair<uint32_t, uint32_t> &y) {
      double vx = std::abs(cov(Eigen::Index(x.first), Eigen::Index(x.second)));
      double vy = std::abs(cov(Eigen::Index(y.first), Eigen::Index(y.second)));
      return vx != vy ? vx > vy : x < y;
    };
    if (keep < notable) {
      std::nth_element(pairs.begin(), pairs.begin() + std::ptrdiff_t(keep),
                       pairs.begin() + std::ptrdiff_t(notable), larger);
      std::sort(pairs.begin(), pairs.begin() + std::ptrdiff_t(keep));  // the order of all pairs
    }
    std::vector<VarNode> covs;
    for (size_t p = 0; p < keep; ++p) {
      const auto [i, j] = pairs[p];
      VarNode v;
      v.kind = VarNode::Kind::Cov;
      v.run = run_;
      v.a = parts[i];
      v.b = parts[j];
      const VarNode &x = terms[i], &y = terms[j];
      v.label = fmt::format("cov({}, {})", x.label, y.label);
      v.key = fmt::format("{}/cov({},{})", out.key, x.key.substr(out.key.size() + 1),
                          y.key.substr(out.key.size() + 1));
      v.functions = x.functions;
      v.functions.insert(v.functions.end(), y.functions.begin(), y.functions.end());
      v.call_site = x.call_site;
      v.other_call_site = y.call_site;
      if (!x.factor.empty() && !y.factor.empty()) {
        auto [lo, hi] = std::minmax(x.factor, y.factor);
        v.factor = fmt::format("cov({}, {})", lo, hi);
      }
      v.value_ns2 = 2.0 * cov(Eigen::Index(i), Eigen::Index(j));
      v.contribution = var_root_ > 0 ? v.value_ns2 / var_root_ : 0.0;
      covs.push_back(std::move(v));
    }
    if (keep < pairs.size()) {
      VarNode v;
      v.kind = VarNode::Kind::Cov;
      v.run = run_;
      v.a = v.b = {n, false};
      v.label = fmt::format("cov(the other {} pairs)", pairs.size() - keep);
      v.key = out.key + "/cov(other)";
      for (size_t p = keep; p < pairs.size(); ++p)
        v.value_ns2 += 2.0 * cov(Eigen::Index(pairs[p].first), Eigen::Index(pairs[p].second));
      v.contribution = var_root_ > 0 ? v.value_ns2 / var_root_ : 0.0;
      covs.push_back(std::move(v));
    }
    std::stable_sort(terms.begin(), terms.end(),
                     [](const VarNode &a, const VarNode &b) { return a.value_ns2 > b.value_ns2; });
    std::stable_sort(covs.begin(), covs.end(), [](const VarNode &a, const VarNode &b) {
      return std::abs(a.value_ns2) > std::abs(b.value_ns2);
    });
    out.children = std::move(terms);
    for (auto &v : covs) out.children.push_back(std::move(v));
  }

  const Columns &c_;
  const Names &names_;
  std::unordered_map<uint32_t, int> ordinal_;  // site id -> ordinal (above)
  int run_;
  double var_root_ = 0;
  Eigen::VectorXd root_c_;
  Eigen::MatrixXd work_;
};

void number(VarNode &n, int &next) {
  n.id = next++;
  for (auto &c : n.children) number(c, next);
}

}  // namespace

VarNode build_variance_tree(const Columns &c, const Names &names, const std::string &root_label,
                            int run) {
  Builder b(c, names, run);
  VarNode r = b.root(root_label);
  number_tree(r);
  return r;
}

void number_tree(VarNode &root) {
  int next = 0;
  number(root, next);
}

bool is_held_part(const VarNode &n) {
  size_t p = n.key.rfind('/');
  return n.key.compare(p == std::string::npos ? 0 : p + 1, 5, "held:") == 0;
}

bool held_off_cpu(const VarNode &n) {
  const size_t p = n.key.rfind('/'), at = p == std::string::npos ? 0 : p + 1;
  const std::string_view last = std::string_view(n.key).substr(at);
  return last == kHeldRecorderKey || last.substr(0, sizeof kHeldPreemptedPrefix - 1) == kHeldPreemptedPrefix;
}

// A call's part that is no breakdown of its callee: the rest of the call
// (its "(not held)" or "(running)" part), or time it was preempted or paused
// by the recorder.
static bool rest_of_call(const VarNode &c) {
  auto ends = [&](const char *tail) {
    const size_t m = std::strlen(tail);
    return c.key.size() >= m && c.key.compare(c.key.size() - m, m, tail) == 0;
  };
  return ends("/notheld") || ends("/preempted") || ends("/recorder");
}

bool held_only(const VarNode &n) {
  bool held = false;
  for (const VarNode &c : n.children) {
    if (is_held_part(c)) held = true;
    else if (c.kind != VarNode::Kind::Cov && !rest_of_call(c)) return false;
  }
  return held;
}

bool time_split_only(const VarNode &n) {
  bool any = false;
  for (const VarNode &c : n.children) {
    if (c.kind == VarNode::Kind::Cov) continue;
    if (!rest_of_call(c)) return false;
    any = true;
  }
  return any;
}

double children_contribution(const VarNode &n) {
  double s = 0;
  for (const auto &c : n.children) s += c.contribution;
  return s;
}

double children_share(const VarNode &n) {
  double s = 0;
  for (const auto &c : n.children) s += c.share.value_or(0.0);
  return s;
}

}  // namespace vprof::analyzer
