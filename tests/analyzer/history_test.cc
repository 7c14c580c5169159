// The gate against a history of main (analyzer/diff/history.h), on runs with
// known noise: runs of 1000 intervals, log-normal, each run's level off by a
// few percent, and one run in fifteen with a stall burst (its p99 doubles, as
// in minidb's runs). A head of the same build passes, a planted step is caught and
// named, and change points land where a step was planted.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "analyzer/diff/history.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// One run: every interval's latency times `scale`; "slow" is the factor a
// planted step adds to (`extra` of each interval), "rest" the remainder.
RunSummary run(std::mt19937_64 &rng, double scale = 1.0, double extra = 0.0, const std::string &commit = "") {
  std::normal_distribution<double> z(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  const double level = std::exp(0.03 * z(rng));
  const bool burst = u(rng) < 1.0 / 15;
  RunSummary r;
  r.commit = commit;
  // A planted delay: exponential, of mean `extra` of the median latency.
  std::exponential_distribution<double> delay(1.0 / std::max(extra * 1e6, 1.0));
  std::vector<double> slow, lat;
  for (int i = 0; i < 1000; ++i) {
    double l = 1e6 * level * scale * std::exp(0.3 * z(rng));
    if (burst && u(rng) < 0.02) l *= 5;
    const double e = extra > 0 ? delay(rng) : 0.0;
    slow.push_back(e);
    lat.push_back(l + e);
  }
  const double n = double(lat.size());
  double mean = 0;
  for (double l : lat) mean += l / n;
  double var = 0, cs = 0;
  for (size_t i = 0; i < lat.size(); ++i) {
    var += (lat[i] - mean) * (lat[i] - mean) / (n - 1);
    cs += slow[i] * (lat[i] - mean) / (n - 1);
  }
  r.mean = mean;
  r.var = var;
  r.cov["slow"] = cs;
  r.cov["rest"] = var - cs;
  std::vector<double> s = lat;
  std::sort(s.begin(), s.end());
  r.p50 = s[499];
  r.p90 = s[899];
  r.p99 = s[989];
  r.p999 = s[998];
  return r;
}

TEST(History, TheSameBuildPassesAndWhatTheRunsCouldCatchIsSaid) {
  std::mt19937_64 rng(7);
  std::vector<RunSummary> history;
  for (int i = 0; i < 20; ++i) history.push_back(run(rng));
  int regressions = 0;
  std::string detectable;
  for (int d = 0; d < 100; ++d) {
    std::vector<RunSummary> head{run(rng), run(rng), run(rng)};
    HistoryOptions o;
    o.seed = uint64_t(d) + 1;
    auto v = judge(history, head, o);
    ASSERT_TRUE(v.ok()) << v.error().message;
    regressions += v->regression;
    detectable = v->detectable;
  }
  // alpha 1% over the four gated checks, exact over arrangements of the
  // history's and the head's runs; against one fixed history (whose own
  // draw of runs may sit low) a few in 100 at most.
  EXPECT_LE(regressions, 3);
  EXPECT_NE(detectable.find("with 3 runs against 20, a p90 increase of 100% or more"), std::string::npos) << detectable;
  EXPECT_NE(detectable.find("a p90/p50 increase of"), std::string::npos) << detectable;
}

// A run's p99 with a stall burst doubles (one run in six or seven on
// minidb). Two burst runs among a head's three of the same build are outlier
// runs, judged by their count against the history's (as many among any 3 of
// the 23 runs: 1 time in 9 here), not a shift of the head's level (which they
// moved +107% and +121% on minidb: 2 false alarms in 20); a head whose runs
// all moved +35% is still a regression, and so is one of 5 runs each an
// outlier (3 would not be: among this history's 3 bursts, 3 of 3 happen 1
// time in 90). The levels gated from +5% (a host that holds still).
TEST(History, TwoStallBurstsAmongThreeRunsAreOutliersNotARegression) {
  auto summary = [](double p99) {
    RunSummary r;
    r.p50 = 1e6;
    r.p90 = 2e6;
    r.p99 = p99;
    r.p999 = 2 * p99;
    r.mean = 1.2e6;
    r.var = 1e12 * p99 / 4e6;
    return r;
  };
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0, 1);
  std::vector<RunSummary> history;
  for (int i = 0; i < 20; ++i) history.push_back(summary(4e6 * std::exp(0.1 * z(rng)) * (i % 7 == 3 ? 2.2 : 1.0)));
  HistoryOptions o;
  o.max_level_increase = 0.05;
  auto two_bursts = judge(history, {summary(8.8e6), summary(9.4e6), summary(4.1e6)}, o);
  ASSERT_TRUE(two_bursts.ok()) << two_bursts.error().message;
  EXPECT_FALSE(two_bursts->regression) << two_bursts->summary;
  EXPECT_NE(two_bursts->summary.find("2 of 3 runs with a p99 beyond"), std::string::npos) << two_bursts->summary;
  auto moved = judge(history, {summary(5.3e6), summary(5.5e6), summary(5.4e6)}, o);
  ASSERT_TRUE(moved.ok());
  EXPECT_TRUE(moved->regression) << moved->summary;
  auto all_out = judge(history, {summary(9e6), summary(9.5e6), summary(9.2e6), summary(9.1e6), summary(9.3e6)}, o);
  ASSERT_TRUE(all_out.ok());
  EXPECT_TRUE(all_out->regression) << all_out->summary;
  // Against a history without a burst, one outlier run of three is as
  // likely as 3 in 23 and two as 21 in 1 771: three are what 3 runs could
  // catch (the count printed is with the head's outliers in the pool).
  std::vector<RunSummary> quiet;
  for (int i = 0; i < 20; ++i) quiet.push_back(summary(4e6 * std::exp(0.1 * z(rng))));
  auto calm = judge(quiet, {summary(4.1e6), summary(3.9e6), summary(4e6)}, o);
  ASSERT_TRUE(calm.ok());
  EXPECT_EQ(calm->checks.back().detectable, 3.0) << calm->detectable;
  EXPECT_NE(calm->detectable.find("3 outlier runs of 3 would be caught"), std::string::npos) << calm->detectable;
}

