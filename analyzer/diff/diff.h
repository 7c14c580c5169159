// Two analyses side by side (`vprof diff`, `vprof gate`; docs/diff.md): the
// latency distributions, and the change in Var(L) attributed to the nodes of
// the variance tree. With covariance shares the attribution is exact over any
// tiling: for the parts X_i of a node,
//   ΔCov(node, L) = Σ_i ΔCov(X_i, L),   ΔVar(L) = ΔCov(root, L),
// where ΔCov(X, L) = Cov_head(X, L_head) − Cov_base(X, L_base) and a part
// that exists on one side only counts 0 on the other. Nodes are matched by
// key (caller > callee # ordinal paths, variance_tree.h), so a call site that
// moved (other file or line) is the same node, and the diff says it moved.
//
// A side is one or more profiles (interleaved runs of one build); of each,
// its last run (the most refined one, for an iterate session). The side's
// intervals are pooled. Confidence intervals are percentile bootstrap
// intervals, the two sides resampled independently: intervals by Poisson(1)
// weights (factors/resample.h), and with several runs on a side the runs too
// (drawn with replacement, then their intervals): run-to-run noise, a loaded
// machine or a different disk, widens the interval as it should.
//
// Factors of the change are ranked as analyze ranks factors (docs/method.md,
// "Factors", the same code), on a tree whose shares are ΔCov(X, L) /
// Var_base(L): the share of the baseline's variance each node's change is. A
// node broken down on one side only is a leaf of that tree (its parts on the
// other side have nothing to be compared with).
#ifndef VPROF_ANALYZER_DIFF_DIFF_H
#define VPROF_ANALYZER_DIFF_DIFF_H

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"

#include "analyzer/factors/defaults.h"
#include "analyzer/profile/profile.h"

namespace vprof::analyzer {

struct DiffOptions {
  int bootstrap = 400;       // resamples per side; 0: no intervals
  double confidence = 0.95;  // two-sided level of every interval
  uint64_t seed = 15;
  int k = kDefaultK;         // factors of the change, as analyze's -k, -d, -e
  double d = kDefaultD;      // |ΔCov| / Var_base at least this
  double e = kDefaultE;
  size_t interval_nodes = 20;  // nodes (by |ΔCov|) given an interval, beside the factors
};

using Interval = std::optional<std::pair<double, double>>;

// head / base of one statistic, and the interval of that ratio.
struct Ratio {
  double base = 0, head = 0, ratio = 0;
  Interval ci;
};

struct DistDiff {
  size_t base_intervals = 0, head_intervals = 0;
  Ratio mean, stddev, variance, p50, p90, p99, p999;
};

enum class NodeStatus { Same, Moved, Appeared, Disappeared };
const char *status_name(NodeStatus s);

struct NodeDiff {
  std::string key, label, factor, parent_key;
  std::vector<std::string> functions;
  std::optional<CallSiteInfo> base_site, head_site;
  NodeStatus status = NodeStatus::Same;
  int depth = 0;
  bool leaf = true;        // nothing below it in the comparison
  bool one_sided = false;  // broken down on one side only
  double base_cov = 0, head_cov = 0;  // Cov(X, L) in ns², per side
  double delta = 0;                   // head_cov − base_cov
  double of_base = 0;                 // delta / Var_base(L)
  double part = 0;                    // delta / ΔVar(L)
  Interval ci;                        // of of_base
};

struct FactorDiff {
  int rank = 0;
  std::string name;
  std::vector<std::string> functions;
  double of_base = 0, part = 0;
  Interval ci;              // of of_base
  int height = 0;
  double score = 0;
  std::string site_label;   // its largest instance's label
  std::optional<CallSiteInfo> site;
  std::string caller;       // the function the largest instance is called from ("" at the root)
  std::string held_wait;    // a Held part: the wait it held (its function), else ""
  // A cause of the change (Diff::causes): the part of ΔVar in its own time,
  // and in the waits it held up, by the wait's function, largest first.
  struct HeldUp {
    std::string wait;
    double part = 0;
  };
  double own_part = 0;
  std::vector<HeldUp> held_up;
};

struct Diff {
  std::string root;
  std::vector<std::string> base_sources, head_sources;
  BuildInfo base_build, head_build;
  DistDiff dist;
  double delta_var = 0;                 // ns²
  std::vector<NodeDiff> nodes;          // every node, by |delta| (largest first)
  std::vector<FactorDiff> factors;      // selected (rank > 0) first, by |score|
  // The change's causes (factors/causes.h over the tree of changes): each
  // name's own change plus the change of every Held part naming it as the
  // holder; ranked ones first, by change. Only when the change has a Held
  // part (causes_held); otherwise each cause is a terminal node's factor.
  std::vector<FactorDiff> causes;
  bool causes_held = false;
  size_t moved = 0, appeared = 0, disappeared = 0;
  double confidence = 0.95;
};

// base and head: at least one profile each (interleaved runs of one build).
// Errors (exit 2 in the commands): the sides have other roots; they share no
// node of the tree below the root (other programs or other instrumentation);
// a side has no interval.
Expected<Diff> diff_profiles(const std::vector<const Profile *> &base,
                             const std::vector<const Profile *> &head, const DiffOptions &o);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_DIFF_DIFF_H
