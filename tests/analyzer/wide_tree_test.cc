// A wide tree (a server's hundreds of Held parts or callees under one node,
// each in a few intervals) costs its paths, not intervals × nodes (a late
// MariaDB run took 3.7 GB and 14 s): the node totals are kept by column,
// only the cells a critical path touches (analyzer/tree/columns.h); sparse
// parts' covariances come from their cells, and a wide node keeps its largest
// covariance terms and sums the rest in one (variance_tree.cc).
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/tree/columns.h"
#include "analyzer/tree/stats.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

constexpr int kCallees = 300;

// Interval i: R(1) calls callee 2 + i % width through its own site for
// 10 + i ns (more on some callees), after some of R's body.
trace::Trace wide_trace(int intervals, int width = kCallees) {
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < intervals; ++i) {
    int64_t t = int64_t(i) * 100000;
    uint32_t k = uint32_t(i % width);
    int64_t x = 10 + i + (k % 3 == 0 ? 5 * (i % 17) : 0);
    int64_t body = 1 + i % 5 * (i % 7);  // R's own time varies too: a dense part
    th.begin(t, uint64_t(i) + 1).enter(t, 1);
    th.call(t + body, t + body + x, 1 + k, 2 + k);
    th.exit(t + body + x, 1).end(t + body + x, uint64_t(i) + 1);
  }
  return tb.build();
}

Names wide_names() {
  Names n = make_names({{1, "R"}}, {});
  for (uint32_t k = 0; k < kCallees; ++k) {
    n.functions[2 + k] = {"f" + std::to_string(k), "t.cc", 1};
    n.sites[1 + k] = {1, "f" + std::to_string(k), "t.cc", int(10 + k), 3};
  }
  return n;
}

// The wide trace analysed as one run, without resamples.
std::unique_ptr<RunAnalysis> analyzed(int intervals, int width = kCallees) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  return analyze_run(wide_trace(intervals, width), wide_names(), opt, 0).value();
}

TEST(Columns, AWideTreeKeepsOnlyTheCellsItsPathsTouch) {
  const int n = 3000;
  auto run = analyzed(n);
  const Columns &c = run->columns;
  ASSERT_EQ(c.rows(), n);
  ASSERT_GT(c.total.cols(), kCallees) << "a node per callee";
  // Each interval's path is the root, R and one callee's site: 3 or 4 cells,
  // where a dense matrix held every node for every interval.
  EXPECT_LE(c.total.nonzeros(), size_t(4 * n));
  // And every cell is right: the root is the latency, the callee's site its
  // time, every other site nothing.
  std::map<uint32_t, int> site_node;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.nodes[i].kind == FrameKind::Site) site_node[c.nodes[i].id] = int(i);
  ASSERT_EQ(site_node.size(), size_t(kCallees));
  for (int i = 0; i < n; i += 7) {
    EXPECT_EQ(c.total.at(i, 0), double(run->paths.rows[size_t(i)].latency_ns));
    for (int k : {1, 2, kCallees - 1}) {
      double want = (i % kCallees == k) ? 10.0 + i : 0.0;
      EXPECT_EQ(c.total.at(i, site_node.at(uint32_t(1 + k))), want) << "interval " << i;
    }
  }
}

// A column with a cell in every interval (the root, R) keeps its values
// only, the others their rows too; every cell reads back the same.
TEST(Columns, ADenseColumnKeepsNoRowsAndReadsTheSame) {
  const int n = 600;
  auto run = analyzed(n);
  const Columns &c = run->columns;
  const NodeTotals &t = c.total;
  size_t sparse = 0, dense = 0;
  for (int col = 0; col < int(t.cols()); ++col) {
    if (t.cells(col) == size_t(n)) {
      ++dense;
      EXPECT_TRUE(t.dense(col)) << col;
      EXPECT_EQ(t.row_begin[size_t(col) + 1], t.row_begin[size_t(col)]) << col;
    } else {
      sparse += t.cells(col);
      EXPECT_FALSE(t.dense(col)) << col;
    }
    const Eigen::VectorXd v = t.col(col);
    for (int r = 0; r < n; ++r) ASSERT_EQ(t.at(r, col), v(r)) << col << " " << r;
    double sum = 0;
    t.for_each(col, [&](Eigen::Index, double x) { sum += x; });
    EXPECT_EQ(sum, v.sum()) << col;
  }
  EXPECT_GE(dense, 2u) << "the root and R";
  EXPECT_EQ(t.row.size(), sparse);
  EXPECT_EQ(t.row_begin.back(), sparse);
  // Rows selected from it: all of them keep the dense columns dense.
  std::vector<Eigen::Index> all(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) all[size_t(r)] = r;
  Columns s = select_rows(c, all);
  EXPECT_EQ(s.total.row.size(), sparse);
  EXPECT_TRUE(s.total.dense(0));
}

