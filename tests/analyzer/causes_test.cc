// Causes (analyzer/factors/causes.h, docs/method.md "Causes"): a place's own
// time plus every Held part that names it as the holder, at any depth; the
// causes and the parts that are no cause add up to the whole. Worked by hand
// on a built convoy.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/diff/diff.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/profile/profile.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// Round i of n, at time t, with the holder's call d lasting D_i:
//   C (tid 3, interval 3000+i) runs H(3): its body 1 ns, its call site 5
//     ("d") D ns, its body 2 ns more, releasing 0x20 at t+2+D.
//   B (tid 2, interval 2000+i) runs G(2), waits at site 2 ("lock2") for 0x20
//     from t+1, woken at t+4+D; releases 0x10 at t+6+D.
//   A (tid 1, interval i+1) runs F(1), waits at site 1 ("lock1") for 0x10
//     from t+1, woken at t+8+D.
// By hand, per interval (all in ns):
//   C (3 + D): H (body) 3, d D (its own).
//   B (7 + D): G (body) 3; lock2's [t+1, t+2+D) is where C was: held by H at
//     d D, held by H (body) 1; lock2 (not held) 3.
//   A (10 + D): F (body) 2; lock1's [t+1, t+6+D) is where B was, and where B
//     was itself blocked, where C was (a convoy of two): held by H at d D,
//     held by H (body) 1, held by G at lock2 1 + 2, held by G (body) 1; lock1
//     (not held) 3.
// So the cause d is D in every interval: its own in C's, held up in lock2 in
// B's and in lock1 in A's.
std::vector<int64_t> holds(int n) {
  std::vector<int64_t> d;
  for (int i = 0; i < n; ++i) d.push_back(10 + (i * 37) % 50);
  return d;
}

// With `loop`, C's call d is a loop's: calls of site 5 in a row.
trace::Trace convoy(const std::vector<int64_t> &d, bool loop = false) {
  TraceBuilder tb;
  auto &a = tb.thread(1);
  auto &b = tb.thread(2);
  auto &c = tb.thread(3);
  int64_t t = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    const int64_t D = d[i];
    const uint64_t ci = 3000 + i, bi = 2000 + i, ai = i + 1;
    c.begin(t, ci).enter(t, 3).site(t + 1, 5);
    if (loop) c.site_run_end(t + 1 + D, 5, 100);
    else c.site_end(t + 1 + D, 5);
    c.release(t + 2 + D, 0x20)
        .exit(t + 3 + D, 3).end(t + 3 + D, ci);
    b.begin(t, bi).enter(t, 2).site(t + 1, 2).wait(t + 1, 0x20).wait_end(t + 4 + D, 0x20, 3, t + 2 + D)
        .site_end(t + 5 + D, 2).release(t + 6 + D, 0x10).exit(t + 7 + D, 2).end(t + 7 + D, bi);
    a.begin(t, ai).enter(t, 1).site(t + 1, 1).wait(t + 1, 0x10).wait_end(t + 8 + D, 0x10, 2, t + 6 + D)
        .site_end(t + 9 + D, 1).exit(t + 10 + D, 1).end(t + 10 + D, ai);
    t += D + 40;
  }
  return tb.build();
}

Names convoy_names() {
  return make_names({{1, "F"}, {2, "G"}, {3, "H"}},
                    {{1, 1, "lock1", 10}, {2, 2, "lock2", 20}, {5, 3, "d", 50}});
}

// Cov(x, l) / Var(l) over the rows.
double share_of(const std::vector<double> &x, const std::vector<double> &l) {
  double mx = 0, ml = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i], ml += l[i];
  mx /= double(x.size()), ml /= double(l.size());
  double cov = 0, var = 0;
  for (size_t i = 0; i < x.size(); ++i) cov += (x[i] - mx) * (l[i] - ml), var += (l[i] - ml) * (l[i] - ml);
  return cov / var;
}

const Factor *cause(const Analysis &a, const std::string &name) {
  for (const Factor &f : a.causes.ranked)
    if (f.name == name) return &f;
  return nullptr;
}

