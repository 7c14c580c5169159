// Combines variance trees of several runs by fractions (docs/method.md, "The
// variance tree"). Functions are refined in separate runs, so each run's
// Var(root) differs a little; a node broken down in a later run keeps its
// contribution from the earlier tree, and each term grafted under it gets
//   contribution = (term / that node's variance in the run that broke it down)
//                  × the node's contribution,
// and its share from that run, moved by its part of the difference between
// the node's merged share and its share there (split by the size of the
// siblings' shares, docs/method.md), with the later run's id kept on every
// grafted node. Nodes are matched by
// key (the path of function names / call-site locations), not by id, because
// ids are renumbered by every instrumentation. Where several runs break the
// same node down, the earliest run's breakdown is kept, except that a call
// site broken down only around what its uninstrumented callee re-entered
// ("<callee> (uninstrumented part)" beside the re-entered functions) yields to
// a later run's breakdown whose such part holds less than half as much of the
// node (one that instruments the callee, or a pointer call's targets), or no
// more of it while it shows a function called there that the earlier does
// not and that is not on the path above (what a re-entered callee hid: a
// filter chain's recursion through one pointer call, Apache's).
#ifndef VPROF_ANALYZER_TREE_MERGE_RUNS_H
#define VPROF_ANALYZER_TREE_MERGE_RUNS_H

#include <string>
#include <vector>

#include "analyzer/tree/variance_tree.h"

namespace vprof::analyzer {

// A node that a later run broke down, as the merge grafted it: its share in
// the merged tree (measured in `from_run`, or grafted from it) and its share
// in `run`, whose breakdown now sits under it, its shares moved to add up to
// the merged share.
struct Graft {
  std::string label;
  int run = 0;
  int from_run = 0;
  double merged_share = 0;
  double run_share = 0;
};

// runs[0] is the base; returns the merged tree (ids renumbered). With
// `grafts`, lists every node a later run's breakdown was grafted under.
VarNode merge_runs(const std::vector<VarNode> &runs, std::vector<Graft> *grafts = nullptr);

// The two runs of a graft disagree about its node: its shares differ by at
// least 0.10 of Var(root) and by at least a quarter of the larger one. The
// merge assumes the runs measure the same workload, each run's Var(root)
// differing a little; a disagreement this large (a run on a loaded machine,
// a workload in another regime) means the shares grafted below the node are
// fractions of a different variance. A heuristic for a warning, not a test.
bool runs_disagree(const Graft &g);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_MERGE_RUNS_H