TEST(History, APlantedStepIsCaughtAndItsFactorNamed) {
  std::mt19937_64 rng(11);
  std::vector<RunSummary> history;
  for (int i = 0; i < 20; ++i) history.push_back(run(rng));
  int caught = 0, named = 0;
  for (int d = 0; d < 30; ++d) {
    // A delay of mean 40% of the median latency in every interval: "slow".
    std::vector<RunSummary> head{run(rng, 1.0, 0.4), run(rng, 1.0, 0.4), run(rng, 1.0, 0.4)};
    auto v = judge(history, head, HistoryOptions{});
    ASSERT_TRUE(v.ok());
    caught += v->regression;
    // The named factor's share is reported beside the history's largest
    // ("rest"), and its rise is beyond what chance among the runs gives.
    auto slow = std::find_if(v->shares.begin(), v->shares.end(), [](const HistoryCheck &c) { return c.what == "slow"; });
    ASSERT_NE(slow, v->shares.end());
    EXPECT_GT(slow->change, 0.1);
    EXPECT_LE(slow->p, v->level);
    EXPECT_TRUE(std::isfinite(slow->detectable));
    EXPECT_EQ(v->shares.front().what, "rest");
    if (v->regression) {
      ASSERT_FALSE(v->moved.empty());
      // Named first, unless two of the three runs had a stall burst (their
      // bursts then outgrow the delay in "rest": one time in 60 or so).
      named += v->moved.front().factor == "slow" && v->summary.find("from slow") != std::string::npos;
    }
  }
  EXPECT_EQ(caught, 30);
  EXPECT_GE(named, 27);
}

