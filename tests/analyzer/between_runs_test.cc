// How runs differ (docs/method.md): a factor's interval adds the spread of its
// value between the runs that hold it alike to its measuring run's bootstrap.
// R(1) calls B(2) at site 1 and C(3) at site 2, each time uniform.
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// 400 intervals: B ~ U[0, b), C ~ U[0, c); without `c_timed` C's time is
// R's own (its call not instrumented in that run).
trace::Trace run_of(int b, int c, unsigned seed, bool c_timed = true) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> ub(0, b - 1), uc(0, c - 1);
  TraceBuilder tb;
  for (int i = 0; i < 400; ++i) {
    const int64_t t = int64_t(i) * 10000, xb = ub(rng), xc = uc(rng);
    auto &th = tb.thread(1);
    th.begin(t, uint64_t(i) + 1).enter(t, 1).call(t + 1, t + 1 + xb, 1, 2);
    if (c_timed) th.call(t + 2 + xb, t + 2 + xb + xc, 2, 3);
    th.exit(t + 3 + xb + xc, 1).end(t + 3 + xb + xc, uint64_t(i) + 1);
  }
  return tb.build();
}

Names names() { return make_names({{1, "R"}, {2, "B"}, {3, "C"}}, {{1, 1, "B", 10}, {2, 1, "C", 11}}); }

std::unique_ptr<Analysis> analyze_runs(const std::vector<trace::Trace> &traces) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 200;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  for (size_t r = 0; r < traces.size(); ++r) runs.push_back(analyze_run(traces[r], names(), opt, int(r)).value());
  return combine(std::move(runs), opt);
}

const Factor *named(const Analysis &a, const std::string &n) {
  for (const Factor &f : a.factors)
    if (f.name == n) return &f;
  std::string all;
  for (const Factor &f : a.factors) all += " '" + f.name + "'";
  ADD_FAILURE() << "no factor " << n << " among" << all;
  return nullptr;
}

TEST(BetweenRuns, RunsThatAgreeKeepTheMeasuringRunsInterval) {
  const trace::Trace t = run_of(1000, 1000, 1);
  auto a = analyze_runs({t, t, t});
  const Factor *b = named(*a, "B");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->ci95);
  EXPECT_EQ(b->runs_measured(), 3);
  ASSERT_TRUE(b->runs_ci95);
  EXPECT_EQ(*b->runs_ci95, *b->ci95) << "no spread between identical runs";
}

TEST(BetweenRuns, AShareThatMovesFromRunToRunHasTheirSpreadInItsInterval) {
  // B's share about 0.5, 0.8 and 0.2 of Var(L) in the three runs.
  auto a = analyze_runs({run_of(1000, 1000, 1), run_of(2000, 1000, 2), run_of(1000, 2000, 3)});
  const Factor *b = named(*a, "B");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->ci95 && b->runs_ci95 && b->run_value);
  ASSERT_EQ(b->run_values.size(), 3u);
  EXPECT_NEAR(b->run_values[1], 0.8, 0.08);
  EXPECT_NEAR(b->run_values[2], 0.2, 0.08);
  // The runs' spread (sd about 0.3) dwarfs one run's bootstrap (about 0.05 a side).
  EXPECT_LT(b->runs_ci95->first, b->ci95->first - 0.3);
  EXPECT_GT(b->runs_ci95->second, b->ci95->second + 0.3);
  for (double v : b->run_values) {
    EXPECT_GT(v, b->runs_ci95->first);
    EXPECT_LT(v, b->runs_ci95->second);
  }
}

TEST(BetweenRuns, ABodyBesideOtherPartsInAnotherRunIsNotHeldThere) {
  // Run 0 did not time C: R's body holds C's time there, and run 1's body
  // (C timed beside it) is another quantity. B's call is the same in both.
  auto a = analyze_runs({run_of(1000, 1000, 1, false), run_of(1000, 1000, 2)});
  const Factor *body = named(*a, "R (body)");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->run, 0);
  EXPECT_EQ(body->runs_measured(), 1);
  EXPECT_FALSE(body->runs_ci95);
  const Factor *b = named(*a, "B");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->runs_measured(), 2);
}

