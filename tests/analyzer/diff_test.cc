// vprof diff and vprof gate: the saved profile keeps
// what a comparison needs, byte-exact times; ΔVar(L) is attributed to nodes
// so that the parts of every node add up to it; moved call sites are one node;
// bad inputs are refused with a message naming the file; the gate fails only
// when a change's lower confidence bound exceeds its threshold, and names the
// function whose variance grew.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "analyzer/diff/diff.h"
#include "analyzer/diff/diff_report.h"
#include "analyzer/diff/gate.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/profile/profile.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// A deterministic stream of numbers in [0, 1).
struct Lcg {
  uint64_t s;
  double next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return double(s >> 11) / double(1ull << 53);
  }
};

// f (fn 1) calls g through site a, then h through site b, then k through
// site c (when c != 0). Per interval g lasts 100 + U·g_spread ns, h
// 100 + U·h_spread ns, k 50 ns; intervals alternate types "A"/"B".
trace::Trace shaped(int n, double g_spread, double h_spread, uint64_t seed, uint32_t a = 1,
                    uint32_t b = 2, uint32_t c = 0) {
  TraceBuilder tb;
  uint32_t ta = tb.label("A"), tbb = tb.label("B");
  auto &th = tb.thread(1);
  Lcg r{seed};
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    th.begin(t, uint64_t(i + 1), i % 2 ? tbb : ta).enter(t, 1);
    int64_t x = t + 1 + 100 + int64_t(r.next() * g_spread);
    int64_t y = x + 100 + int64_t(r.next() * h_spread);
    th.site(t + 1, a).site_end(x, a).site(x, b).site_end(y, b);
    if (c) {
      th.site(y, c).site_end(y + 50, c);
      y += 50;
    }
    th.exit(y + 3, 1).end(y + 3, uint64_t(i + 1));
    t = y + 10;
  }
  return tb.build();
}

Names names_at(int line0, bool third = false) {
  if (third)
    return make_names({{1, "f"}}, {{1, 1, "g", line0}, {2, 1, "h", line0 + 2}, {3, 1, "k", line0 + 4}});
  return make_names({{1, "f"}}, {{1, 1, "g", line0}, {2, 1, "h", line0 + 2}});
}

Profile profile_of(const trace::Trace &t, const Names &names, const std::string &root = "") {
  AnalyzeOptions opt;
  opt.root = root;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t, names, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  Profile p = make_profile(*a, BuildInfo{});
  p.source = "mem";
  return p;
}

std::string temp_path(const char *stem) {
  return std::string(::testing::TempDir()) + stem + std::to_string(getpid()) + ".vprof";
}

const NodeDiff *node(const Diff &d, const std::string &label) {
  for (const NodeDiff &n : d.nodes)
    if (n.label == label) return &n;
  return nullptr;
}

TEST(Profile, SavedAndLoadedKeepsEveryTimeTypeAndNode) {
  Profile p = profile_of(shaped(300, 50, 400, 1), names_at(10));
  p.build.commit = "abc123";
  const std::string path = temp_path("roundtrip");
  ASSERT_TRUE(save_profile(p, path).ok());
  EXPECT_TRUE(is_profile_file(path));
  auto q = load_profile(path);
  ASSERT_TRUE(q.ok()) << q.error().message;
  ASSERT_EQ(q->runs.size(), 1u);
  const ProfileRun &a = p.runs[0], &b = q->runs[0];
  EXPECT_EQ(q->root, "latency");
  EXPECT_EQ(q->build.commit, "abc123");
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].key, b.nodes[i].key);
    EXPECT_EQ(a.nodes[i].parent, b.nodes[i].parent);
    EXPECT_EQ(a.nodes[i].label, b.nodes[i].label);
    EXPECT_EQ(a.nodes[i].call_site.has_value(), b.nodes[i].call_site.has_value());
  }
  EXPECT_EQ(a.cols, b.cols);  // whole nanoseconds, exactly
  EXPECT_EQ(a.interval_ids, b.interval_ids);
  EXPECT_EQ(a.types, b.types);
  EXPECT_EQ(b.type_names[b.types[0]], "A");
  EXPECT_EQ(b.type_names[b.types[1]], "B");
  EXPECT_EQ(b.intervals(), 300u);
  std::remove(path.c_str());
}

