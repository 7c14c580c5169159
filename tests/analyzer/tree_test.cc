// The variance tree (docs/method.md): exact values on a hand-worked example,
// the additivity property on random traces, and two runs merged by fractions.
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/reporter.h"
#include "analyzer/tree/merge_runs.h"
#include "analyzer/tree/stats.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// One interval per row: R(1) at [b, b+end), site 1 calls B(2) for xb ns, then
// site 2 calls C(3) for xc ns; R's body is 1 ns before each call and the
// outside 1 ns before R.
void add_interval(TraceBuilder &tb, uint64_t id, int64_t b, int64_t xb, int64_t xc) {
  int64_t t = b;
  auto &th = tb.thread(1);
  th.begin(t, id).enter(t + 1, 1);
  t += 2;
  th.call(t, t + xb, 1, 2);
  t += xb + 1;
  th.call(t, t + xc, 2, 3);
  t += xc;
  th.exit(t, 1).end(t, id);
}

Names rbc_names() {
  return make_names({{1, "R"}, {2, "B"}, {3, "C"}},
                    {{1, 1, "B", 10}, {2, 1, "C", 11}});
}

TEST(VarianceTree, HandWorkedVarianceAndCovariance) {
  // B = {10,20,30,40}: mean 25, Σd² = 500 -> Var 500/3.
  // C = {5,5,15,15}:   mean 10, Σd² = 100 -> Var 100/3.
  // Σ dB·dC = 75+25+25+75 = 200 -> Cov 200/3; body and outside are constant.
  // Var(L) = 500/3 + 100/3 + 2·200/3 = 1000/3: B 0.5, C 0.1, 2Cov 0.4.
  TraceBuilder tb;
  int64_t xb[] = {10, 20, 30, 40}, xc[] = {5, 5, 15, 15};
  for (int i = 0; i < 4; ++i) add_interval(tb, i + 1, i * 1000, xb[i], xc[i]);
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(tb.build(), rbc_names(), opt, 0);
  ASSERT_TRUE(run.ok());
  const VarNode &root = (*run)->tree;
  EXPECT_NEAR(root.value_ns2, 1000.0 / 3, 1e-9);
  EXPECT_NEAR((*run)->latency.variance_ns2, 1000.0 / 3, 1e-9);
  const VarNode *r = find_label(root, "R");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->kind, VarNode::Kind::Var);
  EXPECT_NEAR(r->contribution, 1.0, 1e-12);
  const VarNode *b = find_label(root, "B (t.cc:10)");
  const VarNode *c = find_label(root, "C (t.cc:11)");
  const VarNode *bc = find_label(root, "cov(B (t.cc:10), C (t.cc:11))");
  ASSERT_TRUE(b && c && bc);
  EXPECT_NEAR(b->value_ns2, 500.0 / 3, 1e-9);
  EXPECT_NEAR(b->contribution, 0.5, 1e-12);
  EXPECT_NEAR(c->contribution, 0.1, 1e-12);
  EXPECT_NEAR(bc->value_ns2, 400.0 / 3, 1e-9);
  EXPECT_NEAR(bc->contribution, 0.4, 1e-12);
  EXPECT_EQ(bc->kind, VarNode::Kind::Cov);
  ASSERT_TRUE(b->call_site.has_value());
  EXPECT_EQ(b->call_site->line, 10);
  EXPECT_EQ(b->kind, VarNode::Kind::Leaf);  // B itself was not broken down
  EXPECT_NEAR(children_contribution(*r), r->contribution, 1e-12);
}

TEST(VarianceTree, StableForLargeOffsets) {
  // Latencies near 5 s that differ by a few ns: a one-pass sum of squares
  // loses everything here; centering first keeps the exact answer (Var 1000/3).
  TraceBuilder tb;
  int64_t base = 5'000'000'000;
  int64_t xb[] = {10, 20, 30, 40}, xc[] = {5, 5, 15, 15};
  for (int i = 0; i < 4; ++i) add_interval(tb, i + 1, i * 10 * base, base + xb[i], xc[i]);
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(tb.build(), rbc_names(), opt, 0);
  ASSERT_TRUE(run.ok());
  EXPECT_NEAR((*run)->tree.value_ns2, 1000.0 / 3, 1e-6);
}

TEST(Stats, QuantilesBySelectionMatchTheSortedSample) {
  // Nearest rank on random samples with ties, against the sorted sample;
  // repeated and extreme q included.
  std::mt19937 rng(3);
  for (size_t n : {1, 2, 7, 100, 1001}) {
    std::vector<double> v(n);
    for (double &x : v) x = double(rng() % 50);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::vector<double> qs{0.0, 0.025, 0.5, 0.5, 0.9, 0.99, 0.999, 1.0};
    auto got = quantiles(v, qs);
    ASSERT_EQ(got.size(), qs.size());
    for (size_t i = 0; i < qs.size(); ++i) {
      size_t rank = std::max<size_t>(1, size_t(std::ceil(qs[i] * double(n))));
      EXPECT_EQ(got[i], sorted[rank - 1]) << "n=" << n << " q=" << qs[i];
    }
  }
  std::vector<double> empty;
  EXPECT_EQ(quantiles(empty, {0.5}), std::vector<double>{0.0});
}

