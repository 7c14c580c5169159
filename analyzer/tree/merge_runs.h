// Combines variance trees of several runs by fractions (METHOD §4). Functions
// are refined in separate runs, so each run's Var(root) differs a little; a
// node broken down in a later run keeps its contribution from the earlier
// tree, and each term grafted under it gets
//   contribution = (term / that node's variance in the run that broke it down)
//                  × the node's contribution,
// with the later run's id kept on every grafted node. Nodes are matched by
// key (the path of function names / call-site locations), not by id, because
// ids are renumbered by every instrumentation. Where several runs break the
// same node down, the earliest run's breakdown is kept, except that a call
// site broken down only around what its uninstrumented callee re-entered
// ("<callee> (uninstrumented part)" beside the re-entered functions) yields to
// a later run's breakdown without such a part (one that instruments the callee).
#ifndef VPROF_ANALYZER_TREE_MERGE_RUNS_H
#define VPROF_ANALYZER_TREE_MERGE_RUNS_H

#include <vector>

#include "analyzer/tree/variance_tree.h"

namespace vprof::analyzer {

// runs[0] is the base; returns the merged tree (ids renumbered).
VarNode merge_runs(const std::vector<VarNode> &runs);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_MERGE_RUNS_H
