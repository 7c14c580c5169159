// Factor selection (docs/method.md, "Factors" / Algorithm 1) on a hand-worked
// example.
#include <random>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// R(1) calls D(2) through sites 1 and 2 and S(3) through site 3. Per interval:
//   site 1 (D) = 5 + {0,10,0,10}, site 2 (D) = 5 + {0,0,10,10},
//   site 3 (S) = {30,10,10,30}; R's body a constant 3 ns.
// Deviations (-5,5,-5,5), (-5,-5,5,5), (10,-10,-10,10) are orthogonal, so all
// covariances are 0 and Var(R) = 100/3 + 100/3 + 400/3 = 200:
//   D: 1/6 + 1/6 = 1/3 (two call sites), S: 2/3.
trace::Trace dsr_trace() {
  TraceBuilder tb;
  int64_t d1[] = {5, 15, 5, 15}, d2[] = {5, 5, 15, 15}, s[] = {30, 10, 10, 30};
  for (int i = 0; i < 4; ++i) {
    int64_t t = i * 1000;
    auto &th = tb.thread(1);
    th.begin(t, i + 1).enter(t, 1).call(t + 1, t + 1 + d1[i], 1, 2);
    t += 1 + d1[i];
    th.call(t + 1, t + 1 + d2[i], 2, 2);
    t += 1 + d2[i];
    th.call(t + 1, t + 1 + s[i], 3, 3);
    t += 1 + s[i];
    th.exit(t, 1).end(t, i + 1);
  }
  return tb.build();
}

Names dsr_names() {
  return make_names({{1, "R"}, {2, "D"}, {3, "S"}},
                    {{1, 1, "D", 10}, {2, 1, "D", 20}, {3, 1, "S", 30}});
}

std::unique_ptr<Analysis> run_dsr(const AnalyzeOptions &opt) {
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(dsr_trace(), dsr_names(), opt, 0).value());
  return combine(std::move(runs), opt);
}

const Factor *by_name(const Analysis &a, const std::string &n) {
  for (const auto &f : a.factors)
    if (f.name == n) return &f;
  return nullptr;
}

TEST(Factors, DeepFunctionOutranksShallowOneAndCallSitesAggregate) {
  // Static heights: R 3, S 2, D 0; root R so H = 3.
  // D: specificity (3-0)² = 9, score 9 × 1/3 = 3; S: (3-2)² = 1, score 2/3.
  CallGraph cg;
  cg.root = "R";
  cg.height = 3;
  cg.heights = {{"R", 3}, {"S", 2}, {"D", 0}};
  AnalyzeOptions opt;
  opt.root = "R";
  opt.callgraph = &cg;
  opt.factors.bootstrap = 0;
  auto a = run_dsr(opt);
  ASSERT_GE(a->factors.size(), 2u);
  EXPECT_EQ(a->height_root, 3);
  const Factor &first = a->factors[0], &second = a->factors[1];
  EXPECT_EQ(first.name, "D");
  EXPECT_EQ(first.rank, 1);
  EXPECT_NEAR(first.contribution, 1.0 / 3, 1e-12);
  EXPECT_EQ(first.height, 0);
  EXPECT_NEAR(first.score, 3.0, 1e-12);
  ASSERT_EQ(first.call_sites.size(), 2u);
  EXPECT_NEAR(first.call_sites[0].contribution, 1.0 / 6, 1e-12);
  EXPECT_NEAR(first.call_sites[1].contribution, 1.0 / 6, 1e-12);
  EXPECT_EQ(second.name, "S");
  EXPECT_EQ(second.rank, 2);
  EXPECT_NEAR(second.contribution, 2.0 / 3, 1e-12);
  EXPECT_NEAR(second.score, 2.0 / 3, 1e-12);
  // Everything else is under d = 0.05 (zero covariances, constant body).
  for (size_t i = 2; i < a->factors.size(); ++i) EXPECT_EQ(a->factors[i].rank, 0);
}

TEST(Factors, TopKAndThreshold) {
  CallGraph cg;
  cg.heights = {{"R", 3}, {"S", 2}, {"D", 0}};
  AnalyzeOptions opt;
  opt.root = "R";
  opt.callgraph = &cg;
  opt.factors.bootstrap = 0;
  opt.factors.k = 1;
  auto a = run_dsr(opt);
  EXPECT_EQ(by_name(*a, "D")->rank, 1);
  EXPECT_EQ(by_name(*a, "S")->rank, 0);
  opt.factors.k = 3;
  opt.factors.d = 0.5;  // D's 1/3 is below it now
  auto b = run_dsr(opt);
  EXPECT_EQ(by_name(*b, "D")->rank, 0);
  EXPECT_EQ(by_name(*b, "S")->rank, 1);
}

