// Inherent vs avoidable variance (docs/method.md, "Beyond the papers"):
// with interval type labels,
//   Var(L) = E[Var(L | type)] + Var(E[L | type])
// (population moments, so the two parts add up to the whole exactly). The
// between-type part is work the user asked for; the within-type part is what
// the tree should explain, type by type: each type also gets the variance
// tree of its own intervals (type_trees).
#ifndef VPROF_ANALYZER_TREE_BY_TYPE_H
#define VPROF_ANALYZER_TREE_BY_TYPE_H

#include <string>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/names/names.h"
#include "analyzer/tree/columns.h"
#include "analyzer/tree/variance_tree.h"

namespace vprof::analyzer {

struct TypeStats {
  std::string type;  // "" = unlabeled
  size_t intervals = 0;
  double mean_ns = 0, variance_ns2 = 0;  // population variance within the type
  // The variance tree over this type's intervals only (type_trees): the
  // same nodes, with shares Cov(X, root | type) / Var(root | type).
  VarNode tree;
};

struct TypeSplit {
  std::vector<TypeStats> types;  // by number of intervals, largest first
  double within_fraction = 0, between_fraction = 0;
  bool labeled = false;          // some interval had a type label
};

TypeSplit split_by_type(const CriticalPaths &cp, const Columns &c,
                        const std::vector<std::string> &labels);

// What type_trees reads of one run.
struct TypeRun {
  const CriticalPaths *paths;
  const Columns *columns;
  const std::vector<std::string> *labels;  // the run's label table (types by name)
  const Names *names;
};

// Fills each type's tree: the variance tree (tree/variance_tree.h) built
// over that type's intervals of each run, matched by the type's name, and
// merged over the runs by fractions as the whole tree is (runs[0] is the
// base; tree/merge_runs.h). A type only later runs have is left out, as in
// `split`, which is the base run's. Costs one copy of a type's rows of the
// matrix at a time.
void type_trees(TypeSplit &split, const std::vector<TypeRun> &runs, const std::string &root_label);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_BY_TYPE_H
