#include "analyzer/tree/merge_runs.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

namespace vprof::analyzer {
namespace {

void index_broken_down(const VarNode &n, std::unordered_map<std::string, const VarNode *> &out) {
  if (!n.children.empty()) out.emplace(n.key, &n);
  for (const auto &c : n.children) index_broken_down(c, out);
}

// Contributions scale by the later run's variance of the grafted node.
void rescale(VarNode &n, double scale) {
  n.contribution = n.value_ns2 * scale;
  for (auto &c : n.children) rescale(c, scale);
}

// Shares are the later run's, each moved by its part of `delta`, the grafted
// node's merged share less its share there: split among a node's children by
// the size of their shares, and so on down, so that the parts still add up
// to the whole. Where the children's shares have one sign this is the ratio
// merged / later, as fractions. Where they have both (a group commit: the
// leader's fsync against the followers' wait for it) that ratio of a small
// later share sent both past 100% (minidb's demo: fsync at 203% of Var, its
// wait at -124%, the node 6.4% merged and a fraction of that in the run);
// here each moves by at most delta.
void shift_children(VarNode &n, double delta) {
  double sum = 0;
  for (const auto &c : n.children)
    if (c.share) sum += std::fabs(*c.share);
  if (sum == 0) return;
  for (auto &c : n.children) {
    if (!c.share) continue;
    const double d = delta * std::fabs(*c.share) / sum;
    shift_children(c, d);
    c.share = *c.share + d;
  }
}

// A site broken down only around what its uninstrumented callee re-entered
// (variance_tree.cc) has a "(uninstrumented part)" child: a run that
// instruments the callee breaks it down for real. Null when n has none.
const VarNode *uninstrumented_part(const VarNode &n) {
  for (const auto &c : n.children)
    if (c.key.size() > n.key.size() && c.key.compare(n.key.size(), std::string::npos,
                                                     "/uninstrumented") == 0)
      return &c;
  return nullptr;
}

// The part of n's variance outside the functions its callee re-entered (0
// when n has no "(uninstrumented part)"): that part, and what the callee's
// time split into beside it, the Held parts of a wait inside the callee, its
// (preempted) and (recorder) leaves. On memcached, do_item_replace was not
// instrumented in the run that instrumented do_item_link, which it calls:
// the site's parts were do_item_link (37% of Var), its waits' Held parts and
// (preempted) (40%) and a sliver of uninstrumented part; counting the
// sliver alone kept this breakdown over the run that instrumented
// do_item_replace, and the planted stall's waits stayed "held by do_item_link
// at item_link_q" for the rest of the session.
double uninstrumented_fraction(const VarNode &n) {
  if (!uninstrumented_part(n)) return 0;
  double share = 0, value = 0;
  bool shares = n.share && *n.share != 0;
  for (const auto &c : n.children) {
    if (c.kind == VarNode::Kind::Cov || c.key.compare(n.key.size(), 4, "/fn:") == 0) continue;
    shares = shares && c.share;
    share += std::fabs(c.share.value_or(0.0));
    value += std::fabs(c.value_ns2);
  }
  if (shares) return std::min(1.0, share / std::fabs(*n.share));
  return n.value_ns2 != 0 ? std::min(1.0, value / std::fabs(n.value_ns2)) : 1.0;
}

// The functions n's breakdown shows entered at n (its children keyed
// "fn:NAME"), but those on the path above: re-entered, not called there.
std::set<std::string> entered(const VarNode &n, const std::vector<std::string> &above) {
  std::set<std::string> out;
  for (const auto &c : n.children)
    if (c.kind != VarNode::Kind::Cov && !c.functions.empty() &&
        c.key.compare(n.key.size(), std::string::npos, "/fn:" + c.functions[0]) == 0 &&
        std::find(above.begin(), above.end(), c.functions[0]) == above.end())
      out.insert(c.functions[0]);
  return out;
}

// A later breakdown of a site that an earlier run broke down only around
// what its uninstrumented callee re-entered instruments more of what the
// site calls when it shows every function the earlier shows entered there
// and more (a re-entered function on the path above does not count: Apache's
// output filters call ap_pass_brigade, which calls the next filter through
// a pointer; the run that instruments the filters shows them where the
// earlier showed ap_pass_brigade again).
bool instruments_more(const VarNode &earlier, const VarNode &later, const std::vector<std::string> &above) {
  const std::set<std::string> before = entered(earlier, above), after = entered(later, above);
  return after.size() > before.size() && std::includes(after.begin(), after.end(), before.begin(), before.end());
}

// The functions a wait's Held parts name as where a holder outside
// instrumented code released ("held:outside:F", variance_tree.cc).
std::set<std::string> outside_places(const VarNode &wait) {
  static const std::string tag = "/" + std::string(kHeldOutsideKey) + ":";
  std::set<std::string> out;
  for (const auto &c : wait.children) {
    const size_t at = c.key.rfind(tag);
    if (at != std::string::npos && c.key.find('/', at + 1) == std::string::npos)
      out.insert(c.key.substr(at + tag.size()));
  }
  return out;
}

// The share of a wait's Held parts whose holder nothing names ("held by
// (outside)": an older trace, a binary whose symbols are gone).
double unnamed_outside(const VarNode &wait) {
  static const std::string tag = "/" + std::string(kHeldOutsideKey);
  double s = 0;
  for (const auto &c : wait.children)
    if (c.key.size() >= tag.size() && c.key.compare(c.key.size() - tag.size(), tag.size(), tag) == 0)
      s += std::fabs(c.share.value_or(0.0));
  return s;
}

// Whether a later run's Held parts of the same wait name holders the
// earlier's did not:
// - the earlier named a holder by its call of F, not broken down, and the
//   later names places inside F (the run that followed F as a cause);
// - the earlier named a holder only by where it released outside
//   instrumented code, and the later run instrumented that function
//   (iterate follows such a cause), so its parts say where inside it the
//   holder was (tests/iterate: "held by background" became "held by
//   background at flush_log");
// - or the earlier could not name the holder at all (`held by (outside)`, a
//   trace of a vprof before release places) and the later leaves less than
//   half of that unnamed (a session resumed with this vprof).
// The callees a wait's Held parts name as where their holders were, at a
// call site not broken down ("held:site:CALLER>CALLEE#n": the part's function).
std::set<std::string> held_callees(const VarNode &wait) {
  std::set<std::string> out;
  for (const auto &c : wait.children) {
    const size_t at = c.key.rfind("/held:site:");
    if (at != std::string::npos && c.key.find('/', at + 1) == std::string::npos && !c.functions.empty())
      out.insert(c.functions.front());
  }
  return out;
}

// Whether one of the later run's Held parts names a place inside function f
// (its body, or a call site in it): the run instrumented f.
bool names_a_place_inside(const VarNode &wait, const std::string &f) {
  const std::string site = "/held:site:" + f + ">", body = "/held:fn:" + f;
  for (const auto &c : wait.children) {
    const size_t at = c.key.rfind("/held:");
    if (at == std::string::npos || c.key.find('/', at + 1) != std::string::npos) continue;
    if (c.key.compare(at, site.size(), site) == 0 ||
        (c.key.size() == at + body.size() && c.key.compare(at, body.size(), body) == 0))
      return true;
  }
  return false;
}

bool names_the_holders_deeper(const VarNode &earlier, const VarNode &later) {
  // A cause followed (a stall whose own time the run that
  // instrumented it broke down, while its waits kept the earlier run's Held
  // parts, became two smaller causes): the later run names where inside the
  // function the earlier named as the holder's callee the holder was.
  for (const std::string &f : held_callees(earlier))
    if (names_a_place_inside(later, f)) return true;
  const std::set<std::string> before = outside_places(earlier), after = outside_places(later);
  const double unnamed_before = unnamed_outside(earlier), unnamed_after = unnamed_outside(later);
  if (unnamed_after <= unnamed_before + 0.01)  // (not a run that names less: an older trace)
    for (const auto &f : before)
      if (!after.count(f)) return true;
  return unnamed_before >= 0.01 && unnamed_after < 0.5 * unnamed_before;
}

void graft(VarNode &n, const std::unordered_map<std::string, const VarNode *> &later,
           std::vector<Graft> *grafts, std::vector<std::string> &above) {
  if (n.kind == VarNode::Kind::Cov) return;
  const bool pseudo = uninstrumented_part(n) != nullptr;
  auto children = [&] {
    if (!n.functions.empty()) above.push_back(n.functions[0]);
    for (auto &c : n.children) graft(c, later, grafts, above);
    if (!n.functions.empty()) above.pop_back();
  };
  // Held parts break a wait down by its holders, not by calls: a run that
  // instruments the function they sit in (the waits then deeper inside it)
  // breaks it down for real.
  const bool held = held_only(n);
  if (n.children.empty() || pseudo || held || time_split_only(n)) {
    auto it = later.find(n.key);
    // A later breakdown that still has such a part wins when it holds less
    // than half as much: on PostgreSQL, instrumenting the 45 targets of
    // node->ExecProcNode left a sliver (0.0%) of it where the run before had
    // 82.5% of Var, and keeping the earlier run's stopped the session there.
    // Or when it instruments what the site calls, leaving no more of it
    // uninstrumented: on Apache (and tests/iterate/hooks.c) both runs left
    // ~0% there, the earlier's variance sitting in re-entered copies of the
    // site further down, whose keys the later run's tree no longer has, and
    // the run that named the filter was dropped from the merged report.
    bool usable = it != later.end() && it->second->value_ns2 > 0 &&
                  !(held && held_only(*it->second) && !names_the_holders_deeper(n, *it->second));
    if (usable && pseudo) {
      const double before = uninstrumented_fraction(n), after = uninstrumented_fraction(*it->second);
      // Less than half, by a margin: two slivers (0.01% and 0.02% of the
      // node) are noise, and comparing them alone swapped breakdowns at random.
      usable = (after < 0.5 * before && before - after >= 0.01) ||
               (after <= before + 0.05 && instruments_more(n, *it->second, above));
    }
    if (!usable) {
      children();
      return;
    }
    // Every term of the later run is relative to that run's variance of this
    // node; all descendants share the scale (ratios multiply down the tree).
    double scale = n.contribution / it->second->value_ns2;
    const double later_share = it->second->share.value_or(0.0);
    if (grafts) grafts->push_back({n.label, it->second->run, n.run, n.share.value_or(0.0), later_share});
    n.children = it->second->children;
    for (auto &c : n.children) rescale(c, scale);
    shift_children(n, n.share.value_or(0.0) - later_share);
    n.kind = VarNode::Kind::Var;
    return;
  }
  children();
}

// What a call site is (what it calls, what it may reach) is the newest
// run's manifest's word: a later vprof may know more of a site an earlier
// run measured. On MariaDB, lock.rd_lock was measured (and kept in the merge)
// by runs whose manifests said "a call through a pointer, no targets"; the
// runs after the fix listed the functions it may reach, and the session
// still read the old word and left it unreached.
void index_sites(const VarNode &n, std::unordered_map<std::string, const CallSiteInfo *> &out) {
  if (n.kind != VarNode::Kind::Cov && n.call_site) out.emplace(n.key, &*n.call_site);
  for (const auto &c : n.children) index_sites(c, out);
}

void newest_sites(VarNode &n, const std::unordered_map<std::string, const CallSiteInfo *> &newest) {
  if (n.kind != VarNode::Kind::Cov && n.call_site)
    if (auto it = newest.find(n.key); it != newest.end()) n.call_site = *it->second;
  for (auto &c : n.children) newest_sites(c, newest);
}

}  // namespace

bool runs_disagree(const Graft &g) {
  const double diff = std::fabs(g.merged_share - g.run_share);
  const double larger = std::max(std::fabs(g.merged_share), std::fabs(g.run_share));
  return diff >= 0.10 && diff >= 0.25 * larger;
}

VarNode merge_runs(const std::vector<VarNode> &runs, std::vector<Graft> *grafts) {
  if (runs.empty()) return VarNode{};
  VarNode merged = runs[0];
  for (size_t r = 1; r < runs.size(); ++r) {
    std::unordered_map<std::string, const VarNode *> later;
    index_broken_down(runs[r], later);
    std::vector<std::string> above;
    graft(merged, later, grafts, above);
  }
  std::unordered_map<std::string, const CallSiteInfo *> newest;
  for (size_t r = runs.size(); r-- > 1;) index_sites(runs[r], newest);
  newest_sites(merged, newest);
  number_tree(merged);
  return merged;
}

}  // namespace vprof::analyzer