// Random nested call trees over three threads with queue hand-offs.
trace::Trace random_trace(uint32_t seed, int intervals) {
  std::mt19937 rng(seed);
  auto u = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  TraceBuilder tb;
  int64_t t = 0;
  std::function<void(ThreadBuilder &, int64_t &, int)> body = [&](ThreadBuilder &th, int64_t &now,
                                                                  int depth) {
    int calls = depth > 2 ? 0 : u(0, 3);
    for (int c = 0; c < calls; ++c) {
      now += u(0, 20);
      uint32_t site = uint32_t(depth * 4 + c + 1), fn = uint32_t(depth * 4 + c + 2);
      th.site(now, site);
      if (u(0, 1)) {
        th.enter(now, fn);
        body(th, now, depth + 1);
        now += u(0, 5);
        th.exit(now, fn);
      } else {
        now += u(1, 50);
      }
      th.site_end(now, site);
    }
    now += u(0, 10);
  };
  for (int i = 0; i < intervals; ++i) {
    uint64_t id = uint64_t(i + 1);
    auto &a = tb.thread(1);
    a.begin(t, id).enter(t + 1, 1);
    int64_t now = t + 1;
    body(a, now, 0);
    if (u(0, 2) == 0) {
      // Hand the rest to thread 2 through a queue; A waits for B's signal.
      uint64_t task = 0x1000 + id;
      a.enqueue(now, task).site(now, 30).wait(now, 0xc0);
      auto &b = tb.thread(2);
      int64_t bt = now + u(0, 30);
      b.dequeue(bt, task).join(bt + u(0, 3), id);
      int64_t bn = bt + 3;
      b.enter(bn, 40);
      body(b, bn, 1);
      b.release(bn, 0xc0).exit(bn + 1, 40).leave(bn + 2);
      now = bn + u(1, 9);
      a.wait_end(now, 0xc0, 2, bn).site_end(now, 30);
    }
    now += u(0, 10);
    a.exit(now, 1).end(now + u(0, 4), id);
    t = now + 100;
  }
  return tb.build();
}

void check_additive(const VarNode &n, int &checked) {
  if (!n.children.empty()) {
    EXPECT_NEAR(children_contribution(n), n.contribution, 1e-9 * std::max(1.0, std::abs(n.contribution)))
        << n.label;
    // Shares of the parts add up to their whole's share (docs/method.md, "The
    // variance tree"), the root's is 1.
    ASSERT_TRUE(n.share.has_value()) << n.label;
    EXPECT_NEAR(children_share(n), *n.share, 1e-9) << n.label;
    ++checked;
  }
  if (n.kind == VarNode::Kind::Cov) EXPECT_FALSE(n.share.has_value()) << n.label;
  for (const auto &c : n.children) check_additive(c, checked);
}

TEST(VarianceTree, PropertyTilingAndAdditivityOnRandomTraces) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    trace::Trace t = random_trace(seed, 60);
    AnalyzeOptions opt;
    opt.factors.bootstrap = 0;
    auto run = analyze_run(t, Names{}, opt, 0);
    ASSERT_TRUE(run.ok());
    const RunAnalysis &r = **run;
    EXPECT_EQ(r.paths.rows.size(), 60u) << "seed " << seed;
    EXPECT_EQ(r.paths.counters.tiling_violations, 0u);
    EXPECT_EQ(r.paths.counters.path_gaps, 0u);
    for (size_t i = 0; i < r.paths.rows.size(); ++i) {
      double sum = 0;
      for (auto *c = r.paths.row_begin(i); c != r.paths.row_end(i); ++c) sum += c->ns;
      ASSERT_EQ(sum, double(r.paths.rows[i].latency_ns)) << "seed " << seed << " row " << i;
      // The root column of the tree is the latency itself.
      ASSERT_EQ(r.columns.total.at(Eigen::Index(i), 0), double(r.paths.rows[i].latency_ns));
    }
    int checked = 0;
    check_additive(r.tree, checked);
    EXPECT_GT(checked, 1);
  }
}

TEST(VarianceTree, RootFunctionLimitsTheTree) {
  // --root B: the tree is B's time only; B was never broken down, so it is a leaf
  // whose value is Var(B) = 500/3.
  TraceBuilder tb;
  int64_t xb[] = {10, 20, 30, 40}, xc[] = {5, 5, 15, 15};
  for (int i = 0; i < 4; ++i) add_interval(tb, i + 1, i * 1000, xb[i], xc[i]);
  AnalyzeOptions opt;
  opt.root = "B";
  auto run = analyze_run(tb.build(), rbc_names(), opt, 0);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ((*run)->tree.label, "B");
  EXPECT_NEAR((*run)->tree.value_ns2, 500.0 / 3, 1e-9);
  opt.root = "Nope";
  auto bad = analyze_run(tb.build(), rbc_names(), opt, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("Nope"), std::string::npos);
}