TEST(Profile, AnotherFormatVersionIsRefusedNamingTheFile) {
  const std::string path = temp_path("version");
  ASSERT_TRUE(save_profile(profile_of(shaped(20, 5, 5, 2), names_at(10)), path).ok());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    const char v99[8] = {99, 0, 0, 0, 99, 0, 0, 0};  // version 99, readable from 99
    f.write(v99, 8);
  }
  auto q = load_profile(path);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message.find(path), std::string::npos) << q.error().message;
  EXPECT_NE(q.error().message.find("version 99"), std::string::npos) << q.error().message;
  std::remove(path.c_str());
}

// Version 2 keeps each column's cells, not every interval's value
// (a MariaDB session's 22 runs, ~7 000 parts x 40 000 intervals a run, took
// 24 GB to save densely, and the OOM killer ended the session). A version-1
// file, written by the vprof before (tests/analyzer/data/profile-v1.vprof:
// this very profile), still reads the same.
TEST(Profile, AVersion1ProfileStillReadsAsTheSameProfile) {
  Profile p = profile_of(shaped(20, 5, 5, 2), names_at(10));
  auto old = load_profile(VPROF_SOURCE_DIR "/tests/analyzer/data/profile-v1.vprof");
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->version, 1u);
  ASSERT_EQ(old->runs.size(), 1u);
  ASSERT_EQ(old->runs[0].nodes.size(), p.runs[0].nodes.size());
  for (size_t i = 0; i < p.runs[0].nodes.size(); ++i) EXPECT_EQ(old->runs[0].nodes[i].key, p.runs[0].nodes[i].key);
  EXPECT_EQ(old->runs[0].cols, p.runs[0].cols);
  EXPECT_EQ(old->runs[0].interval_ids, p.runs[0].interval_ids);
  const std::string path = temp_path("v2");
  ASSERT_TRUE(save_profile(p, path).ok());
  auto now = load_profile(path);
  ASSERT_TRUE(now.ok()) << now.error().message;
  EXPECT_EQ(now->version, kProfileVersion);
  EXPECT_EQ(now->runs[0].cols, p.runs[0].cols);
  std::remove(path.c_str());
}

TEST(Profile, NotAProfileAndACutOneAreRefused) {
  const std::string path = temp_path("junk");
  { std::ofstream(path) << "not a profile\n"; }
  auto q = load_profile(path);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message.find("not a saved vprof profile"), std::string::npos);
  ASSERT_TRUE(save_profile(profile_of(shaped(50, 5, 5, 3), names_at(10)), path).ok());
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  { std::ofstream(path, std::ios::binary) << all.substr(0, all.size() / 2); }
  q = load_profile(path);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().message.find("cut short or damaged"), std::string::npos) << q.error().message;
  std::remove(path.c_str());
}

