// Preemption in the factors and the report (docs/method.md, "The variance
// tree"): a function's factor leaves out its (preempted) leaves, and the
// report's share is theirs.
#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/preemption.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace vprof::analyzer;

TEST(PreemptedFactors, AConstantFunctionPreemptedCarriesNoShare) {
  // F(1) runs 30 ns of its own in every interval, G(2) 5 + i % 2 ns; F is
  // preempted for 0, 200, 0, 400, ... ns on top. L = 40 + (i % 2) + p: all
  // of Var(L) but G's bit is preemption. F's node share (p and all) is
  // nearly 1, its factor's (less the leaf) is exactly 0; G's is what is left.
  TraceBuilder tb;
  for (int i = 0; i < 8; ++i) {
    int64_t t = i * 10000, p = (i % 2) * 100 * (i + 1);
    auto &th = tb.thread(1).begin(t, i + 1).enter(t + 5, 1);
    th.preempted(t + 40 + p, t + 10, t + 10 + p);
    th.exit(t + 35 + p, 1).enter(t + 35 + p, 2).exit(t + 40 + p + i % 2, 2)
        .end(t + 40 + p + i % 2, i + 1);
  }
  AnalyzeOptions opt;
  opt.factors.d = 0.0;
  opt.factors.bootstrap = 50;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), Names{}, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *f = nullptr, *g = nullptr;
  for (const auto &x : a->factors) {
    EXPECT_NE(x.name, "fn#1 (body)") << "beside only (preempted) it is fn#1 itself";
    EXPECT_EQ(x.name.find("preempted"), std::string::npos) << "(preempted) is no factor";
    if (x.name == "fn#1") f = &x;
    if (x.name == "fn#2") g = &x;
  }
  ASSERT_TRUE(f && g);
  EXPECT_NEAR(f->share, 0.0, 1e-12);
  ASSERT_TRUE(f->ci95.has_value() || f->rank == 0);
  if (f->ci95) {
    EXPECT_NEAR(f->ci95->first, 0.0, 1e-9) << "the interval is of the same difference";
    EXPECT_NEAR(f->ci95->second, 0.0, 1e-9);
  }
  auto share = preemption_share(*a->runs.front());
  ASSERT_TRUE(share.has_value()) << "(preempted) leaves: measured";
  EXPECT_NEAR(*share + g->share, 1.0, 1e-9);
  EXPECT_GT(*share, 0.9);
}

// On a busy machine preemption may hold nearly all of Var(L), and every
// function of the code less than d of it: the session then stopped on
// "no factor reaches d" with the code's only variance unexplained
// (tests/iterate/contended.c's wake, beside busy loops). d is of the code's
// part: here F is preempted 400 ns in 1 interval in 4 (97.1% of Var(L)) and
// G runs 0 or 60 ns more (2.9%, uncorrelated with the preemption), and G is
// selected at d = 0.05; its share stays a fraction of Var(L).
TEST(PreemptedFactors, DIsOfTheCodesPartOfTheVarianceNotOfThePreemption) {
  TraceBuilder tb;
  for (int i = 0; i < 16; ++i) {
    int64_t t = i * 10000, p = i % 4 == 0 ? 400 : 0, g = (i / 8) % 2 * 60;
    auto &th = tb.thread(1).begin(t, i + 1).enter(t + 5, 1);
    th.preempted(t + 40 + p, t + 10, t + 10 + p);
    th.exit(t + 35 + p, 1).enter(t + 35 + p, 2).exit(t + 40 + p + g, 2).end(t + 40 + p + g, i + 1);
  }
  AnalyzeOptions opt;
  opt.factors.d = 0.05;
  opt.factors.bootstrap = 50;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), Names{}, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *g = nullptr;
  for (const auto &x : a->factors)
    if (x.name == "fn#2") g = &x;
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(g->share, 900.0 / 30900.0, 1e-6) << "a fraction of Var(L), not of the code's part";
  EXPECT_EQ(g->rank, 1) << "2.9% of Var(L) is all of the code's variance";
  EXPECT_NEAR(a->d_selected, 0.05 * 900.0 / 30900.0, 1e-6);
  EXPECT_EQ(a->d, 0.05);
}

// A call never broken down (its callee not instrumented) that is preempted
// inside, as a library call that wakes another thread is on a busy machine:
// the preemption is no part of the call's factor or cause. F(1) calls site 7
// for 20 ns in every interval and is preempted inside it for 0 or 100·(i+1)
// ns; G(2) runs 5 + i % 2 ns. Before, the site's node was a leaf holding the
// preemption: its factor and cause carried nearly all of Var(L).
TEST(PreemptedFactors, APreemptedCallThatIsNotBrokenDownCarriesOnlyItsRunningTime) {
  TraceBuilder tb;
  for (int i = 0; i < 8; ++i) {
    int64_t t = i * 10000, p = (i % 2) * 100 * (i + 1);
    auto &th = tb.thread(1).begin(t, i + 1).enter(t + 5, 1).site(t + 10, 7);
    th.preempted(t + 30 + p, t + 15, t + 15 + p);
    th.site_end(t + 30 + p, 7).exit(t + 35 + p, 1).enter(t + 35 + p, 2).exit(t + 40 + p + i % 2, 2)
        .end(t + 40 + p + i % 2, i + 1);
  }
  AnalyzeOptions opt;
  opt.factors.d = 0.0;
  opt.factors.bootstrap = 0;
  auto a = analyze_one(tb.build(), Names{}, opt);
  const Factor *g = nullptr;
  for (const auto &x : a->factors) {
    EXPECT_EQ(x.name.find("preempted"), std::string::npos) << "(preempted) is no factor";
    if (x.name == "fn#2") g = &x;
    else EXPECT_LT(std::abs(x.share), 1e-9) << x.name << " carries preemption";
  }
  ASSERT_TRUE(g);
  for (const auto &c : a->causes.ranked) {
    if (c.name == "fn#2") continue;
    EXPECT_LT(std::abs(c.share), 1e-9) << "cause " << c.name << " carries preemption";
  }
  ASSERT_FALSE(a->causes.ranked.empty());
  EXPECT_EQ(a->causes.ranked.front().name, "fn#2");
  auto share = preemption_share(*a->runs.front());
  ASSERT_TRUE(share.has_value());
  EXPECT_NEAR(*share + g->share, 1.0, 1e-9);
}

TEST(PreemptedFactors, WithoutProcessFilesOrLeavesPreemptionIsNotMeasured) {
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(5, 1).exit(35, 1).end(40, 1);
  tb.thread(1).begin(100, 2).enter(105, 1).exit(145, 1).end(150, 2);
  AnalyzeOptions opt;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), Names{}, opt, 0).value());
  EXPECT_FALSE(preemption_share(*runs.front()).has_value());
}

}  // namespace
}  // namespace vprof::testing
