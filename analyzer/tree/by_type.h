// Inherent vs avoidable variance (METHOD §7): with interval type labels,
//   Var(L) = E[Var(L | type)] + Var(E[L | type])
// (population moments, so the two parts add up to the whole exactly). The
// between-type part is work the user asked for; the within-type part is what
// the tree should explain.
#ifndef VPROF_ANALYZER_TREE_BY_TYPE_H
#define VPROF_ANALYZER_TREE_BY_TYPE_H

#include <string>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/tree/columns.h"

namespace vprof::analyzer {

struct TypeStats {
  std::string type;  // "" = unlabeled
  size_t intervals = 0;
  double mean_ns = 0, variance_ns2 = 0;  // population variance within the type
};

struct TypeSplit {
  std::vector<TypeStats> types;  // by number of intervals, largest first
  double within_fraction = 0, between_fraction = 0;
  bool labeled = false;          // some interval had a type label
};

TypeSplit split_by_type(const CriticalPaths &cp, const Columns &c,
                        const std::vector<std::string> &labels);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_BY_TYPE_H