// Every node's change is the sum of its parts' changes, and the root's is
// ΔVar(L): the covariance shares' additivity, across two runs.
TEST(Diff, ChangesOfPartsAddUpToTheirNodeAndTheRootToDeltaVar) {
  Profile b = profile_of(shaped(400, 50, 100, 4), names_at(10));
  Profile h = profile_of(shaped(400, 50, 900, 5), names_at(10));
  DiffOptions o;
  o.bootstrap = 0;
  auto d = diff_profiles({&b}, {&h}, o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  std::map<std::string, double> sum;
  for (const NodeDiff &n : d->nodes)
    if (!n.parent_key.empty()) sum[n.parent_key] += n.delta;
  for (const NodeDiff &n : d->nodes) {
    if (n.leaf) continue;
    EXPECT_NEAR(sum[n.key], n.delta, 1e-6 * std::abs(d->delta_var)) << n.key;
  }
  const NodeDiff *root = node(*d, "latency");
  ASSERT_TRUE(root);
  EXPECT_NEAR(root->delta, d->delta_var, 1e-9 * std::abs(d->delta_var));
  EXPECT_NEAR(d->dist.variance.ratio, d->dist.variance.head / d->dist.variance.base, 1e-12);
  EXPECT_GT(d->delta_var, 0);
  EXPECT_EQ(d->moved + d->appeared + d->disappeared, 0u);
}

TEST(Diff, SidesOfAFewIntervalsAreComparedWithoutReadingAnEmptyDraw) {
  // A bootstrap draw of 3 intervals often weighs under 2 of them and
  // measures nothing; diff read such a head draw's covariances as if it had
  // some and crashed (`vprof diff` of two 3-interval traces,
  // SIGSEGV). The interval is made from the draws both sides measured.
  Profile b = profile_of(shaped(3, 50, 100, 4), names_at(10));
  Profile h = profile_of(shaped(3, 50, 900, 5), names_at(10));
  DiffOptions o;
  o.bootstrap = 400;
  auto d = diff_profiles({&b}, {&h}, o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->dist.base_intervals, 3u);
  EXPECT_GT(d->dist.variance.ratio, 1.0);
}

TEST(Diff, LinesInsertedAboveCallSitesAreMovedNodesNotNewOnes) {
  Profile b = profile_of(shaped(200, 50, 100, 6), names_at(10));
  // Head: 40 lines above, and a new function's site numbered first (ids shift).
  Names hn = make_names({{1, "f"}, {2, "e"}}, {{1, 2, "g", 5}, {2, 1, "g", 50}, {3, 1, "h", 52}});
  Profile h = profile_of(shaped(200, 50, 100, 6, 2, 3), hn);
  DiffOptions o;
  o.bootstrap = 0;
  auto d = diff_profiles({&b}, {&h}, o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->moved, 2u);
  EXPECT_EQ(d->appeared, 0u);
  EXPECT_EQ(d->disappeared, 0u);
  const NodeDiff *g = node(*d, "g (t.cc:50)");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, NodeStatus::Moved);
  EXPECT_EQ(g->base_site->line, 10);
  EXPECT_EQ(g->head_site->line, 50);
  EXPECT_NEAR(d->delta_var, 0, 1e-9);  // the same intervals
}

TEST(Diff, ANewCallSiteAppearsAndCarriesItsCovariance) {
  Profile b = profile_of(shaped(200, 50, 100, 7), names_at(10));
  Profile h = profile_of(shaped(200, 50, 100, 7, 1, 2, 3), names_at(10, true));
  DiffOptions o;
  o.bootstrap = 0;
  auto d = diff_profiles({&b}, {&h}, o);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->appeared, 1u);
  const NodeDiff *k = node(*d, "k (t.cc:14)");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->status, NodeStatus::Appeared);
  EXPECT_EQ(k->base_cov, 0);
  // Listed by its label and parent, not by its key (a whole path: 600
  // characters a line on MariaDB's Held parts).
  std::ostringstream text;
  write_diff_text(*d, text);
  const std::string t = text.str();
  const std::string title = "appeared (in head only) (1):\n";
  const size_t at = t.find(title);
  ASSERT_NE(at, std::string::npos) << t;
  EXPECT_EQ(t.substr(at + title.size(), t.find('\n', at + title.size()) - at - title.size()),
            "  k (t.cc:14)  (under f)");
  EXPECT_EQ(t.find(k->key, at), std::string::npos) << "the key is --json's";
}