TEST(Columns, SelectedRowsInAnyOrderKeepTheirCells) {
  const int n = 900;
  auto run = analyzed(n);
  const Columns &c = run->columns;
  std::vector<Eigen::Index> rows;
  for (int i = n - 1; i >= 0; i -= 3) rows.push_back(i);  // descending, a third
  Columns s = select_rows(c, rows);
  ASSERT_EQ(s.rows(), Eigen::Index(rows.size()));
  for (int col = 0; col < int(c.nodes.size()); ++col) {
    Eigen::VectorXd all = c.total.col(col), some = s.total.col(col);
    for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(some(Eigen::Index(i)), all(rows[i])) << col;
    // A column's rows stay ascending: at() searches them.
    std::vector<Eigen::Index> seen;
    s.total.for_each(col, [&](Eigen::Index r, double) { seen.push_back(r); });
    ASSERT_TRUE(std::is_sorted(seen.begin(), seen.end())) << col;
    ASSERT_EQ(seen.size(), s.total.cells(col)) << col;
  }
  EXPECT_EQ(s.latency(0), c.latency(n - 1));
}

// Var/Cov of two parts from dense columns, as the tree computed them before.
double naive_cov(const Columns &c, const Part &a, const Part &b) {
  Eigen::VectorXd x(c.rows()), y(c.rows());
  c.part_into(a.node, a.self, x);
  c.part_into(b.node, b.self, y);
  x.array() -= x.mean();
  y.array() -= y.mean();
  return x.dot(y) / double(c.rows() - 1);
}

const VarNode *node_of(const VarNode &n, const std::string &label) {
  if (n.label == label) return &n;
  for (const VarNode &ch : n.children)
    if (const VarNode *f = node_of(ch, label)) return f;
  return nullptr;
}

TEST(VarianceTree, SparsePartsCovariancesAreTheDenseProducts) {
  // Six callees, each in a sixth of the intervals: sparse parts (< 1/4),
  // beside R's body, a dense one. Every pair is kept (7 parts, 21 pairs).
  const int n = 600;
  auto run = analyzed(n, 6);
  const Columns &c = run->columns;
  const VarNode *r = node_of(run->tree, "R");
  ASSERT_NE(r, nullptr);
  int vars = 0, covs = 0;
  for (const VarNode &ch : r->children) {
    const double want = ch.kind == VarNode::Kind::Cov ? 2 * naive_cov(c, ch.a, ch.b)
                                                      : naive_cov(c, ch.a, ch.a);
    EXPECT_NEAR(ch.value_ns2, want, 1e-9 * std::abs(r->value_ns2)) << ch.label;
    (ch.kind == VarNode::Kind::Cov ? covs : vars)++;
    if (ch.kind != VarNode::Kind::Cov) {
      // Its share is its covariance with the root over Var(root).
      Eigen::VectorXd x(c.rows()), l = c.root();
      c.part_into(ch.a.node, ch.a.self, x);
      x.array() -= x.mean();
      l.array() -= l.mean();
      EXPECT_NEAR(*ch.share, x.dot(l) / l.squaredNorm(), 1e-9) << ch.label;
    }
  }
  EXPECT_EQ(vars, 7);
  EXPECT_EQ(covs, 21);
}

