// Saved profiles merged from their sums (analyzer/profile/merge.h): a run's
// intervals split into profiles, in any order and any grouping, merge to the
// whole run's shares; a node some profiles lack counts 0 in their
// intervals; profiles with different roots are refused.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "analyzer/profile/merge.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// A run of n intervals: L = a + b1 + c, a and b1 in every interval, c (a
// stall) in one in 20; nodes root, a, b, b1, c (b = b1).
struct Cells {
  std::vector<double> a, b1, c;
};

Cells draw(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> e(1.0 / 2000);
  std::uniform_real_distribution<double> u(0, 1);
  Cells x;
  for (size_t i = 0; i < n; ++i) {
    x.a.push_back(1000 + e(rng));
    x.b1.push_back(500 + 0.5 * e(rng));
    x.c.push_back(u(rng) < 0.05 ? 50000 + 10 * e(rng) : 0.0);
  }
  return x;
}

// The profile of intervals `rows` of x (the others left out), root "latency".
Profile profile_of(const Cells &x, const std::vector<size_t> &rows, const std::string &root = "latency") {
  Profile p;
  p.root = root;
  ProfileRun r;
  auto node = [&](const std::string &key, int parent, bool leaf) {
    ProfileNode n;
    n.key = key;
    n.label = key;
    n.parent = parent;
    n.leaf = leaf;
    n.factor = leaf ? key : "";
    r.nodes.push_back(n);
    r.cols.emplace_back();
  };
  node("root", -1, false);
  node("a", 0, true);
  node("b", 0, false);
  node("b1", 2, true);
  bool any_c = false;
  for (size_t i : rows) any_c = any_c || x.c[i] != 0;
  if (any_c) node("c", 0, true);  // a profile whose intervals have no stall has no such node
  for (size_t k = 0; k < rows.size(); ++k) {
    const size_t i = rows[k];
    const double l = x.a[i] + x.b1[i] + x.c[i];
    auto put = [&](size_t col, double v) {
      if (v == 0) return;
      r.cols[col].row.push_back(uint32_t(k));
      r.cols[col].value.push_back(v);
    };
    put(0, l);
    put(1, x.a[i]);
    put(2, x.b1[i]);
    put(3, x.b1[i]);
    if (any_c) put(4, x.c[i]);
    r.interval_ids.push_back(i + 1);
    r.types.push_back(0);
  }
  r.type_names = {""};
  p.runs.push_back(std::move(r));
  return p;
}

// Cov(x, L) / Var(L) of the whole run, two-pass, by hand.
double direct_share(const Cells &x, const std::vector<double> &part) {
  const size_t n = x.a.size();
  double ml = 0, mx = 0;
  for (size_t i = 0; i < n; ++i) ml += (x.a[i] + x.b1[i] + x.c[i]) / double(n), mx += part[i] / double(n);
  double v = 0, c = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = x.a[i] + x.b1[i] + x.c[i] - ml;
    v += d * d;
    c += (part[i] - mx) * d;
  }
  return c / v;
}

double share_of(const MergedTree &t, const std::string &key) {
  auto it = t.index.find(key);
  return it == t.index.end() ? 0.0 : t.share(t.nodes[it->second]);
}

TEST(ProfileMerge, AnySplitOfARunMergesToTheWholeRunsShares) {
  const size_t n = 4000;
  const Cells x = draw(n, 3);
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  const MergedTree whole = reduce_profile(profile_of(x, all));
  EXPECT_NEAR(share_of(whole, "a"), direct_share(x, x.a), 1e-12);
  EXPECT_NEAR(share_of(whole, "c"), direct_share(x, x.c), 1e-12);
  EXPECT_NEAR(share_of(whole, "a") + share_of(whole, "b") + share_of(whole, "c"), 1.0, 1e-12);
  // Splits: 2, 7 and 400 profiles of random intervals, merged in a shuffled
  // order; 400 parts of 10 intervals leave most without a stall (no "c").
  std::mt19937_64 rng(9);
  for (size_t parts : {2, 7, 400}) {
    std::vector<size_t> order = all;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::vector<size_t>> split(parts);
    for (size_t k = 0; k < n; ++k) split[k % parts].push_back(order[k]);
    std::shuffle(split.begin(), split.end(), rng);
    MergedTree merged;
    size_t without_c = 0;
    for (const auto &rows : split) {
      const Profile p = profile_of(x, rows);
      without_c += p.runs[0].nodes.size() == 4;
      ASSERT_TRUE(merge_into(merged, reduce_profile(p)).ok());
    }
    EXPECT_EQ(merged.profiles, parts);
    EXPECT_EQ(merged.runs, parts);
    EXPECT_DOUBLE_EQ(merged.n, double(n));
    EXPECT_NEAR(merged.mean, whole.mean, 1e-9 * whole.mean);
    EXPECT_NEAR(merged.variance(), whole.variance(), 1e-9 * whole.variance());
    for (const char *key : {"root", "a", "b", "b1", "c"})
      EXPECT_NEAR(share_of(merged, key), share_of(whole, key), 1e-9) << parts << " parts, " << key;
    if (parts == 400) EXPECT_GT(without_c, 0u) << "a part without the stall's node";
  }
}