// Head instruments g (fn 2), which calls x (site 3) inside: g's call site is
// broken down on one side only. It is compared as a whole; its parts on the
// head side have nothing to be compared with and are left out of the tree of
// changes (they are listed, as appeared).
trace::Trace g_broken_down(int n, uint64_t seed) {
  TraceBuilder tb;
  auto &th = tb.thread(1);
  Lcg r{seed};
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    th.begin(t, uint64_t(i + 1)).enter(t, 1);
    int64_t x = t + 1 + 100 + int64_t(r.next() * 50);
    int64_t y = x + 100 + int64_t(r.next() * 100);
    th.site(t + 1, 1).enter(t + 1, 2).site(t + 2, 3).site_end(x - 1, 3).exit(x, 2).site_end(x, 1);
    th.site(x, 2).site_end(y, 2).exit(y + 3, 1).end(y + 3, uint64_t(i + 1));
    t = y + 10;
  }
  return tb.build();
}

TEST(Diff, ANodeBrokenDownOnOneSideOnlyIsComparedAsAWhole) {
  Profile b = profile_of(shaped(300, 50, 100, 17), names_at(10));
  Names hn = make_names({{1, "f"}, {2, "g"}}, {{1, 1, "g", 10}, {2, 1, "h", 12}, {3, 2, "x", 30}});
  Profile h = profile_of(g_broken_down(300, 18), hn);
  DiffOptions o;
  o.bootstrap = 0;
  auto d = diff_profiles({&b}, {&h}, o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  const NodeDiff *g = node(*d, "g (t.cc:10)");
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->one_sided);
  EXPECT_TRUE(g->leaf);
  const NodeDiff *x = node(*d, "x (t.cc:30)");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->status, NodeStatus::Appeared);
  // What is compared still adds up: f's change is g's, h's and f's body's.
  const NodeDiff *f = node(*d, "f");
  ASSERT_TRUE(f);
  double parts = 0;
  for (const NodeDiff &n : d->nodes)
    if (n.parent_key == f->key) parts += n.delta;
  EXPECT_NEAR(parts, f->delta, 1e-6 * std::abs(d->delta_var) + 1e-9);
}

// A profile of several runs (an iterate session) is compared through its
// last run, the most refined one.
TEST(Diff, AProfileOfSeveralRunsIsComparedThroughItsLast) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(shaped(200, 50, 900, 19), names_at(10), opt, 0).value());
  runs.push_back(analyze_run(shaped(200, 50, 100, 20), names_at(10), opt, 1).value());
  Profile two = make_profile(*combine(std::move(runs), opt), BuildInfo{});
  ASSERT_EQ(two.runs.size(), 2u);
  Profile last = profile_of(shaped(200, 50, 100, 20), names_at(10));
  DiffOptions o;
  o.bootstrap = 0;
  auto d = diff_profiles({&two}, {&last}, o);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->delta_var, 0.0);
  EXPECT_EQ(d->dist.base_intervals, 200u);
}

TEST(Diff, AnotherRootOrNoNodeInCommonIsAnErrorNamingBoth) {
  Profile b = profile_of(shaped(50, 5, 5, 8), names_at(10));
  Profile r = profile_of(shaped(50, 5, 5, 8), names_at(10), "f");
  b.source = "base.vprof";
  r.source = "head.vprof";
  auto d = diff_profiles({&b}, {&r}, DiffOptions{});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("head.vprof: rooted at f"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("base.vprof is rooted at latency"), std::string::npos);
  // Another program: its function is another, so no node below the root matches.
  Profile other = profile_of(shaped(50, 5, 5, 8), make_names({{1, "z"}}, {{1, 1, "g", 10}, {2, 1, "h", 12}}));
  other.source = "other.vprof";
  d = diff_profiles({&b}, {&other}, DiffOptions{});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("no node of the variance tree below the root in common"),
            std::string::npos)
      << d.error().message;
}