// How far p90 lies beyond the median settles where p90 does not: a run's
// disk or load moves its whole distribution (here each run's level is off
// by 15%, a log spread near minidb's p90's), and the ratio cancels it. A
// change that widens the distribution by a fifth (p90 +8% at an unchanged
// median) is below what 3 runs' p90 can catch and is caught by p90/p50.
TEST(History, AWiderDistributionIsCaughtByP90OverP50WhereP90IsNoise) {
  auto runs = [](std::mt19937_64 &rng, double sigma) {
    std::normal_distribution<double> z(0, 1);
    const double level = std::exp(0.15 * z(rng));
    std::vector<double> lat;
    for (int i = 0; i < 1000; ++i) lat.push_back(1e6 * level * std::exp(sigma * z(rng)));
    std::sort(lat.begin(), lat.end());
    RunSummary r;
    r.p50 = lat[499];
    r.p90 = lat[899];
    r.p99 = lat[989];
    r.p999 = lat[998];
    double mean = 0, var = 0;
    for (double l : lat) mean += l / 1000;
    for (double l : lat) var += (l - mean) * (l - mean) / 999;
    r.mean = mean;
    r.var = var;
    r.cov["rest"] = var;
    return r;
  };
  std::mt19937_64 rng(17);
  std::vector<RunSummary> history;
  for (int i = 0; i < 20; ++i) history.push_back(runs(rng, 0.3));
  int caught = 0, by_ratio = 0, same = 0;
  for (int d = 0; d < 10; ++d) {
    auto wide = judge(history, {runs(rng, 0.36), runs(rng, 0.36), runs(rng, 0.36)}, HistoryOptions{});
    ASSERT_TRUE(wide.ok());
    caught += wide->regression;
    for (const HistoryCheck &c : wide->checks) by_ratio += c.what == "p90/p50" && c.regression;
    auto unchanged = judge(history, {runs(rng, 0.3), runs(rng, 0.3), runs(rng, 0.3)}, HistoryOptions{});
    ASSERT_TRUE(unchanged.ok());
    same += unchanged->regression;
    if (d == 0) EXPECT_NE(wide->summary.find("p90/p50 +"), std::string::npos) << wide->summary;
  }
  EXPECT_GE(caught, 9);
  EXPECT_GE(by_ratio, 9);
  EXPECT_LE(same, 1);
}

// A ratio's spread is small, so a change's every run lies beyond its outlier
// line: such runs count at the line, not at the history's level (left out,
// a head of three such runs against a history with one was a pass).
TEST(History, RunsBeyondTheRatiosOutlierLineCountAtTheLine) {
  auto summary = [](double ratio) {
    RunSummary r;
    r.p50 = 1e6;
    r.p90 = 1e6 * ratio;
    r.p99 = 4e6;
    r.p999 = 8e6;
    r.mean = 1.2e6;
    r.var = 1e12;
    return r;
  };
  std::mt19937_64 rng(23);
  std::normal_distribution<double> z(0, 1);
  std::vector<RunSummary> history;
  for (int i = 0; i < 20; ++i) history.push_back(summary(std::exp(0.3 + 0.02 * z(rng)) * (i == 9 ? 1.7 : 1.0)));
  auto v = judge(history, {summary(1.57), summary(1.62), summary(1.55)}, HistoryOptions{});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->regression) << v->summary;
  const HistoryCheck &ratio = *std::find_if(v->checks.begin(), v->checks.end(),
                                            [](const HistoryCheck &c) { return c.what == "p90/p50"; });
  EXPECT_TRUE(ratio.regression) << v->summary;
  EXPECT_TRUE(std::isfinite(ratio.detectable));
}

// Everything 8% slower alike (p50 as p90, the spread unmoved), as a build
// that slowed or a host that did: by default a pass that says the levels
// moved (they fail beyond +100%: a history cannot tell the two apart);
// with the levels gated from +5%, a regression that says the whole
// distribution shifted. So is everything 30% slower by default, its runs'
// p99 beyond the outlier line (+12% here), and everything 2.5 times as slow
// by p90 and p99 alone. A delay that widens the distribution is a
// regression either way, and says neither.
TEST(History, ADistributionShiftedAlikeIsSaidAndFailsBeyondTheLevelsThreshold) {
  std::mt19937_64 rng(29);
  std::vector<RunSummary> history;
  for (int i = 0; i < 20; ++i) history.push_back(run(rng));
  const std::vector<RunSummary> head{run(rng, 1.08), run(rng, 1.08), run(rng, 1.08)};
  auto slower = judge(history, head, HistoryOptions{});
  ASSERT_TRUE(slower.ok());
  EXPECT_FALSE(slower->regression) << slower->summary;
  EXPECT_NE(slower->summary.find("the levels moved, not beyond +100.0%: p90 +"), std::string::npos) << slower->summary;
  EXPECT_TRUE(slower->shifted.empty()) << slower->summary;
  HistoryOptions levels;
  levels.max_level_increase = 0.05;
  auto gated = judge(history, head, levels);
  ASSERT_TRUE(gated.ok());
  EXPECT_TRUE(gated->regression) << gated->summary;
  EXPECT_TRUE(gated->levels.empty()) << gated->summary;
  EXPECT_NE(gated->summary.find("the whole distribution shifted"), std::string::npos) << gated->summary;
  auto far = judge(history, {run(rng, 1.3), run(rng, 1.3), run(rng, 1.3)}, HistoryOptions{});
  ASSERT_TRUE(far.ok());
  EXPECT_TRUE(far->regression) << far->summary;
  EXPECT_NE(far->summary.find("3 of 3 runs with a p99 beyond"), std::string::npos) << far->summary;
  EXPECT_NE(far->summary.find("the whole distribution shifted"), std::string::npos) << far->summary;
  // Beyond the levels' threshold: p90 and p99 fail, however the outliers'
  // line lies (a history whose p99 spreads widely put it beyond +10 000%
  // in vprof's own CI, and a build 500 times as slow passed).
  HistoryOptions wide_line;
  wide_line.max_level_increase = 1.0;
  auto doubled = judge(history, {run(rng, 2.5), run(rng, 2.5), run(rng, 2.5)}, wide_line);
  ASSERT_TRUE(doubled.ok());
  EXPECT_TRUE(doubled->regression) << doubled->summary;
  bool by_level = false;
  for (const HistoryCheck &c : doubled->checks) by_level = by_level || ((c.what == "p90" || c.what == "p99") && c.regression);
  EXPECT_TRUE(by_level) << doubled->summary;
  for (const HistoryOptions &o : {HistoryOptions{}, levels}) {
    auto wider = judge(history, {run(rng, 1.0, 0.4), run(rng, 1.0, 0.4), run(rng, 1.0, 0.4)}, o);
    ASSERT_TRUE(wider.ok());
    EXPECT_TRUE(wider->regression) << wider->summary;
    EXPECT_TRUE(wider->shifted.empty()) << wider->summary;
  }
}

