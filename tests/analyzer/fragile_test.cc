// Fragile answers and per-run confidence: a factor
// carried by one interval is flagged and ranked at half its score; a factor
// grafted from a later run gets its interval and tail from that run alone.
#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;
using nlohmann::json;

const Factor *by_name(const Analysis &a, const std::string &n) {
  for (const auto &f : a.factors)
    if (f.name == n) return &f;
  return nullptr;
}

double mean(const std::vector<double> &x) {
  double s = 0;
  for (double v : x) s += v;
  return s / double(x.size());
}

// Per-interval pieces of Cov(x, l) (times n − 1).
std::vector<double> pieces(const std::vector<double> &x, const std::vector<double> &l) {
  const double mx = mean(x), ml = mean(l);
  std::vector<double> p;
  for (size_t i = 0; i < x.size(); ++i) p.push_back((x[i] - mx) * (l[i] - ml));
  return p;
}

double sum(const std::vector<double> &v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// R(1) calls A(2) through site 1, B(3) through site 2 and D(4) through site
// 3 in each of n intervals. A alternates 10 / 210 ns (stable); B is 10 ns
// except in interval 7, where it takes 10 + 5000 ns: one planted outlier.
// With n = 2000, Var(B) ≈ 5000²/2000 = 12500 > Var(A) ≈ 10000, so B's share
// and score are the larger, and nearly all of it is that one interval. D
// (10 / 356 ns in pairs, Var ≈ 30000, uncorrelated with A) is the bulk of
// Var(L), so that dropping the outlier from a resample moves A's share by a
// quarter, not to 1: A's interval stays narrow.
struct Outlier {
  trace::Trace trace;
  std::vector<double> a, b, l;
};

int64_t d_ns(int i) { return 10 + ((i / 2) % 2) * 346; }

Outlier outlier_trace(int n) {
  Outlier o;
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < n; ++i) {
    int64_t a = 10 + (i % 2) * 200, b = 10 + (i == 7 ? 5000 : 0);
    int64_t t = int64_t(i) * 100000;
    th.begin(t, uint64_t(i) + 1).enter(t, 1).call(t + 1, t + 1 + a, 1, 2);
    int64_t u = t + 1 + a;
    th.call(u + 1, u + 1 + b, 2, 3);
    u += 1 + b;
    th.call(u + 1, u + 1 + d_ns(i), 3, 4);
    u += 1 + d_ns(i) + 1;
    th.exit(u, 1).end(u, uint64_t(i) + 1);
    o.a.push_back(double(a));
    o.b.push_back(double(b));
    o.l.push_back(double(u - t));
  }
  o.trace = tb.build();
  return o;
}

Names outlier_names() {
  return make_names({{1, "R"}, {2, "A"}, {3, "B"}, {4, "D"}},
                    {{1, 1, "A", 10}, {2, 1, "B", 20}, {3, 1, "D", 30}});
}

TEST(Fragile, PlantedSingleOutlierIsFragileAndRankedBelowAStableFactor) {
  const int n = 2000;
  Outlier t = outlier_trace(n);
  AnalyzeOptions opt;
  opt.root = "R";
  opt.factors.k = 3;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t.trace, outlier_names(), opt, 0).value());
  auto an = combine(std::move(runs), opt);
  const Factor *a = by_name(*an, "A"), *b = by_name(*an, "B");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);

  // By hand: the shares, and B's concentration (its pieces of Cov(B, L)).
  const double var_l = sum(pieces(t.l, t.l));
  EXPECT_NEAR(a->share, sum(pieces(t.a, t.l)) / var_l, 1e-9);
  EXPECT_NEAR(b->share, sum(pieces(t.b, t.l)) / var_l, 1e-9);
  std::vector<double> pb = pieces(t.b, t.l);
  const double total_b = sum(pb);
  std::sort(pb.begin(), pb.end(), std::greater<>());
  ASSERT_TRUE(b->max_one && b->top_share);
  EXPECT_NEAR(*b->max_one, pb[0] / total_b, 1e-9);
  EXPECT_NEAR(*b->top_share, (pb[0] + pb[1]) / total_b, 1e-9) << "ceil(0.1% of 2000) = 2 intervals";
  EXPECT_GT(*b->max_one, 0.5);

  // Similar scores, B's the larger; B is fragile, A is not, so A ranks first.
  EXPECT_GT(b->score, a->score);
  EXPECT_LT(b->score, 2 * a->score);
  EXPECT_TRUE(b->fragile);
  EXPECT_FALSE(a->fragile);
  ASSERT_TRUE(a->ci95);
  EXPECT_LT(a->ci95->second - a->ci95->first, a->share);
  const Factor *d = by_name(*an, "D");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->fragile);
  EXPECT_EQ(d->rank, 1);
  EXPECT_EQ(a->rank, 2);
  EXPECT_EQ(b->rank, 3);

  // Both reports say so.
  json j = to_json(*an);
  ASSERT_EQ(j["factors"].size(), 3u);
  EXPECT_EQ(j["factors"][1]["name"], "A");
  EXPECT_EQ(j["factors"][1]["fragile"], false);
  EXPECT_EQ(j["factors"][2]["name"], "B");
  EXPECT_EQ(j["factors"][2]["fragile"], true);
  EXPECT_NEAR(j["factors"][2]["top_0.1%"].get<double>(), *b->top_share, 1e-12);
  EXPECT_EQ(j["factors"][2]["run"], 0);
  EXPECT_EQ(j["runs"][0]["interval_ids"]["first"], 1);
  EXPECT_EQ(j["runs"][0]["interval_ids"]["last"], n);
  std::ostringstream text;
  ASSERT_TRUE(make_terminal_reporter()->write(*an, text));
  EXPECT_NE(text.str().find("fragile"), std::string::npos);
}