// Two programs whose intervals both spend time outside
// any instrumented function share the (outside) leaf, and only that: the
// gate passed (exit 0) where a baseline of another program must be refused.
// Latency alone (nothing instrumented on either side) is still comparable.
TEST(Diff, AnotherProgramSharingOnlyTheOutsideLeafIsAnError) {
  auto program = [](uint32_t fn, uint64_t seed, bool instrumented) {
    TraceBuilder tb;
    auto &th = tb.thread(1);
    Lcg r{seed};
    int64_t t = 0;
    for (int i = 0; i < 60; ++i) {
      int64_t out = 5 + int64_t(r.next() * 50), body = 20 + int64_t(r.next() * 50);
      th.begin(t, uint64_t(i + 1));
      if (instrumented) th.enter(t + out, fn).exit(t + out + body, fn);
      th.end(t + out + body + out, uint64_t(i + 1));
      t += 2 * out + body + 10;
    }
    return tb.build();
  };
  Profile b = profile_of(program(1, 3, true), make_names({{1, "server_a::handle"}}, {}));
  Profile h = profile_of(program(1, 4, true), make_names({{1, "other_b::serve"}}, {}));
  b.source = "base.vprof";
  h.source = "head.vprof";
  auto d = diff_profiles({&b}, {&h}, DiffOptions{});
  ASSERT_FALSE(d.ok()) << "compared through (outside) alone";
  EXPECT_NE(d.error().message.find("no node of the variance tree below the root in common"),
            std::string::npos)
      << d.error().message;
  Profile same = profile_of(program(1, 4, true), make_names({{1, "server_a::handle"}}, {}));
  EXPECT_TRUE(diff_profiles({&b}, {&same}, DiffOptions{}).ok());
  Profile lb = profile_of(program(1, 3, false), Names{}), lh = profile_of(program(1, 4, false), Names{});
  auto latency_only = diff_profiles({&lb}, {&lh}, DiffOptions{});
  EXPECT_TRUE(latency_only.ok()) << latency_only.error().message;
}

// The diff of runs of f (names at line 10), each trace one run of its side,
// with intervals (none with bootstrap 0).
Diff diff_of_runs(const std::vector<trace::Trace> &base, const std::vector<trace::Trace> &head, int bootstrap = 400) {
  std::vector<Profile> bp, hp;
  for (const trace::Trace &t : base) bp.push_back(profile_of(t, names_at(10)));
  for (const trace::Trace &t : head) hp.push_back(profile_of(t, names_at(10)));
  std::vector<const Profile *> b, h;
  for (const Profile &p : bp) b.push_back(&p);
  for (const Profile &p : hp) h.push_back(&p);
  DiffOptions o;
  o.bootstrap = bootstrap;
  auto d = diff_profiles(b, h, o);
  EXPECT_TRUE(d.ok());
  return d.ok() ? *d : Diff{};
}

// One run a side.
Diff diff_of(const trace::Trace &base, const trace::Trace &head) { return diff_of_runs({base}, {head}); }

// A planted regression: h's time spreads 9x wider, two runs a side. The gate
// fails, and names h first, at its call site.
TEST(Gate, APlantedSpreadFailsAndNamesTheFunction) {
  Diff d = diff_of_runs({shaped(600, 100, 100, 9), shaped(600, 100, 100, 19)},
                        {shaped(600, 100, 900, 10), shaped(600, 100, 900, 20)});
  GateResult g = decide(d, GateOptions{});
  EXPECT_TRUE(g.regression) << g.summary;
  ASSERT_FALSE(g.grew.empty());
  EXPECT_EQ(g.grew.front()->name, "h");
  EXPECT_NE(g.summary.find("of the increase from h (t.cc:12) in f"), std::string::npos) << g.summary;
  ASSERT_TRUE(d.dist.variance.ci.has_value());
  EXPECT_GT(d.dist.variance.ci->first, 1.10);
}