// With 2 runs against 4, a head of any height is as high as 2 of the 6
// runs in 1 arrangement of 15: no check can reach 1% / 4, and the verdict
// says so, and how many history runs would do.
TEST(History, TooFewRunsToCatchAnythingAreSaid) {
  std::mt19937_64 rng(5);
  std::vector<RunSummary> history{run(rng), run(rng), run(rng), run(rng)};
  auto v = judge(history, {run(rng, 1.0, 1.0), run(rng, 1.0, 1.0)}, HistoryOptions{});
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->regression) << v->summary;
  EXPECT_NE(v->detectable.find("with 2 runs against 4, nothing could be caught"), std::string::npos) << v->detectable;
  EXPECT_NE(v->detectable.find("27 history runs would do"), std::string::npos) << v->detectable;
  for (int k = 0; k < 7; ++k) history.push_back(run(rng));  // 11: 1 arrangement in 364
  auto enough = judge(history, {run(rng, 1.0, 1.0), run(rng, 1.0, 1.0), run(rng, 1.0, 1.0)}, HistoryOptions{});
  ASSERT_TRUE(enough.ok());
  EXPECT_TRUE(enough->regression) << enough->summary << "\n" << enough->detectable;
}

TEST(History, TooShortAHistoryIsSaid) {
  std::mt19937_64 rng(1);
  std::vector<RunSummary> history{run(rng), run(rng)};
  auto v = judge(history, {run(rng)}, HistoryOptions{});
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("at least 3"), std::string::npos);
}

TEST(History, ChangePointsLandOnThePlantedStepAndNowhereWithoutOne) {
  int found = 0, false_steps = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<RunSummary> stepped, flat;
    const size_t at = 12 + seed % 17;  // somewhere in the middle of 40
    for (size_t i = 0; i < 40; ++i) {
      stepped.push_back(run(rng, 1.0, i >= at ? 0.4 : 0.0, "c" + std::to_string(i)));
      flat.push_back(run(rng));
    }
    HistoryOptions o;
    o.seed = seed;
    bool here = false;
    for (const auto &c : change_points(stepped, o))
      if (c.at + 1 >= at && c.at <= at + 1) {
        here = true;
        ASSERT_EQ(c.steps.size(), 4u);
        EXPECT_EQ(c.steps[2].first, "p99");
        EXPECT_GT(c.steps[1].second, 0.1);  // p90: a delay of 40% of the median in every interval
        EXPECT_GT(c.steps[2].second, 0.1);
        EXPECT_EQ(c.commit, "c" + std::to_string(c.at));
        EXPECT_EQ(c.factor, "slow");
      }
    found += here;
    false_steps += !change_points(flat, o).empty();
  }
  EXPECT_GE(found, 9);
  EXPECT_LE(false_steps, 1);
}

}  // namespace
}  // namespace vprof::testing