TEST(VarianceTree, MatrixLimitIsAnErrorNotACrash) {
  TraceBuilder tb;
  int64_t xb[] = {10, 20, 30, 40}, xc[] = {5, 5, 15, 15};
  for (int i = 0; i < 4; ++i) add_interval(tb, i + 1, i * 1000, xb[i], xc[i]);
  AnalyzeOptions opt;
  opt.max_cell_bytes = 100;  // 4 intervals x (the root, R and its 2 sites): 16 cells of 12 bytes
  auto run = analyze_run(tb.build(), rbc_names(), opt, 0);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("4 intervals x 6 call-tree nodes have 16 cells"),
            std::string::npos)
      << run.error().message;
}

// Cells are kept as 32-bit integers when no interval's path passes 2^31 ns
// (2.1 s), as doubles otherwise; either way they read back exactly and the
// tree's shares are the same (here the second run is the first at 10^8
// times the scale: intervals of 1 to 4 s).
TEST(VarianceTree, LongIntervalsKeepTheirCellsExactlyAsShortOnesDo) {
  int64_t xb[] = {10, 20, 30, 40}, xc[] = {5, 5, 15, 15};
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  for (int64_t scale : {int64_t{1}, int64_t{100'000'000}}) {
    TraceBuilder tb;
    for (int i = 0; i < 4; ++i)
      add_interval(tb, uint64_t(i) + 1, i * 100 * scale, xb[i] * scale, xc[i] * scale);
    AnalyzeOptions opt;
    opt.factors.bootstrap = 0;
    auto run = analyze_run(tb.build(), rbc_names(), opt, 0);
    ASSERT_TRUE(run.ok()) << run.error().message;
    const NodeTotals &t = (*run)->columns.total;
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(t.at(i, 0), double((*run)->paths.rows[size_t(i)].latency_ns)) << scale;
    runs.push_back(std::move(run).value());
  }
  EXPECT_FALSE(runs[0]->columns.total.narrow.empty());
  EXPECT_TRUE(runs[0]->columns.total.value.empty());
  EXPECT_TRUE(runs[1]->columns.total.narrow.empty()) << "intervals past 2^31 ns";
  EXPECT_GT(runs[1]->columns.latency.maxCoeff(), 3e9);
  std::function<void(const VarNode &, const VarNode &)> same = [&](const VarNode &a, const VarNode &b) {
    EXPECT_EQ(a.key, b.key);
    ASSERT_EQ(a.share.has_value(), b.share.has_value()) << a.key;
    if (a.share) EXPECT_NEAR(*a.share, *b.share, 1e-12) << a.key;
    ASSERT_EQ(a.children.size(), b.children.size()) << a.key;
    for (size_t i = 0; i < a.children.size(); ++i) same(a.children[i], b.children[i]);
  };
  same(runs[0]->tree, runs[1]->tree);
}

// MariaDB session 5 stopped at iteration 19: 40 000 intervals x
// 6 960 nodes were refused as 4.1 GiB of dense matrices, though the totals
// are kept by cell and a path reaches few of a wide tree's nodes. Here each
// interval calls one of 20 functions: dense, 20 intervals x 24 nodes (3 of
// the trie's own, R, its 20 sites) x 16 bytes were 7 680 bytes; the cells a
// path reaches are 20 x 3 (the root, R, one site), 720 bytes.
TEST(VarianceTree, TheLimitCountsTheCellsAPathReachesNotTheWholeTree) {
  TraceBuilder tb;
  Names names = make_names({{1, "R"}}, {});
  for (uint32_t i = 0; i < 20; ++i) {
    names.functions[i + 2] = {"F" + std::to_string(i), "t.cc", 1};
    names.sites[i + 1] = {1, "F" + std::to_string(i), "t.cc", int(10 + i), 3};
    int64_t t = int64_t(i) * 1000;
    auto &th = tb.thread(1);
    th.begin(t, i + 1).enter(t, 1);
    th.call(t, t + 10 + int64_t(i), i + 1, i + 2);
    t += 10 + int64_t(i);
    th.exit(t, 1).end(t, i + 1);
  }
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  opt.max_cell_bytes = 2000;
  auto run = analyze_run(tb.build(), names, opt, 0);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ((*run)->columns.nodes.size(), 24u);
  EXPECT_EQ((*run)->columns.total.nonzeros(), 60u);
  opt.max_cell_bytes = 719;
  auto over = analyze_run(tb.build(), names, opt, 0);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("20 intervals x 24 call-tree nodes have 60 cells"),
            std::string::npos)
      << over.error().message;
}

// Run 1 of the two-run tests: R calls B at site 1 (B broken down into B1, B2
// at sites 3, 4), then C at site 2.
TraceBuilder run1_breaking_down_b(const int64_t *b1, const int64_t *b2, const int64_t *c1) {
  TraceBuilder t1;
  for (int i = 0; i < 4; ++i) {
    int64_t t = i * 1000;
    auto &th = t1.thread(1);
    th.begin(t, i + 1).enter(t, 1).site(t + 1, 1).enter(t + 1, 2);
    th.call(t + 1, t + 1 + b1[i], 3, 5);
    th.call(t + 1 + b1[i], t + 1 + b1[i] + b2[i], 4, 6);
    int64_t e = t + 1 + b1[i] + b2[i];
    th.exit(e, 2).site_end(e, 1).call(e, e + c1[i], 2, 3).exit(e + c1[i], 1).end(e + c1[i], i + 1);
  }
  return t1;
}