TEST(Causes, AConvoysHolderCarriesItsOwnTimeAndTheWaitsItHeldUpAtTwoDepths) {
  const std::vector<int64_t> d = holds(40);
  AnalyzeOptions opt;
  opt.factors.bootstrap = 200;
  auto a = analyze_one(convoy(d), convoy_names(), opt);
  // The hand's columns, one row per interval: C's, B's, A's of each round.
  std::vector<double> l, own, in_lock2, in_lock1;
  for (int64_t D : d) {
    for (int type = 0; type < 3; ++type) {
      l.push_back(double(D + (type == 0 ? 3 : type == 1 ? 7 : 10)));
      own.push_back(type == 0 ? double(D) : 0);
      in_lock2.push_back(type == 1 ? double(D) : 0);
      in_lock1.push_back(type == 2 ? double(D) : 0);
    }
  }
  const double s_own = share_of(own, l), s2 = share_of(in_lock2, l), s1 = share_of(in_lock1, l);
  const Factor *f = cause(*a, "d");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->rank, 1) << "the holder's call is the top cause";
  EXPECT_NEAR(f->own_share, s_own, 1e-9);
  EXPECT_NEAR(f->share, s_own + s2 + s1, 1e-9);
  ASSERT_EQ(f->held_up.size(), 2u);
  // Largest first: the waits by the time they were held up.
  std::map<std::string, double> by_wait;
  for (const Factor::HeldUp &h : f->held_up) by_wait[h.wait] = h.share;
  EXPECT_NEAR(by_wait["lock2"], s2, 1e-9);
  EXPECT_NEAR(by_wait["lock1"], s1, 1e-9) << "through the convoy, not 'held by G at lock2'";
  ASSERT_TRUE(f->ci95.has_value());
  EXPECT_LE(f->ci95->first, f->share);
  EXPECT_GE(f->ci95->second, f->share);
  // D is all of Var(L) but the types' constant offsets: Var(D)/(Var(D) + Var(c)).
  double vd = 0, vc = 0, md = 0;
  for (int64_t D : d) md += double(D);
  md /= double(d.size());
  for (int64_t D : d) vd += 3 * (double(D) - md) * (double(D) - md);
  for (double c : {3.0, 7.0, 10.0}) vc += double(d.size()) * (c - 20.0 / 3) * (c - 20.0 / 3);
  EXPECT_NEAR(f->share, vd / (vd + vc), 1e-9);
}

// A holder spinning in a loop of short calls (a stall on clock_gettime):
// the runtime writes the calls as one span after the time between them, so
// the loop read as two causes, the calls and the body (and a third, the
// function, where a wait named the holder at its call). A loop is its
// function's: the calls' parts, the Held parts that name them and the
// function's body are one cause, the function, with exactly their shares.
TEST(Causes, ALoopOfCallsIsOneCauseWithItsFunctionsBody) {
  const std::vector<int64_t> d = holds(40);
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto plain = analyze_one(convoy(d), convoy_names(), opt);
  auto looped = analyze_one(convoy(d, true), convoy_names(), opt);
  const Factor *calls = cause(*plain, "d"), *body = cause(*plain, "H (body)");
  ASSERT_NE(calls, nullptr);
  ASSERT_NE(body, nullptr);
  const Factor *h = cause(*looped, "H");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->rank, 1);
  EXPECT_EQ(h->functions, std::vector<std::string>{"H"});
  EXPECT_NEAR(h->share, calls->share + body->share, 1e-9);
  EXPECT_NEAR(h->own_share, calls->own_share + body->own_share, 1e-9);
  EXPECT_EQ(cause(*looped, "d"), nullptr);
  EXPECT_EQ(cause(*looped, "H (body)"), nullptr);
  double sum = looped->causes.none;
  for (const Factor &f : looped->causes.ranked) sum += f.share;
  EXPECT_NEAR(sum, 1.0, 1e-9);
  // The factors are the tree's, as before: the loop's calls stay a factor.
  ASSERT_FALSE(looped->factors.empty());
  EXPECT_EQ(looped->factors.front().name, plain->factors.front().name);
}

// A saved profile keeps which parts are a loop's, so that diff and the gate
// name the changed loop by its function too: the holder's loop got slower.
TEST(Causes, ALoopsCauseSurvivesASavedProfileAndNamesTheChange) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<int64_t> slower = holds(40);
  for (int64_t &D : slower) D = 3 * D;
  Profile base = make_profile(*analyze_one(convoy(holds(40), true), convoy_names(), opt), BuildInfo{});
  Profile head = make_profile(*analyze_one(convoy(slower, true), convoy_names(), opt), BuildInfo{});
  const std::string path = std::string(::testing::TempDir()) + "loop-cause.vprof";
  ASSERT_TRUE(save_profile(head, path).ok());
  auto loaded = load_profile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  size_t looped = 0;
  for (const ProfileNode &n : loaded->runs[0].nodes) looped += n.cause == "H";
  EXPECT_GT(looped, 0u) << "the loop's parts keep their cause";
  DiffOptions o;
  o.bootstrap = 0;
  auto d = diff_profiles({&base}, {&*loaded}, o);
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_FALSE(d->causes.empty());
  EXPECT_EQ(d->causes.front().name, "H");
  for (const FactorDiff &c : d->causes) EXPECT_NE(c.name, "d");
}