TEST(Factors, DynamicHeightsWhenNoCallGraph) {
  // Seen in the trace: R -> D, R -> S, so D and S are both height 0 and R is
  // 1 = H; equal specificity, so S (2/3) outranks D (1/3).
  AnalyzeOptions opt;
  opt.root = "R";
  opt.factors.bootstrap = 0;
  auto a = run_dsr(opt);
  EXPECT_EQ(a->height_root, 1);
  EXPECT_EQ(a->factors[0].name, "S");
  EXPECT_EQ(a->factors[1].name, "D");
}

TEST(Factors, ExponentIsConfigurable) {
  // e = 0 turns specificity off: rank by contribution alone, S first.
  CallGraph cg;
  cg.heights = {{"R", 3}, {"S", 2}, {"D", 0}};
  AnalyzeOptions opt;
  opt.root = "R";
  opt.callgraph = &cg;
  opt.factors.bootstrap = 0;
  opt.factors.e = 0;
  auto a = run_dsr(opt);
  EXPECT_EQ(a->factors[0].name, "S");
}

TEST(Factors, HeightsCollapseRecursion) {
  // A -> B -> A (one component), B -> C -> D: the {A,B} component is 2 high.
  Graph g{{"A", {"B"}}, {"B", {"A", "C"}}, {"C", {"D"}}, {"D", {}}};
  auto h = graph_heights(g);
  EXPECT_EQ(h["D"], 0);
  EXPECT_EQ(h["C"], 1);
  EXPECT_EQ(h["A"], 2);
  EXPECT_EQ(h["B"], 2);
}