TEST(VarianceTree, TwoRunsMergedByFractions) {
  // Run 0 instruments R only: B's contribution is 0.5 (first test).
  // Run 1 also instruments B: B = B1 + B2 through sites 3 and 4 with
  // B1 = {4,4,16,16} (d = -6,-6,6,6: Var 48), B2 = {6,16,14,28} (d = -10,0,-2,12:
  // Var 248/3), Cov = (60+0-12+72)/3 = 40, so in run 1 Var(B) = 48 + 248/3 + 80
  // = 632/3 (B = {10,20,30,44}: a different variance from run 0's 500/3).
  // Merged: B1 = 48/(632/3) × 0.5 = 72/632, B2 = (248/3)/(632/3) × 0.5 = 124/632,
  // 2Cov = 80/(632/3) × 0.5 = 120/632; they sum to B's 0.5.
  TraceBuilder t0;
  int64_t xb[] = {10, 20, 30, 40}, xc[] = {5, 5, 15, 15};
  for (int i = 0; i < 4; ++i) add_interval(t0, i + 1, i * 1000, xb[i], xc[i]);
  int64_t b1[] = {4, 4, 16, 16}, b2[] = {6, 16, 14, 28}, c1[] = {7, 3, 9, 1};
  TraceBuilder t1 = run1_breaking_down_b(b1, b2, c1);
  Names n1 = make_names({{1, "R"}, {2, "B"}, {3, "C"}, {5, "B1"}, {6, "B2"}},
                        {{1, 1, "B", 10}, {2, 1, "C", 11}, {3, 2, "B1", 20}, {4, 2, "B2", 21}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t0.build(), rbc_names(), opt, 0).value());
  runs.push_back(analyze_run(t1.build(), n1, opt, 1).value());
  const VarNode *b_run1 = find_label(runs[1]->tree, "B (t.cc:10)");
  ASSERT_NE(b_run1, nullptr);
  EXPECT_NEAR(b_run1->value_ns2, 632.0 / 3, 1e-9);
  auto a = combine(std::move(runs), opt);
  const VarNode *b = find_label(a->tree, "B (t.cc:10)");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->run, 0);
  EXPECT_NEAR(b->contribution, 0.5, 1e-12);
  EXPECT_EQ(b->kind, VarNode::Kind::Var);
  const VarNode *x1 = find_label(*b, "B1 (t.cc:20)");
  const VarNode *x2 = find_label(*b, "B2 (t.cc:21)");
  const VarNode *x12 = find_label(*b, "cov(B1 (t.cc:20), B2 (t.cc:21))");
  ASSERT_TRUE(x1 && x2 && x12);
  EXPECT_EQ(x1->run, 1);
  EXPECT_NEAR(x1->contribution, 72.0 / 632, 1e-12);
  EXPECT_NEAR(x2->contribution, 124.0 / 632, 1e-12);
  EXPECT_NEAR(x12->contribution, 120.0 / 632, 1e-12);
  EXPECT_NEAR(children_contribution(*b), 0.5, 1e-12);
  // Shares merge by fractions too. Run 0: B's deviations (-15,-5,5,15), L's
  // (-20,-10,10,20): share = Cov(B, L)/Var(L) = (700/3)/(1000/3) = 0.7. Run 1:
  // L = 1 + B1 + B2 + C = {18,24,40,46}, deviations (-14,-8,8,14): Cov(B1, L)
  // = 264/3, Cov(B2, L) = 292/3, so B1 takes 264/556 of B's 0.7, B2 292/556.
  ASSERT_TRUE(b->share && x1->share && x2->share);
  EXPECT_NEAR(*b->share, 0.7, 1e-12);
  EXPECT_NEAR(*x1->share, 0.7 * 264 / 556, 1e-12);
  EXPECT_NEAR(*x2->share, 0.7 * 292 / 556, 1e-12);
  EXPECT_FALSE(x12->share.has_value());
  EXPECT_NEAR(children_share(*b), 0.7, 1e-12);
}



std::unique_ptr<Analysis> two_runs(const int64_t *b1, const int64_t *b2, const int64_t *c1) {
  TraceBuilder t0;
  int64_t xb[] = {10, 20, 30, 40}, xc[] = {5, 5, 15, 15};
  for (int i = 0; i < 4; ++i) add_interval(t0, i + 1, i * 1000, xb[i], xc[i]);
  Names n1 = make_names({{1, "R"}, {2, "B"}, {3, "C"}, {5, "B1"}, {6, "B2"}},
                        {{1, 1, "B", 10}, {2, 1, "C", 11}, {3, 2, "B1", 20}, {4, 2, "B2", 21}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t0.build(), rbc_names(), opt, 0).value());
  runs.push_back(analyze_run(run1_breaking_down_b(b1, b2, c1).build(), n1, opt, 1).value());
  return combine(std::move(runs), opt);
}