TEST(Fragile, AStableFactorJustOutsideTheTopKReplacesAFragileOne) {
  // k = 2: by score D and B are selected, A is third. B is fragile, so A (its
  // score more than half B's) is assessed too and takes B's place.
  Outlier t = outlier_trace(2000);
  AnalyzeOptions opt;
  opt.root = "R";
  opt.factors.k = 2;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t.trace, outlier_names(), opt, 0).value());
  auto an = combine(std::move(runs), opt);
  const Factor *a = by_name(*an, "A"), *b = by_name(*an, "B"), *d = by_name(*an, "D");
  ASSERT_TRUE(a && b && d);
  EXPECT_GT(b->score, a->score);
  EXPECT_EQ(d->rank, 1);
  EXPECT_EQ(a->rank, 2);
  EXPECT_EQ(b->rank, 0);
  EXPECT_TRUE(b->fragile);
  EXPECT_TRUE(a->ci95 && a->tail99) << "the selected factor was assessed";
}

TEST(Fragile, AFragileFactorWithMoreThanTwiceTheScoreStillRanksFirst) {
  // The same outlier made four times as heavy: Var(B) ≈ 20000²/2000 = 200000,
  // twenty times A's, so half of B's score is still well above A's and D's.
  Outlier t;
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < 2000; ++i) {
    int64_t a = 10 + (i % 2) * 200, b = 10 + (i == 7 ? 20000 : 0);
    int64_t t0 = int64_t(i) * 100000;
    th.begin(t0, uint64_t(i) + 1).enter(t0, 1).call(t0 + 1, t0 + 1 + a, 1, 2);
    int64_t u = t0 + 1 + a;
    th.call(u + 1, u + 1 + b, 2, 3);
    u += 1 + b;
    th.call(u + 1, u + 1 + d_ns(i), 3, 4);
    u += 1 + d_ns(i) + 1;
    th.exit(u, 1).end(u, uint64_t(i) + 1);
  }
  AnalyzeOptions opt;
  opt.root = "R";
  opt.factors.k = 3;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), outlier_names(), opt, 0).value());
  auto an = combine(std::move(runs), opt);
  const Factor *a = by_name(*an, "A"), *b = by_name(*an, "B");
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(b->fragile);
  EXPECT_GT(0.5 * b->score, a->score);
  EXPECT_EQ(b->rank, 1);
}

// Run 0: R(1) calls A(2) through site 1, A not broken down. Run 1 breaks A
// down: A's body is 5 ns, and A calls C(3) through site 3, which varies.
trace::Trace deep_run(bool broken_down, unsigned seed, int n) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> c_ns(0, 1000), r_ns(0, 50);
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < n; ++i) {
    int64_t t = int64_t(i) * 100000, c = c_ns(rng), r = r_ns(rng);
    th.begin(t, uint64_t(i) + 1).enter(t, 1);
    t += r;
    if (broken_down) {
      th.site(t, 1).enter(t, 2).call(t + 5, t + 5 + c, 3, 3);
      t += 5 + c;
      th.exit(t, 2).site_end(t, 1);
    } else {
      th.call(t, t + 5 + c, 1, 2);
      t += 5 + c;
    }
    th.exit(t, 1).end(t, uint64_t(i) + 1);
  }
  return tb.build();
}

Names deep_names() {
  return make_names({{1, "R"}, {2, "A"}, {3, "C"}}, {{1, 1, "A", 10}, {3, 2, "C", 30}});
}