// A run of the same build and probes again (an iterate session's `again`
// run) measures the spread between runs and grafts nothing: here the repeat
// breaks down B's call, which the first run left whole (as a wait that met a
// holder in one run and none in the other), and it is not grafted; without
// `repeat` it is.
TEST(BetweenRuns, ARepeatedRunWidensIntervalsAndGraftsNothing) {
  // Site 1 timed without its callee entered (a leaf), or B(2) entered there,
  // calling D(4) at site 3.
  auto run = [](bool broken_down, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> u(0, 999);
    TraceBuilder tb;
    for (int i = 0; i < 400; ++i) {
      const int64_t t = int64_t(i) * 10000, xb = u(rng), xc = u(rng);
      auto &th = tb.thread(1);
      th.begin(t, uint64_t(i) + 1).enter(t, 1).site(t + 1, 1);
      if (broken_down) th.enter(t + 1, 2).call(t + 2, t + 2 + xb, 3, 4).exit(t + 3 + xb, 2);
      th.site_end(t + 3 + xb, 1).call(t + 4 + xb, t + 4 + xb + xc, 2, 3);
      th.exit(t + 5 + xb + xc, 1).end(t + 5 + xb + xc, uint64_t(i) + 1);
    }
    return tb.build();
  };
  auto b_whole = [&] { return run(false, 6); };
  auto b_broken_down = [&] { return run(true, 5); };
  const Names n = make_names({{1, "R"}, {2, "B"}, {3, "C"}, {4, "D"}},
                             {{1, 1, "B", 10}, {2, 1, "C", 11}, {3, 2, "D", 20}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 200;
  auto combined = [&](bool repeat) {
    std::vector<std::unique_ptr<RunAnalysis>> runs;
    runs.push_back(analyze_run(b_whole(), n, opt, 0).value());
    runs.push_back(analyze_run(b_broken_down(), n, opt, 1).value());
    runs[1]->repeat = repeat;
    return combine(std::move(runs), opt);
  };
  auto names_d = [](const VarNode &t) {
    std::function<bool(const VarNode &)> has = [&](const VarNode &v) {
      if (!v.functions.empty() && v.functions[0] == "D") return true;
      for (const VarNode &c : v.children)
        if (has(c)) return true;
      return false;
    };
    return has(t);
  };
  auto grafted = combined(false);
  EXPECT_TRUE(names_d(grafted->tree)) << "a later run's breakdown of a leaf is grafted";
  // A factor measured in the later run: its intervals there are around its
  // value there, and the JSON gives them as the table does, scaled to the
  // merged share it stands by (they had been the run's own, beside the
  // merged share: the HTML's bar drew an interval that missed its value).
  const Factor *d = named(*grafted, "D");
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->run, 1);
  ASSERT_TRUE(d->ci95 && d->run_value);
  ASSERT_NE(*d->run_value, d->share);
  const nlohmann::json j = to_json(*grafted);
  bool seen = false;
  for (const nlohmann::json &f : j["factors"]) {
    if (f["name"] != "D") continue;
    seen = true;
    const double lo = f["ci95_within_run"][0], hi = f["ci95_within_run"][1];
    const double scale = d->share / *d->run_value;
    EXPECT_NEAR(lo, d->ci95->first * scale, 1e-9);
    EXPECT_NEAR(hi, d->ci95->second * scale, 1e-9);
    EXPECT_LE(double(f["ci95"][0]), d->share);
    EXPECT_GE(double(f["ci95"][1]), d->share);
  }
  EXPECT_TRUE(seen);
  auto repeated = combined(true);
  EXPECT_FALSE(names_d(repeated->tree)) << "a repeat's is not";
  EXPECT_TRUE(repeated->disagreements.empty());
  // Its factors are the first run's, their intervals held by both runs.
  std::vector<std::unique_ptr<RunAnalysis>> alone;
  alone.push_back(analyze_run(b_whole(), n, opt, 0).value());
  auto first = combine(std::move(alone), opt);
  ASSERT_EQ(repeated->factors.size(), first->factors.size());
  for (size_t i = 0; i < first->factors.size(); ++i) {
    EXPECT_EQ(repeated->factors[i].name, first->factors[i].name);
    EXPECT_EQ(repeated->factors[i].share, first->factors[i].share);
  }
  const Factor *c = named(*repeated, "C");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->runs_measured(), 2);
}

}  // namespace
}  // namespace vprof::testing