TEST(Causes, EveryPartOfTheTreeIsInOneCauseOrInNone) {
  auto a = analyze_one(convoy(holds(40)), convoy_names(), AnalyzeOptions{});
  double sum = a->causes.none;
  for (const Factor &f : a->causes.ranked) sum += f.share;
  EXPECT_NEAR(sum, 1.0, 1e-9);
  EXPECT_TRUE(a->causes.held);
  // The ones of constant time per type carry what the types' offsets do.
  for (const char *name : {"H (body)", "G (body)", "F (body)", "lock1", "lock2"})
    EXPECT_NE(cause(*a, name), nullptr) << name;
}

TEST(Causes, TheReportsSayTheCauseWithItsParts) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto a = analyze_one(convoy(holds(40)), convoy_names(), opt);
  std::stringstream t, j;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, t).ok());
  const std::string s = t.str();
  const size_t at = s.find("top causes");
  ASSERT_NE(at, std::string::npos) << s;
  EXPECT_NE(s.find("     1  d ", at), std::string::npos) << s.substr(at, 600);
  EXPECT_NE(s.find("held up ", at), std::string::npos);
  EXPECT_NE(s.find(" in lock1 at t.cc:10", at), std::string::npos) << s.substr(at, 600);
  ASSERT_TRUE(make_json_reporter()->write(*a, j).ok());
  auto doc = nlohmann::json::parse(j.str());
  ASSERT_TRUE(doc["causes"]["held"].get<bool>());
  EXPECT_EQ(doc["causes"]["ranked"][0]["name"], "d");
  EXPECT_EQ(doc["causes"]["ranked"][0]["held_up"].size(), 2u);
}

TEST(Causes, AHolderWithNoTraceIsSaidAndCountedNeverFoldedIntoTheWait) {
  // A (interval 1) waits at site 1 in F(1) over [10,40), woken by tid 99,
  // which the run did not record (another process, a thread with no file).
  // [10,40) is held by an unrecorded thread: 30 under the wait; the wait's
  // own [40,41) 1; F's body 10 + 4. Counted, and in no cause.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10).wait_end(40, 0x10, 99, 36)
      .site_end(41, 1).exit(45, 1).end(45, 1);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{FrameKind::Function, 1}, {FrameKind::Site, 1},
                                            {FrameKind::Held, kHeldUnrecorded}})),
            30);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{FrameKind::Function, 1}, {FrameKind::Site, 1}})), 1);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{FrameKind::Function, 1}})), 14);
  EXPECT_EQ(cp.counters.unrecorded_holders, 1u);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
  // In the tree, by its label; in no cause.
  TraceBuilder many;
  for (int i = 0; i < 20; ++i) {
    int64_t t = i * 1000, d = 20 + (i * 7) % 30;
    many.thread(1).begin(t, uint64_t(i + 1)).enter(t, 1).site(t + 10, 1).wait(t + 10, 0x10)
        .wait_end(t + 10 + d, 0x10, 99, t + 5 + d).site_end(t + 11 + d, 1).exit(t + 15 + d, 1)
        .end(t + 15 + d, uint64_t(i + 1));
  }
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto a = analyze_one(many.build(), make_names({{1, "F"}}, {{1, 1, "lock", 10}}), opt);
  const VarNode *held = find_label(a->tree, "held by an unrecorded thread");
  ASSERT_NE(held, nullptr);
  EXPECT_GT(held->share.value_or(0), 0.9);
  EXPECT_GE(a->causes.none, held->share.value_or(0) - 1e-9) << "the unrecorded holder's part is in no cause";
  for (const Factor &f : a->causes.ranked) EXPECT_EQ(f.name.find("unrecorded"), std::string::npos);
  EXPECT_EQ(a->runs[0]->paths.counters.unrecorded_holders, 20u);
}

TEST(Causes, WithoutHeldPartsTheTableLeavesThemOut) {
  TraceBuilder tb;
  for (int i = 0; i < 20; ++i) {
    int64_t t = i * 100;
    tb.thread(1).begin(t, uint64_t(i + 1)).enter(t, 1).exit(t + 10 + i % 7, 1).end(t + 11 + i % 7, uint64_t(i + 1));
  }
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto a = analyze_one(tb.build(), make_names({{1, "F"}}, {}), opt);
  EXPECT_FALSE(a->causes.held);
  std::stringstream t;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, t).ok());
  EXPECT_EQ(t.str().find("top causes"), std::string::npos) << "they would be the factors again";
}

}  // namespace
}  // namespace vprof::testing
