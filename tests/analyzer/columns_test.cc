// The per-interval node totals (analyzer/tree/columns.h) are kept by column,
// only the cells a critical path touches: a wide tree costs its paths, not
// intervals × nodes (issue 29: a late MariaDB run took 3.7 GB dense).
#include <algorithm>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/tree/columns.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

constexpr int kCallees = 300;

// Interval i: R(1) calls callee 2 + i % kCallees through its own site for
// 10 + i ns, with 1 ns of R's body before the call.
trace::Trace wide_trace(int intervals) {
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < intervals; ++i) {
    int64_t t = int64_t(i) * 100000;
    uint32_t k = uint32_t(i % kCallees);
    th.begin(t, uint64_t(i) + 1).enter(t, 1);
    th.call(t + 1, t + 11 + i, 1 + k, 2 + k);
    th.exit(t + 11 + i, 1).end(t + 11 + i, uint64_t(i) + 1);
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

TEST(Columns, Issue29_AWideTreeKeepsOnlyTheCellsItsPathsTouch) {
  const int n = 3000;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(wide_trace(n), wide_names(), opt, 0);
  ASSERT_TRUE(run.ok());
  const Columns &c = (*run)->columns;
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
    EXPECT_EQ(c.total.at(i, 0), 11.0 + i);
    for (int k : {0, 1, kCallees - 1}) {
      double want = (i % kCallees == k) ? 10.0 + i : 0.0;
      EXPECT_EQ(c.total.at(i, site_node.at(uint32_t(1 + k))), want) << "interval " << i;
    }
  }
}

TEST(Columns, SelectedRowsInAnyOrderKeepTheirCells) {
  const int n = 900;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(wide_trace(n), wide_names(), opt, 0);
  ASSERT_TRUE(run.ok());
  const Columns &c = (*run)->columns;
  std::vector<Eigen::Index> rows;
  for (int i = n - 1; i >= 0; i -= 3) rows.push_back(i);  // descending, a third
  Columns s = select_rows(c, rows);
  ASSERT_EQ(s.rows(), Eigen::Index(rows.size()));
  for (int col = 0; col < int(c.nodes.size()); ++col) {
    Eigen::VectorXd all = c.total.col(col), some = s.total.col(col);
    for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(some(Eigen::Index(i)), all(rows[i])) << col;
    // A column's rows stay ascending: at() searches them.
    const auto *b = s.total.row.data() + s.total.begin[size_t(col)];
    const auto *e = s.total.row.data() + s.total.begin[size_t(col) + 1];
    ASSERT_TRUE(std::is_sorted(b, e)) << col;
  }
  EXPECT_EQ(s.latency(0), c.latency(n - 1));
}

}  // namespace
}  // namespace vprof::testing