TEST(VarianceTree, RunsThatDisagreeAboutAGraftedNodeAreListed) {
  // LevelDB on a loaded machine: the group-commit wait was 72.7% of Var in
  // run 0 and 32.4% in run 1 (preemption took 60% there), and the merged tree
  // showed run 1's breakdown scaled to 72.7% with no word of it.
  // The runs of TwoRunsMergedByFractions: B's share is 0.7 in run 0 and
  // Cov(B, L)/Var(L) = (556/3)/(520/3) in run 1.
  int64_t b1[] = {4, 4, 16, 16}, b2[] = {6, 16, 14, 28}, c1[] = {7, 3, 9, 1};
  auto a = two_runs(b1, b2, c1);
  ASSERT_EQ(a->disagreements.size(), 1u);
  const Graft &g = a->disagreements[0];
  EXPECT_EQ(g.label, "B (t.cc:10)");
  EXPECT_EQ(g.from_run, 0);
  EXPECT_EQ(g.run, 1);
  EXPECT_NEAR(g.merged_share, 0.7, 1e-12);
  EXPECT_NEAR(g.run_share, 556.0 / 520, 1e-12);
  std::ostringstream os;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, os).ok());
  EXPECT_NE(os.str().find("runs disagree: B (t.cc:10) carries 70.0% of Var(root) in the merged "
                          "tree (run 1) but 106.9% in run 2"),
            std::string::npos)
      << os.str();
  std::ostringstream js;
  ASSERT_TRUE(make_json_reporter()->write(*a, js).ok());
  EXPECT_NE(js.str().find("\"run_disagreements\""), std::string::npos);
  EXPECT_NE(js.str().find("\"node\": \"B (t.cc:10)\""), std::string::npos) << js.str();
}

// Found on minidb's demo: a commit's flush, 6.4% of Var in the run that
// measured it, held the leader's fsync and the followers' wait for it,
// opposite parts whose sum was a sliver of Var in the run that broke it down.
// Scaled by 6.4% over that sliver, the report said fsync held 203% of the
// latency's variance and the wait -124%. Here B (0.7 merged) is, in run 1,
// B1 = {4,14,24,34} and B2 = {28,22,7,1} against L = {38,42,47,51}
// (deviations -6.5, -2.5, 2.5, 6.5; 3 Var(L) = 97): shares 220/97 and
// -213/97, B's 7/97. The difference, 0.7 - 7/97, is split by the parts'
// sizes (220 and 213 of 433): each moves by less than it, and they still
// add up to B's 0.7. (By the ratio, B1 would be 22.0.)
TEST(VarianceTree, OppositePartsOfASmallLaterShareAreNotAmplified) {
  int64_t b1[] = {4, 14, 24, 34}, b2[] = {28, 22, 7, 1}, c1[] = {5, 5, 15, 15};
  auto a = two_runs(b1, b2, c1);
  const VarNode *b = find_label(a->tree, "B (t.cc:10)");
  const VarNode *x1 = find_label(a->tree, "B1 (t.cc:20)");
  const VarNode *x2 = find_label(a->tree, "B2 (t.cc:21)");
  ASSERT_TRUE(b && x1 && x2 && b->share && x1->share && x2->share);
  EXPECT_EQ(x1->run, 1);
  const double delta = 0.7 - 7.0 / 97;
  EXPECT_NEAR(*b->share, 0.7, 1e-12);
  EXPECT_NEAR(*x1->share, 220.0 / 97 + delta * 220 / 433, 1e-12);
  EXPECT_NEAR(*x2->share, -213.0 / 97 + delta * 213 / 433, 1e-12);
  EXPECT_NEAR(children_share(*b), 0.7, 1e-12);
}

TEST(VarianceTree, RunsThatAgreeAreNotListed) {
  // Run 1 has run 0's B = {10,20,30,40} (as B1 + B2) and C: B's share is 0.7
  // in both, so the graft is recorded and nothing is said.
  int64_t b1[] = {4, 4, 16, 16}, b2[] = {6, 16, 14, 24}, c1[] = {5, 5, 15, 15};
  auto a = two_runs(b1, b2, c1);
  EXPECT_TRUE(a->disagreements.empty());
  const VarNode *x1 = find_label(a->tree, "B1 (t.cc:20)");
  ASSERT_NE(x1, nullptr);
  EXPECT_EQ(x1->run, 1);
  std::ostringstream os;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, os).ok());
  EXPECT_EQ(os.str().find("runs disagree"), std::string::npos) << os.str();
}