// The same build twice: never a regression. One run a side of 600 intervals
// cannot rule out +10% of variance (its interval reaches above, even for the
// same run against itself: each side is resampled): that is inconclusive,
// not a pass. Nor is a pass at one run a side sure.
TEST(Gate, TheSameBuildTwiceIsNoRegression) {
  Diff d = diff_of(shaped(600, 100, 300, 11), shaped(600, 100, 300, 12));
  GateResult g = decide(d, GateOptions{});  // points into d
  EXPECT_FALSE(g.regression) << g.summary;
  EXPECT_NE(g.verdict, Verdict::Regression) << g.summary;
  if (g.verdict == Verdict::Inconclusive) {
    EXPECT_EQ(g.summary.rfind("INCONCLUSIVE: ", 0), 0u) << g.summary;
    EXPECT_NE(g.summary.find("runs a side would decide"), std::string::npos) << g.summary;
  }
  Diff same = diff_of(shaped(600, 100, 300, 11), shaped(600, 100, 300, 11));
  GateResult s = decide(same, GateOptions{});
  EXPECT_EQ(s.verdict, Verdict::Inconclusive) << s.summary;
  EXPECT_GT(s.runs_needed, 1) << s.summary;
  // With a wide enough threshold the same data passes at two runs a side;
  // at one run a side that pass is not sure: inconclusive.
  GateResult wide = decide(same, GateOptions{1.0, 1.0});
  EXPECT_EQ(wide.verdict, Verdict::Inconclusive) << wide.summary;
  EXPECT_TRUE(wide.one_run);
  EXPECT_EQ(wide.summary.rfind("INCONCLUSIVE: variance", 0), 0u) << wide.summary;
  EXPECT_NE(wide.summary.find("<= +100%; one run a side"), std::string::npos) << wide.summary;
  Diff same2 = diff_of_runs({shaped(600, 100, 300, 11), shaped(600, 100, 300, 12)},
                            {shaped(600, 100, 300, 11), shaped(600, 100, 300, 12)});
  GateResult wide2 = decide(same2, GateOptions{1.0, 1.0});
  EXPECT_EQ(wide2.verdict, Verdict::Pass) << wide2.summary;
  EXPECT_EQ(wide2.summary.rfind("pass: variance", 0), 0u) << wide2.summary;
}

// One run a side is never a sure verdict while there are
// intervals: they come from that run's intervals alone and cannot include
// how runs differ (minidb's same build against itself said regression 7
// times in 20 at one run a side). A 9x spread, sure at two runs a side, is
// inconclusive at one, its change and interval still said.
TEST(Gate, OneRunASideIsInconclusiveHoweverLargeTheChange) {
  const trace::Trace base = shaped(600, 100, 100, 9), head = shaped(600, 100, 900, 10);
  Diff d = diff_of(base, head);
  ASSERT_TRUE(d.dist.variance.ci.has_value());
  EXPECT_GT(d.dist.variance.ci->first, 1.10) << "the interval alone would say regression";
  GateResult g = decide(d, GateOptions{});
  EXPECT_EQ(g.verdict, Verdict::Inconclusive) << g.summary;
  EXPECT_FALSE(g.regression);
  EXPECT_TRUE(g.one_run);
  EXPECT_EQ(g.runs, 1);
  EXPECT_EQ(g.runs_needed, 2);
  EXPECT_TRUE(g.checks[0].failed) << "the check itself is kept as the interval says";
  EXPECT_EQ(g.summary.rfind("INCONCLUSIVE: variance +", 0), 0u) << g.summary;
  EXPECT_NE(g.summary.find("> +10%"), std::string::npos) << g.summary;
  EXPECT_NE(g.summary.find("; one run a side: its intervals cannot include how runs differ; give the gate at "
                           "least 2 runs a side (--baseline-runs/--runs)"),
            std::string::npos)
      << g.summary;
  EXPECT_NE(g.summary.find("of the increase from h (t.cc:12) in f"), std::string::npos) << g.summary;
  // Either side with one run: the same.
  GateResult two_one = decide(diff_of_runs({base, base}, {head}), GateOptions{});
  EXPECT_EQ(two_one.verdict, Verdict::Inconclusive) << two_one.summary;
  EXPECT_TRUE(two_one.one_run);
  // Two runs a side of the same data can say regression.
  GateResult two = decide(diff_of_runs({base, base}, {head, head}), GateOptions{});
  EXPECT_EQ(two.verdict, Verdict::Regression) << two.summary;
  EXPECT_FALSE(two.one_run);
  EXPECT_EQ(two.summary.find("one run a side"), std::string::npos) << two.summary;
  // Without intervals (--bootstrap 0) the point estimates decide, as before.
  GateResult points = decide(diff_of_runs({base}, {head}, 0), GateOptions{});
  EXPECT_EQ(points.verdict, Verdict::Regression) << points.summary;
  EXPECT_FALSE(points.one_run);
}

