// The variance tree (docs/method.md). A node Y = X_1 + ... + X_n (its parts:
// the node's own leaf — body, "(outside)" at the latency root, or "<callee>
// (uninstrumented part)" for a site whose uninstrumented callee re-entered
// instrumented code in some calls — and each child call site / function /
// queue wait) is broken down into one child term per
// Var(X_i) and one per pair, valued 2·Cov(X_i, X_j), so the terms under a node
// add up to the node's value exactly (up to rounding). contribution = term /
// Var(root). Parts that are zero in every interval are left out: they add
// nothing and would only add empty covariance terms.
//
// Every part (a Var or Leaf term) also carries its covariance share,
// Cov(X, root) / Var(root) (docs/method.md, "The variance tree", the Euler
// allocation): the shares of a node's parts add up to the node's share exactly,
// the root's is 1, and a Cov term has none (its covariance is split between its
// two parts' shares).
#ifndef VPROF_ANALYZER_TREE_VARIANCE_TREE_H
#define VPROF_ANALYZER_TREE_VARIANCE_TREE_H

#include <optional>
#include <string>
#include <vector>

#include "analyzer/names/names.h"
#include "analyzer/tree/columns.h"

namespace vprof::analyzer {

// One summand column: a shape node's total, or its self time.
struct Part {
  int node = -1;
  bool self = false;
};

struct VarNode {
  enum class Kind { Var, Cov, Leaf };
  int id = 0;
  Kind kind = Kind::Var;
  std::string label;
  std::vector<std::string> functions;
  std::optional<CallSiteInfo> call_site;
  std::optional<CallSiteInfo> other_call_site;  // Cov: the second part's call site
  double value_ns2 = 0;
  double contribution = 0;
  std::optional<double> share;  // Var and Leaf terms: Cov(X, root) / Var(root)
  int run = 0;
  std::string key;     // identity across runs (a path of part names)
  std::string factor;  // factor name ("f", "f (body)", "cov(f, g)"); empty: not a factor
  bool body = false;   // a Var/Leaf term of a body
  // The cause this part goes to when it is not its factor's (causes.h): a
  // loop's calls and its function's body are that function's ("" = factor).
  std::string cause;
  Part a, b;           // the column(s) behind the term (b: Cov only)
  std::vector<VarNode> children;
};

const char *kind_name(VarNode::Kind k);

// A Held part: a wait's blocked time while its waker, in another interval,
// was at one place ("held:..." the key's last part; timeline.h, FrameKind).
bool is_held_part(const VarNode &n);
// A Held part's key (its last component) when its holder ran no
// instrumented function: kHeldOutsideKey when where it released is not
// known, kHeldOutsideKey ":" F when it released in F.
inline constexpr char kHeldOutsideKey[] = "held:outside";
// The keys of the Held parts whose holder was off its CPU: paused by the
// recorder, and preempted at a place (this prefix, then the place's key).
inline constexpr char kHeldRecorderKey[] = "held:recorder";
inline constexpr char kHeldPreemptedPrefix[] = "held:preempted:";
// A Held part whose holder was off its CPU: the machine's, no cause.
bool held_off_cpu(const VarNode &n);
// A node broken down into Held parts only (with its "(not held)" rest, its
// (preempted) leaves and their covariances): no breakdown by calls, which a
// later run that instruments the callee gives (merge_runs).
bool held_only(const VarNode &n);
// A call not broken down, split only into its running rest and the time it
// was preempted or paused by the recorder: as a leaf, a run that breaks it
// down replaces it (merge_runs).
bool time_split_only(const VarNode &n);

// Whether the node keyed `key` is `ancestor` itself or below it (a key is
// its node's path from the root).
inline bool key_within(const std::string &key, const std::string &ancestor) {
  return key.compare(0, ancestor.size(), ancestor) == 0 && (key.size() == ancestor.size() || key[ancestor.size()] == '/');
}

// root_label: "latency" or the root function's name.
VarNode build_variance_tree(const Columns &c, const Names &names, const std::string &root_label,
                            int run = 0);

// Renumbers ids in pre-order (after merging).
void number_tree(VarNode &root);

// Sum of the children's contributions, for the self-check.
double children_contribution(const VarNode &n);
// Sum of the children's shares (Cov terms have none).
double children_share(const VarNode &n);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_VARIANCE_TREE_H
