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
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"
#include "common/expected.h"

namespace vprof::analyzer {

struct ShapeNode {
  int parent = -1;  // -1: the root
  FrameKind kind = FrameKind::Root;
  uint32_t id = 0;         // function or call-site id
  uint32_t callee_fn = 0;  // Site: the function entered under it
  std::vector<int> children;
};

// Intervals × nodes, kept by column and only where a cell is not zero: an
// interval's critical path touches a few of a large tree's nodes. Dense, a late
// MariaDB session's run (≈ 40 000 intervals × 11 600 nodes: Held parts multiply
// the nodes) took 3.7 GB, and the analysis keeps every run's.
// Column c's values are value[begin[c] .. begin[c+1]). A column with a cell
// in every row (dense: the root, and most nodes near it) keeps no rows: its
// i-th value is row i's. Another column's rows, ascending, are
// row[row_begin[c] ..], one a value (PostgreSQL's runs: 91% of the cells are
// in dense columns, whose rows were a third of the columns' memory). A cell
// is an integer number of ns, so sums and differences are exact; when every
// cell is below 2^31 ns (2.1 s) they are kept as 32-bit integers (`narrow`,
// `value` then empty), half the memory, and read back exactly.
struct NodeTotals {
  Eigen::Index rows = 0;
  std::vector<size_t> begin{0};      // cols + 1, into the values
  std::vector<size_t> row_begin{0};  // cols + 1, into row: a dense column has none
  std::vector<int32_t> row;
  std::vector<double> value;    // the values, or none: then
  std::vector<int32_t> narrow;  // the same values, each below 2^31

  Eigen::Index cols() const { return Eigen::Index(begin.size() - 1); }
  size_t nonzeros() const { return begin.back(); }
  size_t cells(int c) const { return begin[size_t(c) + 1] - begin[size_t(c)]; }
  bool any(int c) const { return cells(c) > 0; }
  bool dense(int c) const { return cells(c) == size_t(rows); }
  // f(row, value) for each of column c's cells, rows ascending.
  template <class F>
  void for_each(int c, F &&f) const {
    if (narrow.empty()) cells_of(c, value.data(), f);
    else cells_of(c, narrow.data(), f);
  }
  double at(Eigen::Index r, int c) const;
  // out(r) += k · cell(r, c) for every row.
  template <class Out>
  void add_into(int c, double k, Out &&out) const {
    if (dense(c)) {  // every row: no indices to follow
      if (narrow.empty())
        out += k * Eigen::Map<const Eigen::VectorXd>(value.data() + begin[size_t(c)], rows);
      else
        out += k * Eigen::Map<const Eigen::VectorXi>(narrow.data() + begin[size_t(c)], rows).cast<double>();
      return;
    }
    for_each(c, [&](Eigen::Index r, double v) { out(r) += k * v; });
  }
  // Appends the next column from its cells, rows ascending, to `narrow`
  // when `into_narrow` (each value must fit), else to `value`.
  void push_column(const std::vector<std::pair<int32_t, double>> &cells, bool into_narrow);
  Eigen::VectorXd col(int c) const {
    Eigen::VectorXd v = Eigen::VectorXd::Zero(rows);
    add_into(c, 1.0, v);
    return v;
  }

 private:
  template <class V, class F>
  void cells_of(int c, const V *v, F &f) const {
    const size_t b = begin[size_t(c)], e = begin[size_t(c) + 1];
    if (dense(c)) {
      for (size_t i = b; i < e; ++i) f(Eigen::Index(i - b), double(v[i]));
      return;
    }
    const int32_t *r = row.data() + row_begin[size_t(c)] - b;
    for (size_t i = b; i < e; ++i) f(Eigen::Index(r[i]), double(v[i]));
  }
};

struct Columns {
  std::vector<ShapeNode> nodes;  // nodes[0] is the root; parents precede children
  NodeTotals total;              // intervals x nodes: the node's own time + all descendants'
  Eigen::VectorXd latency;       // per interval, ns
  std::vector<bool> has_self;    // per node: some interval has own (body) time there

  Eigen::Index rows() const { return total.rows; }
  // The root's total per interval (L, or the root function's time).
  Eigen::VectorXd root() const { return total.col(0); }
  // Into out: a node's total or its own time per interval, the total less
  // its children's (exact: the values are integer ns).
  template <class Out>
  void part_into(int node, bool self, Out &&out) const {
    out.setZero();
    total.add_into(node, 1.0, out);
    if (self)
      for (int ch : nodes[size_t(node)].children) total.add_into(ch, -1.0, out);
  }
  double self_at(Eigen::Index row, int node) const {
    double v = total.at(row, node);
    for (int ch : nodes[size_t(node)].children) v -= total.at(row, ch);
    return v;
  }
};

// root_fn == 0: the root is the interval latency. Fails, before allocating
// them, when the cells would take more than max_bytes (kCellBytes each).
inline constexpr uint64_t kCellBytes =
    sizeof(decltype(NodeTotals::row)::value_type) + sizeof(decltype(NodeTotals::value)::value_type);
Expected<Columns> build_columns(const StackTrie &trie, const CriticalPaths &cp, uint32_t root_fn,
                                uint64_t max_bytes);

// The same columns for some of the intervals only (rows of c, in that order):
// the tree within one interval type (tree/by_type.h).
Columns select_rows(const Columns &c, const std::vector<Eigen::Index> &rows);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_COLUMNS_H