// p99 +40% [-2%, +143%] passed, since only a lower end above the
// threshold was a regression. An interval on both sides of a threshold is
// inconclusive, and the gate says how many runs a side would decide: the
// half-width facing the threshold shrinks as 1/sqrt(runs).
TEST(Gate, AnIntervalOnBothSidesIsInconclusiveAndSaysHowManyRuns) {
  Diff d;
  d.dist.variance = {100, 101, 1.01, std::make_pair(0.95, 1.08)};  // surely below +10%
  d.dist.p99 = {100, 140.2, 1.402, std::make_pair(0.984, 2.43)};
  GateResult g = decide(d, GateOptions{});
  EXPECT_EQ(g.verdict, Verdict::Inconclusive);
  EXPECT_FALSE(g.regression);
  EXPECT_EQ(g.summary.rfind("INCONCLUSIVE: p99 +40.2% [-1.6%, +143.0%] reaches both sides of +5%", 0), 0u)
      << g.summary;
  // Facing +5% from +40.2%: half-width 41.8 points, margin 35.2: (41.8/35.2)^2 = 1.41 -> 2 runs.
  EXPECT_EQ(g.runs_needed, 2) << g.summary;
  EXPECT_NE(g.summary.find("about 2 runs a side would decide (from 1"), std::string::npos) << g.summary;
  ASSERT_EQ(g.checks.size(), 2u);
  EXPECT_FALSE(g.checks[0].unsure);
  EXPECT_TRUE(g.checks[1].unsure);
  // Below the threshold, the upper half-width decides: +1% [-10%, +30%] with
  // 5 runs a side against +10%: (29/9)^2 x 5 = 51.9 -> 52.
  Diff e;
  e.base_sources.assign(5, "b");
  e.head_sources.assign(5, "h");
  e.dist.variance = {100, 101, 1.01, std::make_pair(0.90, 1.30)};
  e.dist.p99 = {100, 100, 1.0, std::make_pair(0.98, 1.02)};
  GateResult h = decide(e, GateOptions{});
  EXPECT_EQ(h.verdict, Verdict::Inconclusive);
  EXPECT_EQ(h.runs, 5);
  EXPECT_EQ(h.runs_needed, 52) << h.summary;
  // At the threshold no number of runs decides.
  e.dist.variance = {100, 110, 1.10, std::make_pair(1.0, 1.2)};
  GateResult at = decide(e, GateOptions{});
  EXPECT_EQ(at.verdict, Verdict::Inconclusive);
  EXPECT_EQ(at.runs_needed, -1);
  EXPECT_NE(at.summary.find("more than 1000 runs"), std::string::npos) << at.summary;
  // Every interval below: pass; a lower end above: regression, whatever else.
  e.dist.variance = {100, 101, 1.01, std::make_pair(0.95, 1.09)};
  EXPECT_EQ(decide(e, GateOptions{}).verdict, Verdict::Pass);
  e.dist.p99 = {100, 150, 1.5, std::make_pair(1.2, 1.9)};
  e.dist.variance = {100, 110, 1.10, std::make_pair(0.9, 1.3)};
  EXPECT_EQ(decide(e, GateOptions{}).verdict, Verdict::Regression);
}