TEST(VarianceTree, RunsDisagreeThreshold) {
  auto g = [](double merged, double run) { return Graft{"x", 1, 0, merged, run}; };
  EXPECT_TRUE(runs_disagree(g(0.727, 0.324)));   // LevelDB's group-commit wait
  EXPECT_FALSE(runs_disagree(g(0.458, 0.579)));  // the demo's wait_for_grant: 0.121 < 0.145
  EXPECT_FALSE(runs_disagree(g(0.05, 0.12)));    // a quarter apart, but under 0.10 of Var
  EXPECT_TRUE(runs_disagree(g(-0.1, 0.1)));
  EXPECT_FALSE(runs_disagree(g(0.5, 0.5)));
}

TEST(VarianceTree, UninstrumentedCalleeIsALeafSoALaterRunsBreakdownWins) {
  // Bug: in f(g(x)) the call g(x) is timed inside f's call site. With f not
  // instrumented, the site got g's site as a child plus "f (body)" (all of
  // f), which counted as f being broken down: the merge then kept that
  // pseudo-breakdown and dropped the run that really instrumented f.
  // Run 0: R calls B at site 1 with a nested argument call A (site 5).
  TraceBuilder t0;
  int64_t xb[] = {10, 20, 30, 40};
  for (int i = 0; i < 4; ++i) {
    int64_t t = i * 1000;
    auto &th = t0.thread(1);
    th.begin(t, i + 1).enter(t, 1).site(t + 1, 1).site(t + 1, 5).site_end(t + 2, 5);
    th.site_end(t + 2 + xb[i], 1).exit(t + 3 + xb[i], 1).end(t + 3 + xb[i], i + 1);
  }
  Names n0 = make_names({{1, "R"}}, {{1, 1, "B", 10}, {5, 1, "A", 10}});
  // Run 1: B instrumented, its time split into B1 (site 3) and B2 (site 4).
  TraceBuilder t1;
  int64_t b1[] = {4, 4, 16, 16}, b2[] = {6, 16, 14, 28};
  for (int i = 0; i < 4; ++i) {
    int64_t t = i * 1000;
    auto &th = t1.thread(1);
    th.begin(t, i + 1).enter(t, 1).site(t + 1, 1).site(t + 1, 5).site_end(t + 2, 5).enter(t + 2, 2);
    th.call(t + 2, t + 2 + b1[i], 3, 5);
    th.call(t + 2 + b1[i], t + 2 + b1[i] + b2[i], 4, 6);
    int64_t e = t + 2 + b1[i] + b2[i];
    th.exit(e, 2).site_end(e, 1).exit(e + 1, 1).end(e + 1, i + 1);
  }
  Names n1 = make_names({{1, "R"}, {2, "B"}, {5, "B1"}, {6, "B2"}},
                        {{1, 1, "B", 10}, {5, 1, "A", 10}, {3, 2, "B1", 20}, {4, 2, "B2", 21}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t0.build(), n0, opt, 0).value());
  runs.push_back(analyze_run(t1.build(), n1, opt, 1).value());
  const VarNode *b0 = find_label(runs[0]->tree, "B (t.cc:10)");
  ASSERT_NE(b0, nullptr);
  EXPECT_EQ(b0->kind, VarNode::Kind::Leaf) << "B was not instrumented in run 0";
  EXPECT_EQ(find_label(runs[0]->tree, "B (body)"), nullptr);
  auto a = combine(std::move(runs), opt);
  const VarNode *b = find_label(a->tree, "B (t.cc:10)");
  ASSERT_NE(b, nullptr);
  const VarNode *x1 = find_label(*b, "B1 (t.cc:20)");
  ASSERT_NE(x1, nullptr) << "run 1's real breakdown of B is merged in";
  EXPECT_EQ(x1->run, 1);
  EXPECT_NEAR(children_contribution(*b), b->contribution, 1e-9);
}

// Found on PostgreSQL: run 0 timed the pointer call
// node->ExecProcNode with its callees not instrumented; they re-entered
// instrumented code, so the site's own time was "(uninstrumented part)",
// 82.5% of Var. Run 1 instrumented the 45 functions the pointer may reach,
// which left a sliver of uninstrumented part (a call reaching none of them).
// The merge kept run 0's breakdown, and the session stopped on it.
TEST(VarianceTree, ALaterBreakdownWithAMuchSmallerUninstrumentedPartWins) {
  auto node = share_leaf;
  const std::string site = "root/site:ExecProcNode>node->ExecProcNode#0";
  auto tree = [&](int run, double uninstrumented, double target) {
    VarNode root = node("root", "exec_simple_query", 1.0, run);
    VarNode s = node(site, "node->ExecProcNode", uninstrumented + target + 0.02, run);
    s.kind = root.kind = VarNode::Kind::Var;
    s.children.push_back(node(site + "/uninstrumented", "node->ExecProcNode (uninstrumented part)", uninstrumented, run));
    s.children.push_back(node(site + (run ? "/fn:ExecModifyTable" : "/fn:ExecProcNode"),
                              run ? "ExecModifyTable" : "ExecProcNode", target + 0.02, run));
    root.children.push_back(s);
    root.children.push_back(node("root/body", "exec_simple_query (body)", 0.1, run));
    return root;
  };
  // Run 1 explains almost all of it: its breakdown is merged in.
  VarNode merged = merge_runs({tree(0, 0.825, 0.01), tree(1, 0.0004, 0.83)});
  const VarNode *m = find_label(merged, "ExecModifyTable");
  ASSERT_NE(m, nullptr) << "run 1's breakdown of the pointer call is merged in";
  EXPECT_EQ(m->run, 1);
  EXPECT_EQ(find_label(merged, "ExecProcNode"), nullptr);
  // A later run that explains no more (still over half of the part) does not replace it.
  merged = merge_runs({tree(0, 0.825, 0.01), tree(1, 0.6, 0.23)});
  EXPECT_EQ(find_label(merged, "ExecModifyTable"), nullptr);
  EXPECT_NE(find_label(merged, "ExecProcNode"), nullptr);
}