TEST(Factors, BootstrapBracketsARealFactor) {
  // 400 intervals: B ~ U[0,1000) dominates, C ~ U[0,10) is noise. B's
  // contribution is near 1 and its 95% interval excludes 0; the intervals are
  // reproducible for a fixed seed.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> ub(0, 999), uc(0, 9);
  TraceBuilder tb;
  for (int i = 0; i < 400; ++i) {
    int64_t t = i * 5000, xb = ub(rng), xc = uc(rng);
    tb.thread(1).begin(t, i + 1).enter(t, 1).call(t + 1, t + 1 + xb, 1, 2)
        .call(t + 1 + xb, t + 1 + xb + xc, 2, 3).exit(t + 2 + xb + xc, 1).end(t + 2 + xb + xc, i + 1);
  }
  Names names = make_names({{1, "R"}, {2, "B"}, {3, "C"}}, {{1, 1, "B", 10}, {2, 1, "C", 11}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 200;
  opt.factors.paper = true;  // the paper's term Var(B)/Var(L); shares: shares_test.cc
  auto go = [&] {
    std::vector<std::unique_ptr<RunAnalysis>> runs;
    runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
    return combine(std::move(runs), opt);
  };
  auto a = go();
  const Factor *b = by_name(*a, "B");
  ASSERT_NE(b, nullptr);
  ASSERT_GT(b->rank, 0);
  ASSERT_TRUE(b->ci95.has_value());
  EXPECT_LE(b->ci95->first, b->contribution);
  EXPECT_GE(b->ci95->second, b->contribution);
  EXPECT_GT(b->ci95->first, 0.9);
  EXPECT_TRUE(b->significant);
  auto again = go();
  EXPECT_EQ(by_name(*again, "B")->ci95, b->ci95);
  // Workers split the resamples: the intervals are the same bits.
  for (unsigned threads : {2u, 3u}) {
    opt.threads = threads;
    auto split = go();
    EXPECT_EQ(by_name(*split, "B")->ci95, b->ci95) << threads << " threads";
    EXPECT_EQ(by_name(*split, "C")->ci95, by_name(*a, "C")->ci95) << threads << " threads";
  }
  // One pool for the merge, the walk and the bootstrap, as `vprof analyze`
  // runs it (its size, not opt.threads, counts).
  Workers pool(2);
  opt.threads = 1;
  opt.workers = &pool;
  auto shared = go();
  EXPECT_EQ(by_name(*shared, "B")->ci95, b->ci95);
  EXPECT_EQ(by_name(*shared, "C")->ci95, by_name(*a, "C")->ci95);
  EXPECT_EQ(shared->runs[0]->paths.cells, a->runs[0]->paths.cells);
}

TEST(Factors, BootstrapWidthMatchesTheDeltaMethod) {
  // L = 2 + B + C, B ~ U[0,1000), C ~ U[0,300), 2000 intervals. B's
  // contribution is Var(B)/Var(L); its standard error by the delta method is
  // sqrt(Σ IF²)/n with IF = ((b−b̄)² − V_B − R·((l−l̄)² − V_L)) / V_L. For
  // this light-tailed sample the bootstrap's 95% interval should be about
  // 2·1.96 of those wide: a resampling that drew the wrong weights (all ones,
  // or weights of the wrong variance) would miss by far more than the
  // 200-resample noise allowed here (a fixed seed: the same result every run).
  const int n = 2000;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> ub(0, 999), uc(0, 299);
  std::vector<double> bs, ls;
  TraceBuilder tb;
  for (int i = 0; i < n; ++i) {
    int64_t t = i * 5000, xb = ub(rng), xc = uc(rng);
    tb.thread(1).begin(t, i + 1).enter(t, 1).call(t + 1, t + 1 + xb, 1, 2)
        .call(t + 1 + xb, t + 1 + xb + xc, 2, 3).exit(t + 2 + xb + xc, 1).end(t + 2 + xb + xc, i + 1);
    bs.push_back(double(xb));
    ls.push_back(double(2 + xb + xc));
  }
  auto mean = [&](const std::vector<double> &v) {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  };
  double mb = mean(bs), ml = mean(ls), vb = 0, vl = 0;
  for (int i = 0; i < n; ++i) {
    vb += (bs[i] - mb) * (bs[i] - mb) / n;
    vl += (ls[i] - ml) * (ls[i] - ml) / n;
  }
  double r = vb / vl, if2 = 0;
  for (int i = 0; i < n; ++i) {
    double f = ((bs[i] - mb) * (bs[i] - mb) - vb - r * ((ls[i] - ml) * (ls[i] - ml) - vl)) / vl;
    if2 += f * f;
  }
  double se = std::sqrt(if2) / n;
  Names names = make_names({{1, "R"}, {2, "B"}, {3, "C"}}, {{1, 1, "B", 10}, {2, 1, "C", 11}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 200;
  opt.factors.paper = true;  // the paper's term Var(B)/Var(L); shares: shares_test.cc
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *b = by_name(*a, "B");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->ci95.has_value());
  EXPECT_NEAR(b->contribution, r, 1e-9);
  double width = b->ci95->second - b->ci95->first;
  EXPECT_GT(width, 0.75 * 2 * 1.96 * se) << "se " << se;
  EXPECT_LT(width, 1.3 * 2 * 1.96 * se) << "se " << se;
  EXPECT_LT(b->ci95->first, r);
  EXPECT_GT(b->ci95->second, r);
}

}  // namespace
}  // namespace vprof::testing

namespace vprof::testing {
namespace {

TEST(Factors, TailShareAndTypeSplit) {
  // 100 intervals of R(1) calling A(2) (site 1) then B(3) (site 2); latency
  // = 1 (R's body) + A + B. Interval i (0-based): even i: A = 10, type "x";
  // odd i: A = 30, type "y"; except i = 99: A = 10, B = 1000, type "x"; else
  // B = 10. So x = 50 × 21 ns + one 1011 ns, y = 49 × 41 ns; E[L] = 40.7.
  // p99 by nearest rank is the 99th smallest = 41, so the tail (L >= 41) is
  // the 49 y intervals and the 1011 one: E[L | tail] = (49·41 + 1011)/50 = 60.4.
  // B: E[B | tail] = (49·10 + 1000)/50 = 29.8, E[B] = 19.9 -> 9.9 / 19.7.
  // A: E[A | tail] = (49·30 + 10)/50 = 29.6, E[A] = 19.8 -> 9.8 / 19.7.
  // The two shares add up to 1: the body is constant.
  TraceBuilder tb;
  uint32_t x = tb.label("x"), y = tb.label("y");
  for (int i = 0; i < 100; ++i) {
    int64_t t = i * 10000, a = i == 99 ? 10 : (i % 2 ? 30 : 10), b = i == 99 ? 1000 : 10;
    tb.thread(1).begin(t, i + 1, a == 30 ? y : x).enter(t, 1).call(t + 1, t + 1 + a, 1, 2)
        .call(t + 1 + a, t + 1 + a + b, 2, 3).exit(t + 1 + a + b, 1).end(t + 1 + a + b, i + 1);
  }
  Names names = make_names({{1, "R"}, {2, "A"}, {3, "B"}}, {{1, 1, "A", 10}, {2, 1, "B", 11}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  opt.factors.d = 0;
  opt.factors.k = 10;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *fb = by_name(*a, "B");
  const Factor *fa = by_name(*a, "A");
  ASSERT_TRUE(fb && fa && fb->tail99 && fa->tail99);
  EXPECT_NEAR(*fb->tail99, 9.9 / 19.7, 1e-12);
  EXPECT_NEAR(*fa->tail99, 9.8 / 19.7, 1e-12);
  EXPECT_NEAR(*fa->tail99 + *fb->tail99, 1.0, 1e-12);
  // What a fix would buy: L' = L - X + E[X].
  // Var(L): squares about 40.7: 50 x 19.7^2 + 49 x 0.3^2 + 970.3^2 = 960 891 (over 99).
  // B at its mean 19.9: L' = 30.9 (51 intervals, A = 10) or 50.9 (49): mean
  // 40.7, squares 51 x 9.8^2 + 49 x 10.2^2 = 9 996; p99 (99th smallest) 50.9.
  // A at its mean 19.8: L' = 30.8 (99) or 1020.8 (1): squares 99 x 9.9^2 +
  // 980.1^2 = 970 299 (A low in the slowest interval: fixing it widens L);
  // p99 30.8.
  ASSERT_TRUE(fb->fixed_var_change && fb->fixed_p99_change && fa->fixed_var_change && fa->fixed_p99_change);
  EXPECT_NEAR(*fb->fixed_var_change, 9996.0 / 960891.0 - 1, 1e-9);
  EXPECT_NEAR(*fb->fixed_p99_change, 50.9 / 41 - 1, 1e-9);
  EXPECT_NEAR(*fa->fixed_var_change, 970299.0 / 960891.0 - 1, 1e-9);
  EXPECT_NEAR(*fa->fixed_p99_change, 30.8 / 41 - 1, 1e-9);
  // Types (population moments): x has 51 intervals, mean 2061/51; y 49, mean 41.
  ASSERT_TRUE(a->types.labeled);
  EXPECT_NEAR(a->types.within_fraction + a->types.between_fraction, 1.0, 1e-12);
  double mx = 2061.0 / 51, my = 41, m = 40.7;
  double between = 0.51 * (mx - m) * (mx - m) + 0.49 * (my - m) * (my - m);
  double var = (50 * (21 - m) * (21 - m) + 49 * (41 - m) * (41 - m) + (1011 - m) * (1011 - m)) / 100;
  EXPECT_NEAR(a->types.between_fraction, between / var, 1e-12);
}

}  // namespace
}  // namespace vprof::testing

// A cause measured in the base run whose place later runs broke down keeps
// only the rest of it in the merged tree (LevelDB's CI session: AddRecord
// 4.6% merged, 29.4% in run 0): its interval, run 0's, is scaled to the
// value it is printed beside, as a later run's is, never excluding it.
TEST(Factors, AnIntervalMeasuredInTheBaseRunIsScaledToTheMergedValue) {
  vprof::analyzer::Factor f;
  f.run = 0;
  f.run_value = 0.294;
  f.ci95 = std::make_pair(0.224, 0.341);
  const auto ci = vprof::analyzer::ci95_at(f.ci95, f, 0.046);
  ASSERT_TRUE(ci);
  EXPECT_NEAR(ci->first, 0.224 * 0.046 / 0.294, 1e-12);
  EXPECT_NEAR(ci->second, 0.341 * 0.046 / 0.294, 1e-12);
  EXPECT_LT(ci->first, 0.046);
  EXPECT_GT(ci->second, 0.046);
  // Where the merged value is the run's, nothing moves; a value of the other
  // sign, or none measured in a run, leaves the interval as it is.
  EXPECT_EQ(*vprof::analyzer::ci95_at(f.ci95, f, 0.294), *f.ci95);
  EXPECT_EQ(*vprof::analyzer::ci95_at(f.ci95, f, -0.01), *f.ci95);
  f.run = -1;
  EXPECT_EQ(*vprof::analyzer::ci95_at(f.ci95, f, 0.046), *f.ci95);
}