// The rule itself: the lower bound decides, not the point estimate (two runs
// a side: at one no verdict is sure).
TEST(Gate, OnlyALowerBoundAboveTheThresholdIsARegression) {
  Diff d;
  d.base_sources.assign(2, "b");
  d.head_sources.assign(2, "h");
  d.dist.p99 = {100, 100, 1.0, std::make_pair(0.9, 1.1)};
  d.dist.variance = {100, 130, 1.3, std::make_pair(0.95, 1.8)};  // +30%, but could be -5%
  EXPECT_FALSE(decide(d, GateOptions{}).regression);
  d.dist.variance.ci = std::make_pair(1.11, 1.5);
  EXPECT_TRUE(decide(d, GateOptions{}).regression);
  EXPECT_FALSE(decide(d, GateOptions{0.20, 0.05}).regression);
  d.dist.p99.ci = std::make_pair(1.06, 1.2);
  GateResult g = decide(d, GateOptions{0.20, 0.05});
  EXPECT_TRUE(g.regression);
  EXPECT_NE(g.summary.find("p99 +0.0% [+6.0%, +20.0%] > +5%"), std::string::npos) << g.summary;
}

// Several runs a side: the runs are resampled too, so two runs of a side
// that disagree widen the interval (machine noise is not a regression). One
// run a side's interval lies above the threshold: a false alarm that the
// one-run rule (never a sure verdict at one run a side) turns into
// inconclusive.
TEST(Gate, RunsThatDisagreeWidenTheInterval) {
  Profile b1 = profile_of(shaped(400, 100, 100, 13), names_at(10));
  Profile b2 = profile_of(shaped(400, 100, 600, 14), names_at(10));
  Profile h1 = profile_of(shaped(400, 100, 100, 15), names_at(10));
  Profile h2 = profile_of(shaped(400, 100, 600, 16), names_at(10));
  auto one = diff_profiles({&b1}, {&h2}, DiffOptions{});
  auto two = diff_profiles({&b1, &b2}, {&h1, &h2}, DiffOptions{});
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_GT(one->dist.variance.ci->first, 1.10);
  EXPECT_EQ(decide(*one, GateOptions{}).verdict, Verdict::Inconclusive);
  EXPECT_FALSE(decide(*two, GateOptions{}).regression);
  auto width = [](const Interval &ci) { return ci->second - ci->first; };
  EXPECT_GT(width(two->dist.variance.ci), width(one->dist.variance.ci) * 0.5);
  EXPECT_LT(two->dist.variance.ci->first, 1.0);
}

// A stall in one head run makes g's change the largest, pooled; h grew in
// every head run. The gate names h first: resampling the runs leaves g's
// lower bound near zero, not h's.
TEST(Gate, AFactorThatGrewInEveryRunIsNamedBeforeOneRunsStall) {
  std::vector<Profile> base, head;
  for (uint64_t k = 0; k < 5; ++k) {
    base.push_back(profile_of(shaped(400, 100, 100, 20 + k), names_at(10)));
    head.push_back(profile_of(shaped(400, k == 2 ? 3000 : 100, 300, 30 + k), names_at(10)));
  }
  std::vector<const Profile *> b, h;
  for (size_t k = 0; k < 5; ++k) b.push_back(&base[k]), h.push_back(&head[k]);
  auto d = diff_profiles(b, h, DiffOptions{});
  ASSERT_TRUE(d.ok());
  const FactorDiff *g_f = nullptr, *h_f = nullptr;
  for (const FactorDiff &f : d->factors) {
    if (f.name == "g") g_f = &f;
    if (f.name == "h") h_f = &f;
  }
  ASSERT_TRUE(g_f && h_f);
  EXPECT_GT(g_f->of_base, h_f->of_base);  // pooled, the stall is the larger change
  ASSERT_TRUE(g_f->ci && h_f->ci);
  EXPECT_GT(h_f->ci->first, g_f->ci->first);
  GateResult r = decide(*d, GateOptions{});
  EXPECT_TRUE(r.regression) << r.summary;
  ASSERT_FALSE(r.grew.empty());
  EXPECT_EQ(r.grew.front()->name, "h") << r.summary;
}

}  // namespace
}  // namespace vprof::testing