// Found on MariaDB: runs 22-25 measured lock.rd_lock (a template's
// call) with manifests saying "a call through a pointer, no targets"; run 26,
// with a vprof that lists what such a call may reach, measured it too, not
// broken down further. The merged node keeps run 0's numbers and takes the
// newest manifest's word on what the site is.
TEST(VarianceTree, AMergedSiteSaysWhatTheNewestManifestSaysItIs) {
  const std::string site = "root/site:sux_lock::s_lock>lock.rd_lock#0";
  auto tree = [&](int run, std::vector<std::string> targets) {
    VarNode root = share_leaf("root", "sux_lock::s_lock", 1.0, run);
    root.kind = VarNode::Kind::Var;
    VarNode s = share_leaf(site, "lock.rd_lock (sux_lock.h:394)", run ? 0.3 : 0.25, run);
    s.call_site = CallSiteInfo{};
    s.call_site->callee = "lock.rd_lock";
    s.call_site->indirect = true;
    s.call_site->targets = targets;
    if (!targets.empty()) s.call_site->dependent_name = "rd_lock";
    root.children.push_back(s);
    return root;
  };
  const std::vector<std::string> now = {"lock_sys_t::rd_lock", "ssux_lock_impl::rd_lock"};
  VarNode merged = merge_runs({tree(0, {}), tree(1, {}), tree(2, now)});
  const VarNode *m = find_label(merged, "lock.rd_lock (sux_lock.h:394)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->run, 0);
  EXPECT_DOUBLE_EQ(*m->share, 0.25) << "run 0's numbers";
  ASSERT_TRUE(m->call_site);
  EXPECT_EQ(m->call_site->targets, now);
  EXPECT_EQ(m->call_site->dependent_name, "rd_lock");
}

// Found on Apache httpd: ap_pass_brigade calls the next output
// filter through a pointer, and each filter calls ap_pass_brigade again. Run
// 0 instrumented ap_pass_brigade alone: the pointer call's breakdown was
// ap_pass_brigade re-entered, with a sliver (~0%) of uninstrumented part.
// Run 1 instrumented the filters, leaving a sliver as well: "less than half
// of that sliver" is noise, and in 3 sessions of 4 the run that named the
// filter never reached the merged tree.
TEST(VarianceTree, ALaterBreakdownThatInstrumentsWhatARecursiveSiteCallsWins) {
  const std::string site = "root/site:ap_pass_brigade>out_func#0";
  auto tree = [&](int run, double uninstrumented, const std::string &entered) {
    VarNode root = share_leaf("root", "ap_pass_brigade", 1.0, run);
    root.functions = {"ap_pass_brigade"};
    VarNode s = share_leaf(site, "next->frec->filter_func.out_func", 0.98, run);
    s.functions = {"next->frec->filter_func.out_func"};
    s.kind = root.kind = VarNode::Kind::Var;
    VarNode u = share_leaf(site + "/uninstrumented", "out_func (uninstrumented part)", uninstrumented, run);
    VarNode f = share_leaf(site + "/fn:" + entered, entered, 0.98 - uninstrumented, run);
    f.functions = {entered};
    s.children = {u, f};
    root.children.push_back(s);
    return root;
  };
  VarNode merged = merge_runs({tree(0, 0.0001, "ap_pass_brigade"), tree(1, 0.0002, "ap_core_output_filter")});
  const VarNode *m = find_label(merged, "ap_core_output_filter");
  ASSERT_NE(m, nullptr) << "run 1's breakdown of the pointer call is merged in";
  EXPECT_EQ(m->run, 1);
  // The other way round, the run that instruments the filters came first: a
  // later run that shows the re-entered ap_pass_brigade again does not replace it.
  merged = merge_runs({tree(0, 0.0002, "ap_core_output_filter"), tree(1, 0.0001, "ap_pass_brigade")});
  m = find_label(merged, "ap_core_output_filter");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->run, 0);
}