TEST(VarianceTree, AWideNodeKeepsItsLargestCovariancesAndSumsTheRest) {
  const int n = 1200, width = 60;  // 61 parts: 1 830 pairs, 244 kept
  auto run = analyzed(n, width);
  const Columns &c = run->columns;
  const VarNode *r = node_of(run->tree, "R");
  ASSERT_NE(r, nullptr);
  double sum = 0, smallest_kept = 1e300;
  const VarNode *rest = nullptr;
  int vars = 0, covs = 0;
  for (const VarNode &ch : r->children) {
    sum += ch.value_ns2;
    if (ch.kind != VarNode::Kind::Cov) {
      ++vars;
      continue;
    }
    if (ch.key == r->key + "/cov(other)") {
      rest = &ch;
      continue;
    }
    ++covs;
    smallest_kept = std::min(smallest_kept, std::abs(ch.value_ns2));
    EXPECT_NEAR(ch.value_ns2, 2 * naive_cov(c, ch.a, ch.b), 1e-9 * std::abs(r->value_ns2));
  }
  EXPECT_EQ(vars, width + 1);
  EXPECT_EQ(covs, 4 * (width + 1));
  ASSERT_NE(rest, nullptr);
  EXPECT_EQ(rest->label, "cov(the other 1586 pairs)");
  EXPECT_TRUE(rest->factor.empty()) << "a sum of pairs is no factor";
  // The children still add up to the node's variance.
  EXPECT_NEAR(sum, r->value_ns2, 1e-9 * r->value_ns2);
  // And the kept pairs are the largest: no folded pair is larger.
  std::vector<const VarNode *> parts;
  for (const VarNode &ch : r->children)
    if (ch.kind != VarNode::Kind::Cov) parts.push_back(&ch);
  int larger_folded = 0;
  double folded_sum = 0;
  std::set<std::pair<int, int>> kept;
  for (const VarNode &ch : r->children)
    if (ch.kind == VarNode::Kind::Cov && &ch != rest)
      kept.insert(std::minmax(ch.a.node * 2 + ch.a.self, ch.b.node * 2 + ch.b.self));
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t j = i + 1; j < parts.size(); ++j) {
      const Part &a = parts[i]->a, &b = parts[j]->a;
      if (kept.count(std::minmax(a.node * 2 + a.self, b.node * 2 + b.self))) continue;
      double v = 2 * naive_cov(c, a, b);
      folded_sum += v;
      if (std::abs(v) > smallest_kept * (1 + 1e-9)) ++larger_folded;
    }
  EXPECT_EQ(larger_folded, 0);
  EXPECT_NEAR(rest->value_ns2, folded_sum, 1e-9 * r->value_ns2);
}


// R calls seven sites in every interval: site 1's time is heavy and varies
// (it is most of Var(L)), site 2's follows it at a hundredth, sites 3-7 take a
// few ns at random. Only one pair's covariance is more than 0.01% of Var(L):
// (1, 2). Every other pair is summed into one term (a late MariaDB run's tree
// had 139 580 terms under 0.001% of Var(L), most of the analysis's memory).
TEST(VarianceTree, NegligibleCovariancesAreSummedNotKeptOneByOne) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> heavy(100, 100000), small(0, 20);
  TraceBuilder tb;
  auto &th = tb.thread(1);
  const int n = 600;
  for (int i = 0; i < n; ++i) {
    int64_t t = int64_t(i) * 1000000, u = t + 1;
    const int64_t h = heavy(rng);
    th.begin(t, uint64_t(i) + 1).enter(t, 1);
    for (uint32_t k = 1; k <= 7; ++k) {
      const int64_t x = k == 1 ? h : k == 2 ? h / 100 : small(rng);
      th.call(u, u + x, k, 1 + k);
      u += x + 1;
    }
    th.exit(u, 1).end(u, uint64_t(i) + 1);
  }
  Names names = make_names({{1, "R"}}, {});
  for (uint32_t k = 1; k <= 7; ++k) {
    names.functions[1 + k] = {"g" + std::to_string(k), "t.cc", 1};
    names.sites[k] = {1, "g" + std::to_string(k), "t.cc", int(10 + k), 3};
  }
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(tb.build(), names, opt, 0).value();
  const Columns &c = run->columns;
  const VarNode *r = node_of(run->tree, "R");
  ASSERT_NE(r, nullptr);
  const double var_root = run->tree.value_ns2;
  std::vector<const VarNode *> parts, covs;
  const VarNode *rest = nullptr;
  double sum = 0;
  for (const VarNode &ch : r->children) {
    sum += ch.value_ns2;
    if (ch.kind != VarNode::Kind::Cov) parts.push_back(&ch);
    else if (ch.key == r->key + "/cov(other)") rest = &ch;
    else covs.push_back(&ch);
  }
  ASSERT_EQ(parts.size(), 8u) << "R's body and seven sites";
  // Which pairs are not negligible, from the dense columns.
  int notable = 0;
  double folded = 0;
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t j = i + 1; j < parts.size(); ++j) {
      const double v = 2 * naive_cov(c, parts[i]->a, parts[j]->a);
      if (std::abs(v) >= 1e-4 * var_root) ++notable;
      else folded += v;
    }
  EXPECT_EQ(notable, 1) << "(g1, g2) only";
  ASSERT_EQ(covs.size(), size_t(notable));
  EXPECT_EQ(covs[0]->label, "cov(g1 (t.cc:11), g2 (t.cc:12))");
  ASSERT_NE(rest, nullptr);
  EXPECT_EQ(rest->label, "cov(the other 27 pairs)");
  EXPECT_NEAR(rest->value_ns2, folded, 1e-9 * var_root);
  // The children still add up to the node's variance.
  EXPECT_NEAR(sum, r->value_ns2, 1e-9 * r->value_ns2);
}

}  // namespace
}  // namespace vprof::testing
