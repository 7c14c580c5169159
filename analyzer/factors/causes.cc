// Causes (causes.h).
#include "analyzer/factors/causes.h"

#include "analyzer/factors/tail.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace vprof::analyzer {
namespace {

void collect(const VarNode &n, const VarNode *parent, std::map<std::string, Factor> &by_name,
             Causes &out) {
  bool terminal = true;
  for (const VarNode &c : n.children)
    if (c.kind != VarNode::Kind::Cov) {
      terminal = false;
      collect(c, &n, by_name, out);
    }
  if (!terminal || n.kind == VarNode::Kind::Cov || n.key == "root") return;
  const double share = n.share.value_or(0.0);
  if (n.factor.empty()) {  // (outside), (untracked), (preempted), held by (outside), ...
    out.none += share;
    return;
  }
  // A loop's calls and its body go to the function that loops (causes.h).
  const std::string &name = n.cause.empty() ? n.factor : n.cause;
  Factor &f = by_name[name];
  f.name = name;
  if (!n.cause.empty()) f.functions = {n.cause};
  else if (f.functions.empty()) f.functions = n.functions;
  f.share += share;
  f.instances.push_back(&n);
  if (!is_held_part(n) || !parent) {
    f.own_share += share;
    return;
  }
  out.held = true;
  // The wait it held up: the Held part's parent (a wait call site, or a
  // function whose own code waited), one entry per wait and place.
  const std::string wait = parent->functions.empty() ? parent->label : parent->functions.front();
  auto same = [](const std::optional<CallSiteInfo> &a, const std::optional<CallSiteInfo> &b) {
    return a.has_value() == b.has_value() &&
           (!a || (a->function_id == b->function_id && a->file == b->file && a->line == b->line &&
                   a->column == b->column));
  };
  auto it = std::find_if(f.held_up.begin(), f.held_up.end(), [&](const Factor::HeldUp &h) {
    return h.wait == wait && same(h.site, parent->call_site);
  });
  if (it == f.held_up.end()) f.held_up.push_back({wait, parent->call_site, share});
  else it->share += share;
}

}  // namespace

Causes rank_causes(const VarNode &tree, const FactorOptions &o) {
  Causes out;
  std::map<std::string, Factor> by_name;
  collect(tree, nullptr, by_name, out);
  for (auto &[name, f] : by_name) {
    std::stable_sort(f.held_up.begin(), f.held_up.end(),
                     [](const Factor::HeldUp &a, const Factor::HeldUp &b) { return a.share > b.share; });
    f.score = f.share;
    out.ranked.push_back(std::move(f));
  }
  std::stable_sort(out.ranked.begin(), out.ranked.end(),
                   [](const Factor &a, const Factor &b) { return a.share > b.share; });
  // Disjoint by construction: the first k reaching d, no nesting to skip.
  int rank = 0;
  for (Factor &f : out.ranked) {
    if (rank >= o.k || f.share < o.d) break;
    f.rank = ++rank;
    f.candidate = true;
  }
  return out;
}

namespace {

// The ranked causes of each run's own tree (where a cause is measured).
std::vector<Causes> causes_by_run(const std::vector<const VarNode *> &run_trees, const FactorOptions &o) {
  std::vector<Causes> by_run(run_trees.size());
  for (size_t r = 0; r < run_trees.size(); ++r)
    if (run_trees[r]) by_run[r] = rank_causes(*run_trees[r], o);
  return by_run;
}

// Where cause c is measured: the run its largest part came from first (the
// merged tree's [run N]): a later run may hold a sliver of the same name
// (PostgreSQL's scale-16 session: XLogWrite held up 52% of Var in run 6,
// where the wait was broken down, and 0.1% in run 19, whose "if fixed" read
// -0.0%); else the latest run whose own tree has a cause of that name.
void place_cause(Factor &c, const std::vector<Causes> &by_run) {
  auto place = [&](size_t r) {
    if (r >= by_run.size()) return false;
    auto it = std::find_if(by_run[r].ranked.begin(), by_run[r].ranked.end(),
                           [&](const Factor &x) { return x.name == c.name; });
    if (it == by_run[r].ranked.end()) return false;
    c.run = int(r);
    c.run_instances = it->instances;  // into run_trees[r]
    c.run_value = it->share;
    return true;
  };
  const VarNode *largest = nullptr;
  for (const VarNode *v : c.instances)
    if (!largest || v->share.value_or(0) > largest->share.value_or(0)) largest = v;
  if (largest && place(size_t(largest->run))) return;
  for (size_t r = by_run.size(); r-- > 0;)
    if (place(r)) return;
}

}  // namespace

std::vector<Factor *> place_own_causes(Causes &causes, const std::vector<Factor> &factors,
                                       const std::vector<const VarNode *> &run_trees, FactorOptions o) {
  std::vector<Factor *> out;
  if (!causes.held || o.paper) return out;
  std::vector<Causes> by_run;
  for (Factor &c : causes.ranked) {
    if (!c.candidate) continue;
    // A cause with no Held part may be a factor's twin (assess_causes): that
    // is known only once the factors are ranked again; it waits.
    const bool maybe_twin = c.held_up.empty() && std::any_of(factors.begin(), factors.end(), [&](const Factor &f) {
                              return f.name == c.name;
                            });
    if (maybe_twin) continue;
    if (by_run.empty()) by_run = causes_by_run(run_trees, o);
    place_cause(c, by_run);
    out.push_back(&c);
  }
  return out;
}

void assess_causes(Causes &causes, const std::vector<Factor> &factors,
                   const std::vector<const VarNode *> &run_trees, const std::vector<const Columns *> &columns,
                   FactorOptions o) {
  if (!causes.held) return;
  o.paper = false;
  // Twins: the factor's whole assessment, the cause's own identity and parts.
  std::vector<Factor *> own;
  for (Factor &c : causes.ranked) {
    if (!c.candidate) continue;
    const Factor *twin = nullptr;
    for (const Factor &f : factors)
      if (c.held_up.empty() && f.candidate && !f.covariance && f.name == c.name && std::abs(f.share - c.share) < 1e-12)
        twin = &f;
    if (!twin) {
      own.push_back(&c);
      continue;
    }
    Factor cause = std::move(c);
    c = *twin;
    c.rank = cause.rank;
    c.score = cause.score;
    c.share = cause.share;
    c.own_share = cause.own_share;
    c.held_up = std::move(cause.held_up);
    c.instances = std::move(cause.instances);
    c.nested_with.clear();
  }
  // Each where it is measured (place_own_causes placed and assessed most
  // already, in the factors' pass).
  std::vector<Causes> by_run;
  for (Factor *c : own) {
    if (c->assessed) continue;
    if (by_run.empty()) by_run = causes_by_run(run_trees, o);
    place_cause(*c, by_run);
  }
  std::vector<Factor> mine;  // assessed in one pass per run, then put back
  for (Factor *c : own) mine.push_back(std::move(*c));
  for (size_t r = 0; r < columns.size(); ++r) {
    bootstrap_factors(mine, *columns[r], int(r), o);
    tail_shares(mine, *columns[r], int(r));
  }
  for (size_t i = 0; i < own.size(); ++i) *own[i] = std::move(mine[i]);
}

}  // namespace vprof::analyzer