TEST(Fragile, DeepFactorFromALaterRunGetsThatRunsIntervalAndTail) {
  AnalyzeOptions opt;
  opt.root = "R";
  opt.factors.k = 3;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(deep_run(false, 1, 800), deep_names(), opt, 0).value());
  runs.push_back(analyze_run(deep_run(true, 2, 600), deep_names(), opt, 1).value());
  auto merged = combine(std::move(runs), opt);
  const Factor *c = by_name(*merged, "C");
  ASSERT_NE(c, nullptr);
  ASSERT_GT(c->rank, 0);
  ASSERT_EQ(c->instances.size(), 1u);
  EXPECT_EQ(c->instances[0]->run, 1) << "grafted from run 1";
  EXPECT_EQ(c->run, 1);

  // Run 1 on its own: C is measured there against run 1's own root.
  std::vector<std::unique_ptr<RunAnalysis>> alone;
  alone.push_back(analyze_run(deep_run(true, 2, 600), deep_names(), opt, 0).value());
  auto single = combine(std::move(alone), opt);
  const Factor *c1 = by_name(*single, "C");
  ASSERT_NE(c1, nullptr);
  ASSERT_TRUE(c1->ci95 && c1->tail99 && c1->top_share);
  ASSERT_TRUE(c->ci95) << "was null for every factor of a later run";
  ASSERT_TRUE(c->tail99);
  ASSERT_TRUE(c->run_value && c->top_share);
  EXPECT_NEAR(*c->run_value, c1->share, 1e-12);
  EXPECT_NEAR(c->ci95->first, c1->ci95->first, 1e-12);
  EXPECT_NEAR(c->ci95->second, c1->ci95->second, 1e-12);
  EXPECT_NEAR(*c->tail99, *c1->tail99, 1e-12);
  EXPECT_NEAR(*c->top_share, *c1->top_share, 1e-12);

  json j = to_json(*merged);
  bool seen = false;
  for (const auto &f : j["factors"]) {
    EXPECT_FALSE(f["ci95"].is_null()) << f["name"];
    if (f["name"] != "C") continue;
    seen = true;
    EXPECT_EQ(f["run"], 1);
    EXPECT_FALSE(f["tail"]["p99"].is_null());
  }
  EXPECT_TRUE(seen);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["intervals"], 600);
  EXPECT_EQ(j["runs"][1]["interval_ids"]["first"], 1);
  EXPECT_EQ(j["runs"][1]["interval_ids"]["last"], 600);
}

}  // namespace
}  // namespace vprof::testing

namespace vprof::testing {
namespace {

using namespace analyzer;

// R calls A (site 1) and B (site 2); A and B each call C (sites 3 and 4),
// whose time varies. Run 0 breaks down A, run 1 breaks down B.
trace::Trace split_run(bool a_broken_down, uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> c_ns(1000, 200000);
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < n; ++i) {
    int64_t t = int64_t(i) * 1000000;
    th.begin(t, uint64_t(i) + 1).enter(t, 1);
    const int64_t ca = c_ns(rng), cb = c_ns(rng);
    if (a_broken_down) {
      th.site(t, 1).enter(t, 2).call(t + 5, t + 5 + ca, 3, 4);
      t += 5 + ca;
      th.exit(t, 2).site_end(t, 1);
      th.call(t, t + 5 + cb, 2, 3);
      t += 5 + cb;
    } else {
      th.call(t, t + 5 + ca, 1, 2);
      t += 5 + ca;
      th.site(t, 2).enter(t, 3).call(t + 5, t + 5 + cb, 4, 4);
      t += 5 + cb;
      th.exit(t, 3).site_end(t, 2);
    }
    th.exit(t, 1).end(t, uint64_t(i) + 1);
  }
  return tb.build();
}

Names split_names() {
  return make_names({{1, "R"}, {2, "A"}, {3, "B"}, {4, "C"}},
                    {{1, 1, "A", 10}, {2, 1, "B", 11}, {3, 2, "C", 20}, {4, 3, "C", 30}});
}

// MariaDB's session 6: buf_page_get_gen's call sites were first timed in
// different runs, no one run held them all, and its ci95, p99 and top.1%
// read "-" with nothing in the legend to say why.
TEST(Fragile, AFactorNoOneRunHoldsSaysWhyItsColumnsAreEmpty) {
  AnalyzeOptions opt;
  opt.root = "R";
  opt.factors.k = 3;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(split_run(true, 1, 600), split_names(), opt, 0).value());
  runs.push_back(analyze_run(split_run(false, 2, 600), split_names(), opt, 1).value());
  auto merged = combine(std::move(runs), opt);
  const Factor *c = by_name(*merged, "C");
  ASSERT_NE(c, nullptr);
  ASSERT_GT(c->rank, 0);
  ASSERT_EQ(c->instances.size(), 2u);
  EXPECT_NE(c->instances[0]->run, c->instances[1]->run) << "one call site from each run";
  EXPECT_LT(c->run, 0) << "no one run holds both";
  EXPECT_FALSE(c->ci95);
  std::ostringstream out;
  ASSERT_TRUE(make_terminal_reporter()->write(*merged, out).ok());
  EXPECT_NE(out.str().find("   - = no one run holds all of the factor's call sites"), std::string::npos) << out.str();

  // One run: every factor has its run, and the legend says nothing of it.
  std::vector<std::unique_ptr<RunAnalysis>> alone;
  alone.push_back(analyze_run(split_run(true, 1, 600), split_names(), opt, 0).value());
  auto single = combine(std::move(alone), opt);
  std::ostringstream one;
  ASSERT_TRUE(make_terminal_reporter()->write(*single, one).ok());
  EXPECT_EQ(one.str().find("no one run holds"), std::string::npos) << one.str();
}

}  // namespace
}  // namespace vprof::testing