// Found on memcached: item_replace calls do_item_replace, which calls
// do_item_link. The run that instrumented do_item_link but not
// do_item_replace broke the site down into do_item_link re-entered (37% of
// Var), the Held parts and (preempted) of the lock waits inside the callee
// (40%), and a sliver of uninstrumented part. The merge counted the sliver
// alone as the site's uninstrumented part and kept this breakdown over the
// run that instrumented do_item_replace: the planted stall's waits stayed
// held by the earlier run's holder, and the stall lost its rank.
TEST(VarianceTree, AWaitInsideAnUninstrumentedCalleeIsNoBreakdownOfIt) {
  const std::string site = "root/site:item_replace>do_item_replace#0";
  auto leaf = [](const std::string &key, const std::string &label, double share, int run,
                 const std::string &function = "") {
    VarNode n = share_leaf(key, label, share, run);
    if (!function.empty()) n.functions = {function};
    return n;
  };
  VarNode root0 = leaf("root", "item_replace", 1.0, 0, "item_replace");
  VarNode s0 = leaf(site, "do_item_replace (thread.c:887)", 0.80, 0, "do_item_replace");
  s0.kind = root0.kind = VarNode::Kind::Var;
  s0.children = {leaf(site + "/fn:do_item_link", "do_item_link", 0.37, 0, "do_item_link"),
                 leaf(site + "/held:site:do_item_link>item_link_q#0", "held by do_item_link at item_link_q", 0.28,
                      0, "item_link_q"),
                 leaf(site + "/preempted", "(preempted)", 0.12, 0),
                 leaf(site + "/uninstrumented", "do_item_replace (uninstrumented part)", 0.03, 0)};
  root0.children = {s0, leaf("root/body", "item_replace (body)", 0.20, 0)};
  VarNode root1 = leaf("root", "item_replace", 1.0, 1, "item_replace");
  VarNode s1 = leaf(site, "do_item_replace (thread.c:887)", 0.76, 1, "do_item_replace");
  s1.kind = root1.kind = VarNode::Kind::Var;
  s1.children = {leaf(site + "/site:do_item_replace>do_item_unlink#0", "do_item_unlink (items.c:611)", 0.45, 1,
                      "do_item_unlink"),
                 leaf(site + "/site:do_item_replace>do_item_link#1", "do_item_link (items.c:612)", 0.31, 1,
                      "do_item_link")};
  root1.children = {s1, leaf("root/body", "item_replace (body)", 0.24, 1)};
  VarNode merged = merge_runs({root0, root1});
  const VarNode *unlink = find_label(merged, "do_item_unlink (items.c:611)");
  ASSERT_NE(unlink, nullptr) << "the run that instrumented do_item_replace breaks it down";
  EXPECT_EQ(unlink->run, 1);
  EXPECT_EQ(find_label(merged, "held by do_item_link at item_link_q"), nullptr);
  // A later run that re-entered the same function and measured as much
  // outside it does not replace the earlier breakdown.
  VarNode again = root0;
  for (auto &c : again.children[0].children) c.run = 1;
  again.run = again.children[0].run = 1;
  merged = merge_runs({root0, again});
  const VarNode *link = find_label(merged, "do_item_link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->run, 0);
}

// Found on MariaDB: mysql_execute_command calls
// mysql_update(thd, ..., unit->lim.get_select_limit(), ...), whose row-lock
// wait (not instrumented in that run) had Held parts, so the site was
// expanded; the argument's call site came along as a child, the node no
// longer counted as "Held parts only", and the merge kept this run's
// pseudo-breakdown over every later run that instrumented mysql_update: the
// session decided "already broken down" on it for ever. An argument's call
// folds into the wait's "(not held)" part, as it folds into a leaf site.
TEST(VarianceTree, AnArgumentsCallDoesNotMakeAHeldSplitABreakdown) {
  // Run 0: R(1) calls B at site 1 (B not instrumented) with an argument call
  // A (site 5); inside B, a wait on 0x10 held by thread 2 in H(3).
  TraceBuilder t0;
  const int64_t held[] = {10, 30, 20, 60, 15, 45};
  for (int i = 0; i < 6; ++i) {
    const int64_t t = i * 1000, w = held[i];
    t0.thread(1).begin(t, 2 * i + 1).enter(t, 1).site(t + 1, 1).site(t + 1, 5).site_end(t + 2 + i % 2, 5)
        .wait(t + 5, 0x10).wait_end(t + 6 + w, 0x10, 2, t + 5 + w).site_end(t + 7 + w, 1).exit(t + 8 + w, 1)
        .end(t + 8 + w, 2 * i + 1);
    t0.thread(2).begin(t, 2 * i + 2).enter(t, 3).release(t + 5 + w, 0x10).exit(t + 6 + w, 3)
        .end(t + 6 + w, 2 * i + 2);
  }
  Names n0 = make_names({{1, "R"}, {3, "H"}}, {{1, 1, "B", 10}, {5, 1, "A", 10}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(t0.build(), n0, opt, 0).value();
  const VarNode *b = find_label(run->tree, "B (t.cc:10)");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(find_label(*b, "A (t.cc:10)"), nullptr) << "the argument's call is no part of B";
  EXPECT_NE(find_label(*b, "B (not held)"), nullptr);
  EXPECT_TRUE(held_only(*b)) << "Held parts only: a later run that instruments B replaces them";
  EXPECT_NEAR(children_contribution(*b), b->contribution, 1e-9);
}

}  // namespace
}  // namespace vprof::testing