// A merged tree's JSON is an input of a later merge: hosts, then racks.
TEST(ProfileMerge, AMergeOfMergedTreesJsonIsTheOneMerge) {
  const size_t n = 3000;
  const Cells x = draw(n, 8);
  std::vector<std::vector<size_t>> parts(6);
  for (size_t i = 0; i < n; ++i) parts[i % 6].push_back(i);
  MergedTree once, rack1, rack2;
  for (size_t k = 0; k < 6; ++k) {
    ASSERT_TRUE(merge_into(once, reduce_profile(profile_of(x, parts[k]))).ok());
    ASSERT_TRUE(merge_into(k < 3 ? rack1 : rack2, reduce_profile(profile_of(x, parts[k]))).ok());
  }
  ASSERT_TRUE(is_merged_json(merged_json(rack1, 3)));
  auto a = parse_merged_json(merged_json(rack1, 3));
  auto b = parse_merged_json(merged_json(rack2, 3));
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  MergedTree twice;
  ASSERT_TRUE(merge_into(twice, *a).ok());
  ASSERT_TRUE(merge_into(twice, *b).ok());
  EXPECT_EQ(twice.profiles, 6u);
  EXPECT_DOUBLE_EQ(twice.n, double(n));
  for (const char *key : {"root", "a", "b", "b1", "c"})
    EXPECT_NEAR(share_of(twice, key), share_of(once, key), 1e-9) << key;
  EXPECT_FALSE(is_merged_json("{\"format\": \"something else\"}"));
  EXPECT_FALSE(is_merged_json("not json"));
  auto bad = parse_merged_json("{\"format\": \"vprof merged tree\", \"version\": 1, \"runs\": 2}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("without what it needs"), std::string::npos) << bad.error().message;
}

// Intervals over runs: a part one run alone holds (a stall in 1 of 10
// runs) gets an interval that reaches near 0, however many intervals that
// run had; a part every run holds alike gets a narrow one around its share.
TEST(ProfileMerge, BetweenRunIntervalsSayHowRunsDiffer) {
  MergedTree all;
  std::vector<PartSums> parts;
  for (uint64_t r = 0; r < 10; ++r) {
    Cells x = draw(1000, 100 + r);
    if (r != 4)
      for (double &c : x.c) c = 0;  // the stall in run 4 only
    std::vector<size_t> rows(1000);
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
    const MergedTree one = reduce_profile(profile_of(x, rows));
    ASSERT_TRUE(merge_into(all, one).ok());
    parts.push_back(part_sums(all, one));
  }
  between_run_intervals(all, parts, 400, 7);
  EXPECT_EQ(all.parts, 10u);
  EXPECT_EQ(all.resamples, 400u);
  const MergedNode &c = all.nodes[all.index.at("c")];
  const MergedNode &a = all.nodes[all.index.at("a")];
  EXPECT_EQ(c.parts_with, 1u);
  EXPECT_EQ(a.parts_with, 10u);
  EXPECT_GT(all.share(c), 0.5);  // the stall carries the pooled variance
  EXPECT_LT(c.lo, 0.05) << "resamples without run 4 have no stall";
  EXPECT_LE(c.lo, all.share(c));
  EXPECT_GE(c.hi, all.share(c));
  ASSERT_TRUE(all.factor_ci.count("c"));
  EXPECT_LT(all.factor_ci.at("c").first, 0.05);
  const std::string text = merged_text(all, 3, 0.01);
  EXPECT_NE(text.find("[ci95] from 400 resamples of the 10 profiles"), std::string::npos) << text;
  EXPECT_NE(text.find(" 1/10 "), std::string::npos) << text;
}

TEST(ProfileMerge, ProfilesWithAnotherRootAreRefused) {
  const Cells x = draw(100, 1);
  std::vector<size_t> rows(100);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  MergedTree t = reduce_profile(profile_of(x, rows));
  Status s = merge_into(t, reduce_profile(profile_of(x, rows, "db::Write")));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("db::Write"), std::string::npos) << s.message();
}

TEST(ProfileMerge, TheTextNamesTheTopFactorAndTheTree) {
  const Cells x = draw(2000, 5);
  std::vector<size_t> rows(2000);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  MergedTree t;
  ASSERT_TRUE(merge_into(t, reduce_profile(profile_of(x, rows))).ok());
  const std::string text = merged_text(t, 3, 0.01);
  EXPECT_NE(text.find("1 saved profile merged: 1 run, 2000 intervals"), std::string::npos) << text;
  // The stall (50 us in 1 interval of 20) carries most of the variance.
  const size_t top = text.find("top factors");
  ASSERT_NE(top, std::string::npos);
  EXPECT_NE(text.find("1  ", top), std::string::npos);
  EXPECT_LT(text.find(" c\n", top), text.find(" a\n", top)) << text;
}

}  // namespace
}  // namespace vprof::testing
