// Projects the critical paths' per-trie-node self times onto the shape of the
// variance tree and sums them up the tree, giving per interval the value of
// every node (its total); its own leaf (its self time: the body of a function
// or call site, "(outside)" for the latency root) is the total less the
// children's.
//
// With a root function the tree starts at the outermost frame of that
// function on each stack; time on no such stack is outside the root and is
// not part of the tree (docs/method.md, "The variance tree": the root is L or
// a chosen root function's time).
#ifndef VPROF_ANALYZER_TREE_COLUMNS_H
#define VPROF_ANALYZER_TREE_COLUMNS_H

#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"

namespace vprof::analyzer {

struct ShapeNode {
  int parent = -1;  // -1: the root
  FrameKind kind = FrameKind::Root;
  uint32_t id = 0;         // function or call-site id
  uint32_t callee_fn = 0;  // Site: the function entered under it
  std::vector<int> children;
};

struct Columns {
  std::vector<ShapeNode> nodes;  // nodes[0] is the root; parents precede children
  Eigen::MatrixXd total;         // intervals x nodes: the node's own time + all descendants'
  Eigen::VectorXd latency;       // per interval, ns
  std::vector<bool> has_self;    // per node: some interval has own (body) time there

  // Into out: a node's total or its own time per interval, the total less
  // its children's (exact: the values are integer ns). Own time is kept as a
  // difference, not a second matrix, which would double the memory per
  // interval and its page faults.
  template <class Out>
  void part_into(int node, bool self, Out &&out) const {
    out = total.col(node);
    if (self)
      for (int ch : nodes[size_t(node)].children) out -= total.col(ch);
  }
  double self_at(Eigen::Index row, int node) const {
    double v = total(row, node);
    for (int ch : nodes[size_t(node)].children) v -= total(row, ch);
    return v;
  }
};

// root_fn == 0: the root is the interval latency.
Columns build_columns(const StackTrie &trie, const CriticalPaths &cp, uint32_t root_fn);

// The same columns for some of the intervals only (rows of c, in that order):
// the tree within one interval type (tree/by_type.h).
Columns select_rows(const Columns &c, const std::vector<Eigen::Index> &rows);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_COLUMNS_H
