// Recursion and sometimes-entered callees: a call site whose callee
// enters instrumented code in some calls and not others keeps its own time in
// the site ("<callee> (uninstrumented part)"), never in a nested function's
// body, in every interval; recursive instances are counted once
// (docs/method.md, "Factors"). Every expected value is worked out by hand in
// the comment above it.
#include <array>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

const Factor *factor(const Analysis &a, const std::string &name) {
  for (const auto &f : a.factors)
    if (f.name == name) return &f;
  return nullptr;
}

// The terms under every broken-down node add up to it, and every interval is
// tiled exactly: its leaves sum to its latency, each column node's total is
// its own time plus its children's.
void expect_tiled_and_additive(const RunAnalysis &r) {
  EXPECT_EQ(r.paths.counters.tiling_violations, 0u);
  for (size_t i = 0; i < r.paths.rows.size(); ++i) {
    double sum = 0;
    for (auto *c = r.paths.row_begin(i); c != r.paths.row_end(i); ++c) sum += c->ns;
    ASSERT_EQ(sum, double(r.paths.rows[i].latency_ns)) << "row " << i;
  }
  std::function<void(const VarNode &)> additive = [&](const VarNode &n) {
    if (!n.children.empty())
      EXPECT_NEAR(children_contribution(n), n.contribution, 1e-9) << n.label;
    for (const auto &c : n.children) additive(c);
  };
  additive(r.tree);
}

// f(1) runs for `body` ns, then calls g through site 1 (g is not
// instrumented) for `g_own` ns of g's own code; in interval `rec`, g calls f
// again, which runs `r` ns (no calls) before g finishes.
struct FgfShape {
  int n = 10000, rec = 5000;
  int64_t r = 1000;
  int64_t body(int i) const { return 10 + 4 * ((i / 2) % 2); }       // 10 10 14 14 ...
  int64_t g_own(int i) const { return std::array<int64_t, 4>{100, 160, 120, 140}[i % 4]; }
  trace::Trace build() const {
    TraceBuilder tb;
    auto &th = tb.thread(1);
    for (int i = 0; i < n; ++i) {
      int64_t t = int64_t(i) * 10000;
      th.begin(t, uint64_t(i) + 1).enter(t, 1);
      t += body(i);
      th.site(t, 1);
      int64_t half = g_own(i) / 2;  // g's code before and after the re-entry
      if (i == rec) th.enter(t + half, 1).exit(t + half + r, 1);
      t += g_own(i) + (i == rec ? r : 0);
      th.site_end(t, 1).exit(t, 1).end(t, uint64_t(i) + 1);
    }
    return tb.build();
  }
};

Names fgf_names() { return make_names({{1, "f"}}, {{1, 1, "g", 10}}); }

TEST(Recursion, UninstrumentedCalleeReenteringTheRootStaysInItsSite) {
  // Bug: site 1 took f's name when g re-entered f (in 1 of 10 000 intervals),
  // and g's own time became "f (body)" in every interval.
  // With N = 10 000, planted (sample statistics, n - 1):
  //   body b = 10,10,14,14,...: mean 12, d = ±2            -> Var 4N/(N-1)
  //   g's own u = 100,160,120,140,...: mean 130, d = -30,30,-10,10
  //                                                         -> Var 500N/(N-1)
  //   Cov(b, u): Σ (-2)(-30) + (-2)(30) + 2(-10) + 2(10) = 0 per four -> 0
  //   re-entered f, e = r in interval 5000 only (r = 1000):  Var r²/N = 100
  //   Cov(u, e) = r·(u_5000 - 130)/(N-1) = -30r/(N-1)   (5000 % 4 = 0: u = 100)
  //   Cov(b, e) = r·(b_5000 - 12)/(N-1) = -2r/(N-1)     ((5000/2) % 2 = 0: b = 10)
  FgfShape s;
  const double N = s.n, r = double(s.r);
  const double var_b = 4 * N / (N - 1), var_u = 500 * N / (N - 1), var_e = r * r / N;
  const double cov_ue = -30 * r / (N - 1), cov_be = -2 * r / (N - 1);
  const double var_g = var_u + var_e + 2 * cov_ue;
  const double var_l = var_b + var_g + 2 * cov_be;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(s.build(), fgf_names(), opt, 0).value());
  const RunAnalysis &run = *runs[0];
  ASSERT_EQ(run.paths.rows.size(), size_t(s.n));
  expect_tiled_and_additive(run);
  const VarNode &root = run.tree;
  EXPECT_NEAR(root.value_ns2, var_l, 1e-9 * var_l);
  const VarNode *f = find_label(root, "f");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->value_ns2, var_l, 1e-9 * var_l);
  const VarNode *body = find_label(*f, "f (body)");
  ASSERT_NE(body, nullptr);
  EXPECT_NEAR(body->value_ns2, var_b, 1e-9) << "the body carries only its own variance";
  const VarNode *g = find_label(*f, "g (t.cc:10)");
  ASSERT_NE(g, nullptr) << "the site keeps its callee's name";
  EXPECT_EQ(g->kind, VarNode::Kind::Var);
  EXPECT_NEAR(g->value_ns2, var_g, 1e-9 * var_g);
  EXPECT_NEAR(find_label(*f, "cov(f (body), g (t.cc:10))")->value_ns2, 2 * cov_be, 1e-9);
  ASSERT_EQ(g->children.size(), 3u);
  const VarNode *own = find_label(*g, "g (uninstrumented part)");
  const VarNode *inner = find_label(*g, "f");
  const VarNode *cov = find_label(*g, "cov(g (uninstrumented part), f)");
  ASSERT_TRUE(own && inner && cov);
  EXPECT_NEAR(own->value_ns2, var_u, 1e-9 * var_u);
  EXPECT_EQ(own->kind, VarNode::Kind::Leaf);
  EXPECT_EQ(own->factor, "g (uninstrumented part)");
  ASSERT_TRUE(own->call_site.has_value());
  EXPECT_EQ(own->call_site->line, 10);
  EXPECT_NEAR(inner->value_ns2, var_e, 1e-9);
  EXPECT_NEAR(cov->value_ns2, 2 * cov_ue, 1e-9);
  EXPECT_EQ(find_label(*g, "f (body)"), nullptr) << "g's time is nobody's body";
  // In every interval, not only in the one that re-entered f: the site's own
  // column is g's own time and the nested f's is 0 or r.
  const Columns &c = run.columns;
  int site = own->a.node, nested = inner->a.node;
  ASSERT_TRUE(own->a.self);
  for (int i = 0; i < s.n; ++i) {
    ASSERT_EQ(c.self_at(i, site), double(s.g_own(i))) << "interval " << i;
    ASSERT_EQ(c.total.at(i, nested), i == s.rec ? r : 0.0) << "interval " << i;
  }
  // Factors: f's recursive instance is inside f already (counted once).
  auto a = combine(std::move(runs), opt);
  const Factor *ff = factor(*a, "f");
  ASSERT_NE(ff, nullptr);
  EXPECT_EQ(ff->instances.size(), 1u);
  EXPECT_NEAR(ff->contribution, 1.0, 1e-12);
  const Factor *fu = factor(*a, "g (uninstrumented part)");
  ASSERT_NE(fu, nullptr);
  EXPECT_NEAR(fu->contribution, var_u / var_l, 1e-9);
  EXPECT_EQ(fu->height, 0);
  EXPECT_NEAR(factor(*a, "f (body)")->contribution, var_b / var_l, 1e-9);
}

TEST(Recursion, RootFunctionCountsItsRecursionOnce) {
  // --root f: the same tree under the root f (no outside time here); the
  // re-entered f is inside the root, so it is no factor of its own.
  FgfShape s;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  opt.root = "f";
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(s.build(), fgf_names(), opt, 0).value());
  const VarNode &root = runs[0]->tree;
  EXPECT_EQ(root.label, "f");
  const double N = s.n, var_b = 4 * N / (N - 1), var_u = 500 * N / (N - 1);
  EXPECT_NEAR(find_label(root, "f (body)")->value_ns2, var_b, 1e-9);
  const VarNode *own = find_label(root, "g (uninstrumented part)");
  ASSERT_NE(own, nullptr);
  EXPECT_NEAR(own->value_ns2, var_u, 1e-9 * var_u);
  expect_tiled_and_additive(*runs[0]);
  auto a = combine(std::move(runs), opt);
  EXPECT_EQ(factor(*a, "f"), nullptr);
  const Factor *part = factor(*a, "g (uninstrumented part)"), *g = factor(*a, "g");
  ASSERT_TRUE(part && g);
  // g's site is selected, to be broken down; its uninstrumented part is inside
  // it, so with shares it is not listed a second time (factors.h: nested).
  EXPECT_GT(g->rank, 0) << "selected, to be broken down";
  EXPECT_EQ(part->rank, 0);
  EXPECT_EQ(part->nested_with, "g");
}

trace::Trace mutual();

TEST(Recursion, EpochsAndThreadsDoNotChangeWhatASiteIs) {
  // Whether a site's calls were all direct is summed over epochs and
  // threads: any epoch size gives the one-epoch result (timeline.h, I5).
  FgfShape s;
  s.n = 40;
  s.rec = 17;
  trace::Trace t = s.build();
  PathOptions whole;
  whole.epoch_records = size_t{1} << 30;
  auto ref = compute_critical_paths(t, whole);
  for (size_t e : {1, 2, 5}) {
    for (unsigned threads : {1u, 2u}) {
      PathOptions o;
      o.epoch_records = e;
      o.threads = threads;
      SCOPED_TRACE(::testing::Message() << "epoch_records=" << e << " threads=" << threads);
      expect_same(ref, compute_critical_paths(t, o));
    }
  }
  // With the manifest's direct calls (the mutual shape: both sites vouched
  // for) as without them, any epoch size gives the one-epoch result, and the
  // two agree.
  DirectCalls direct;
  direct.fn_name = {0, 1, 2};            // f, g
  direct.site_callee = {0, 2, 1};        // site 1 calls g, site 2 calls f
  PathOptions hinted = whole;
  hinted.direct_calls = &direct;
  auto mref = compute_critical_paths(mutual(), hinted);
  expect_same(mref, compute_critical_paths(mutual(), whole));
  for (size_t e : {1, 3}) {
    PathOptions o = hinted;
    o.epoch_records = e;
    SCOPED_TRACE(::testing::Message() << "hinted, epoch_records=" << e);
    expect_same(mref, compute_critical_paths(mutual(), o));
  }
  // Site 1 is not folded: f under it is a node of its own.
  int64_t site = node_of(ref.trie, {{FrameKind::Function, 1}, {FrameKind::Site, 1}});
  ASSERT_GE(site, 0);
  EXPECT_EQ(ref.trie[uint32_t(site)].callee_fn, 0u);
  EXPECT_GE(node_of(ref.trie, {{FrameKind::Function, 1}, {FrameKind::Site, 1}, {FrameKind::Function, 1}}), 0);
}

TEST(Recursion, LostRecordsDoNotMakeADirectCallLookReentered) {
  // Site 1 calls f2 directly twice; after records were lost at 45, a third
  // call shows no enter (it was lost) and a fourth is still open when the
  // data ends. Neither says the site's callee is anything but f2.
  TraceBuilder tb;
  auto &th = tb.thread(1);
  th.enter(0, 1).call(10, 20, 1, 2).call(30, 40, 1, 2).drop(45, 7);
  th.site(50, 1).site_end(60, 1).site(70, 1);
  auto r = compute_critical_paths(tb.build());
  int64_t site = node_of(r.trie, {{FrameKind::Function, 1}, {FrameKind::Site, 1}});
  ASSERT_GE(site, 0);
  EXPECT_EQ(r.trie[uint32_t(site)].callee_fn, 2u);
  EXPECT_EQ(node_of(r.trie, {{FrameKind::Function, 1}, {FrameKind::Site, 1}, {FrameKind::Function, 2}}),
            -1);
}

// f(1) calls g(2) through site 1; g calls f back through site 2 in intervals
// 1 and 3 (both instrumented, each site always enters its function).
trace::Trace mutual() {
  int64_t a[] = {2, 4, 2, 4}, c[] = {10, 10, 20, 20}, d[] = {0, 6, 0, 6};
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < 4; ++i) {
    int64_t t = i * 1000;
    th.begin(t, i + 1).enter(t, 1).site(t + a[i], 1).enter(t + a[i], 2);
    int64_t u = t + a[i] + c[i];
    if (d[i]) th.call(u, u + d[i], 2, 1);
    u += d[i];
    th.exit(u, 2).site_end(u, 1).exit(u, 1).end(u, i + 1);
  }
  return tb.build();
}

TEST(Recursion, MutualRecursionCountsTheInnerInstanceOnce) {
  // f body a = {2,4,2,4}: mean 3, d = ∓1          -> Var 4/3
  // g body c = {10,10,20,20}: mean 15, d = ∓5     -> Var 100/3
  // f again d = {0,6,0,6}: mean 3, d = ∓3         -> Var 36/3 = 12
  // Cov(a, d) = (3+3+3+3)/3 = 4; Cov(a, c) = (5-5-5+5)/3 = 0; Cov(c, d) = 0.
  // g's site = c + d: Var 100/3 + 12 = 136/3; L = a + g:
  // Var(L) = 4/3 + 136/3 + 2·4 = 164/3.
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  Names names = make_names({{1, "f"}, {2, "g"}}, {{1, 1, "g", 10}, {2, 2, "f", 20}});
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(mutual(), names, opt, 0).value());
  expect_tiled_and_additive(*runs[0]);
  const VarNode &root = runs[0]->tree;
  EXPECT_NEAR(root.value_ns2, 164.0 / 3, 1e-9);
  const VarNode *g = find_label(root, "g (t.cc:10)");
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(g->value_ns2, 136.0 / 3, 1e-9);
  EXPECT_NEAR(find_label(*g, "g (body)")->value_ns2, 100.0 / 3, 1e-9);
  const VarNode *f2 = find_label(*g, "f (t.cc:20)");
  ASSERT_NE(f2, nullptr);
  EXPECT_NEAR(f2->value_ns2, 12, 1e-9);
  EXPECT_EQ(find_label(root, "g (uninstrumented part)"), nullptr) << "every call was direct";
  EXPECT_NEAR(find_label(root, "f (body)")->value_ns2, 4.0 / 3, 1e-9);
  EXPECT_NEAR(find_label(root, "cov(f (body), g (t.cc:10))")->value_ns2, 8, 1e-9);
  auto a = combine(std::move(runs), opt);
  // f's second instance is inside the first: counted once.
  EXPECT_EQ(factor(*a, "f")->instances.size(), 1u);
  EXPECT_NEAR(factor(*a, "f")->contribution, 1.0, 1e-12);
  EXPECT_NEAR(factor(*a, "g")->contribution, 136.0 / 164, 1e-12);
  EXPECT_EQ(factor(*a, "f")->height, factor(*a, "g")->height) << "one strongly connected component";
}

// f(1) has a body of 5 ns, then calls through the pointer `fp` at site 3: in
// intervals 0 and 2 it points to an uninstrumented function (y ns), in 1 and
// 3 (`always`: in all four) to f itself, entered 1 ns into the site and left
// 1 ns before its end, after z ns of body.
trace::Trace through_pointer(bool always) {
  int64_t y[] = {30, 0, 50, 0}, z[] = {7, 8, 9, 12};
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < 4; ++i) {
    int64_t t = i * 1000;
    th.begin(t, i + 1).enter(t, 1).site(t + 5, 3);
    int64_t u = t + 5;
    if (always || i % 2) {
      th.enter(u + 1, 1).exit(u + 1 + z[i], 1);
      u += z[i] + 2;
    } else {
      u += y[i];
    }
    th.site_end(u, 3).exit(u, 1).end(u, i + 1);
  }
  return tb.build();
}

TEST(Recursion, ARecursivePointerCallIsNamedByThePointerUnlessEveryCallReenters) {
  // The site's own time u = {30, 2, 50, 2}: mean 21, d = 9,-19,29,-19
  //   -> Σd² = 81+361+841+361 = 1644, Var 548;
  // f through the pointer n = {0, 8, 0, 12}: mean 5, d = -5,3,-5,7 -> 108/3 = 36;
  // Cov(u, n) = (-45 - 57 - 145 - 133)/3 = -380/3.
  // The body is constant: Var(L) = Var(site) = 548 + 36 - 760/3 = 992/3.
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  Names names = make_names({{1, "f"}}, {{3, 1, "fp", 30}});
  auto run = analyze_run(through_pointer(false), names, opt, 0).value();
  expect_tiled_and_additive(*run);
  EXPECT_NEAR(run->tree.value_ns2, 992.0 / 3, 1e-9);
  const VarNode *site = find_label(run->tree, "fp (t.cc:30)");
  ASSERT_NE(site, nullptr) << "named by the pointer expression, not by f";
  EXPECT_NEAR(site->value_ns2, 992.0 / 3, 1e-9);
  EXPECT_NEAR(find_label(*site, "fp (uninstrumented part)")->value_ns2, 548, 1e-9);
  EXPECT_NEAR(find_label(*site, "f")->value_ns2, 36, 1e-9);
  EXPECT_NEAR(find_label(*site, "cov(fp (uninstrumented part), f)")->value_ns2, -760.0 / 3, 1e-9);
  ASSERT_NE(find_label(run->tree, "f (body)"), nullptr);
  EXPECT_EQ(find_label(run->tree, "f (body)")->value_ns2, 0) << "f's body is constant";

  // Always f through the pointer: a direct call, the site is f's call (its
  // 2 ns of wrapper folded into f's body). n + 2 = {9,10,11,14}: mean 11,
  // d = -2,-1,0,3 -> 14/3.
  auto always = analyze_run(through_pointer(true), names, opt, 0).value();
  expect_tiled_and_additive(*always);
  const VarNode *direct = find_label(always->tree, "f (t.cc:30)");
  ASSERT_NE(direct, nullptr);
  EXPECT_NEAR(direct->value_ns2, 14.0 / 3, 1e-9);
  EXPECT_EQ(find_label(always->tree, "fp (uninstrumented part)"), nullptr);
}

TEST(Recursion, ARunThatInstrumentsTheCalleeReplacesTheSitesOwnPart) {
  // Run 0 is the f-g-f shape on 8 intervals (g not instrumented); run 1
  // instruments g (2): site 1 always enters it, g's own time is g's body, and
  // g calls f through its site 2 where run 0 saw the re-entry. The merged
  // tree takes run 1's breakdown of g's site.
  FgfShape s;
  s.n = 8;
  s.rec = 4;
  TraceBuilder t1;
  auto &th = t1.thread(1);
  for (int i = 0; i < s.n; ++i) {
    int64_t t = int64_t(i) * 10000;
    th.begin(t, uint64_t(i) + 1).enter(t, 1);
    t += s.body(i);
    th.site(t, 1).enter(t, 2);
    if (i == s.rec) th.call(t + 1, t + 1 + s.r, 2, 1);
    t += s.g_own(i) + (i == s.rec ? s.r : 0);
    th.exit(t, 2).site_end(t, 1).exit(t, 1).end(t, uint64_t(i) + 1);
  }
  Names n1 = make_names({{1, "f"}, {2, "g"}}, {{1, 1, "g", 10}, {2, 2, "f", 20}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(s.build(), fgf_names(), opt, 0).value());
  runs.push_back(analyze_run(t1.build(), n1, opt, 1).value());
  ASSERT_NE(find_label(runs[0]->tree, "g (uninstrumented part)"), nullptr);
  auto a = combine(std::move(runs), opt);
  const VarNode *g = find_label(a->tree, "g (t.cc:10)");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->run, 0);
  EXPECT_EQ(find_label(*g, "g (uninstrumented part)"), nullptr);
  const VarNode *gb = find_label(*g, "g (body)");
  ASSERT_NE(gb, nullptr);
  EXPECT_EQ(gb->run, 1);
  ASSERT_NE(find_label(*g, "f (t.cc:20)"), nullptr);
  EXPECT_NEAR(children_contribution(*g), g->contribution, 1e-9);
}

TEST(Recursion, ANamedCalleeThatReentersInEveryCallIsNeverTakenForTheSitesCallee) {
  // through_pointer(true) with site 3 a direct call of g (not instrumented),
  // as a manifest of schema 2 says: g enters f in every call. Before, every
  // call looked like a direct call of f and g's own 2 ns became f's body.
  // Now the site keeps g's name and its own time; f is a child:
  //   site = z + 2 = {9,10,11,14} -> Var 14/3; own = 2 (constant, Var 0);
  //   f = z = {7,8,9,12}: mean 9, d = -2,-1,0,3 -> 14/3.
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  Names names = make_names({{1, "f"}}, {{3, 1, "g", 30}});
  names.schema_version = 2;
  auto run = analyze_run(through_pointer(true), names, opt, 0).value();
  expect_tiled_and_additive(*run);
  EXPECT_EQ(find_label(run->tree, "f (t.cc:30)"), nullptr);
  const VarNode *site = find_label(run->tree, "g (t.cc:30)");
  ASSERT_NE(site, nullptr);
  EXPECT_NEAR(site->value_ns2, 14.0 / 3, 1e-9);
  const VarNode *own = find_label(*site, "g (uninstrumented part)");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->value_ns2, 0);
  ASSERT_NE(find_label(*site, "f"), nullptr);
  EXPECT_NEAR(find_label(*site, "f")->value_ns2, 14.0 / 3, 1e-9);

  // The same site marked indirect (a call through a pointer): every call
  // entered f once, yet f stays a node under the site, as it would if
  // another run's calls reached a second target (runs must key f's subtree
  // the same way, whatever else the pointer reached).
  names.sites[3].indirect = true;
  auto indirect = analyze_run(through_pointer(true), names, opt, 0).value();
  expect_tiled_and_additive(*indirect);
  EXPECT_EQ(find_label(indirect->tree, "f (t.cc:30)"), nullptr);
  const VarNode *pointer = find_label(indirect->tree, "g (t.cc:30)");
  ASSERT_NE(pointer, nullptr);
  ASSERT_NE(find_label(*pointer, "f"), nullptr);
  EXPECT_NEAR(find_label(*pointer, "f")->value_ns2, 14.0 / 3, 1e-9);
}

// Site 3 in function 1 ("run") calls through a pointer: function 2 ("a") in
// even intervals, function 3 ("b") in odd ones, each for w ns; on one thread
// or the even intervals on thread 1 and the odd ones on thread 2.
trace::Trace two_targets(bool two_threads) {
  int64_t w[] = {10, 40, 20, 60, 30, 20};
  TraceBuilder tb;
  for (int i = 0; i < 6; ++i) {
    auto &th = tb.thread(two_threads && i % 2 ? 2 : 1);
    int64_t t = i * 1000;
    uint32_t fn = i % 2 ? 3 : 2;
    th.begin(t, i + 1).enter(t, 1).site(t + 5, 3).enter(t + 5, fn);
    th.exit(t + 5 + w[i], fn).site_end(t + 5 + w[i], 3).exit(t + 5 + w[i], 1).end(t + 5 + w[i], i + 1);
  }
  return tb.build();
}

TEST(Recursion, APointerCallReachingTwoFunctionsKeepsThemApart) {
  // Each call enters one function once, but not always the same one: folding
  // them into the site would mix a's and b's breakdowns under one name.
  // a = {10,0,20,0,30,0}, b = {0,40,0,60,0,20}; the site is their sum.
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  Names names = make_names({{1, "run"}, {2, "a"}, {3, "b"}}, {{3, 1, "node->exec", 30}});
  names.schema_version = 2;
  names.sites[3].indirect = true;
  for (bool two_threads : {false, true}) {
    SCOPED_TRACE(two_threads ? "two threads" : "one thread");
    auto run = analyze_run(two_targets(two_threads), names, opt, 0).value();
    expect_tiled_and_additive(*run);
    const VarNode *site = find_label(run->tree, "node->exec (t.cc:30)");
    ASSERT_NE(site, nullptr);
    ASSERT_NE(find_label(*site, "a"), nullptr);
    ASSERT_NE(find_label(*site, "b"), nullptr);
    EXPECT_EQ(find_label(run->tree, "a (t.cc:30)"), nullptr);
    EXPECT_EQ(find_label(run->tree, "b (t.cc:30)"), nullptr);
    // a: mean 10, d = 0,-10,10,-10,20,-10 -> 800/5 = 160.
    EXPECT_NEAR(find_label(*site, "a")->value_ns2, 160, 1e-9);
  }
}

// run(1) calls through the pointer site 3: a(2) in every interval of the
// first run; in the second, a in even intervals and b(3) in odd ones. a
// calls c(4) at site 4; in the second run c is broken down (its call of d(5)
// at site 5 is instrumented).
trace::Trace pointer_then_deeper(bool second) {
  int64_t w[] = {10, 40, 20, 60, 30, 20};
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < 6; ++i) {
    int64_t t = i * 1000;
    th.begin(t, i + 1).enter(t, 1).site(t + 5, 3);
    int64_t end;
    if (second && i % 2) {
      end = t + 6 + w[i];
      th.enter(t + 5, 3).exit(end, 3);
    } else {
      th.enter(t + 5, 2).site(t + 6, 4).enter(t + 6, 4);
      int64_t x = t + 6 + w[i];
      if (second) {
        th.site(t + 7, 5).enter(t + 7, 5).exit(t + 7 + w[i], 5).site_end(t + 7 + w[i], 5);
        x = t + 8 + w[i];
      }
      th.exit(x, 4).site_end(x, 4);
      end = x + 1;
      th.exit(end, 2);
    }
    th.site_end(end, 3).exit(end, 1).end(end, i + 1);
  }
  return tb.build();
}

TEST(Recursion, RunsWhosePointerCallReachedOneOrTwoTargetsMergeTheSameSubtree) {
  // PostgreSQL: `node->ExecProcNode` reached ExecModifyTable alone in one
  // run and also ExecProcNodeFirst in the next. The first run folded the
  // call into ExecModifyTable's and keyed its parts under the site; the
  // second kept ExecModifyTable a node under it; so the second run's deeper
  // breakdown (XactLockTableWait -> LockAcquire) matched nothing and was
  // dropped, and iterate stopped on "already broken down". Here: d, known
  // only to the second run, must be in the merged tree under c under a.
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  Names names = make_names({{1, "run"}, {2, "a"}, {3, "b"}, {4, "c"}, {5, "d"}},
                           {{3, 1, "node->exec", 30}, {4, 2, "c", 40}, {5, 4, "d", 50}});
  names.schema_version = 2;
  names.sites[3].indirect = true;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(pointer_then_deeper(false), names, opt, 0).value());
  runs.push_back(analyze_run(pointer_then_deeper(true), names, opt, 1).value());
  for (const auto &r : runs) expect_tiled_and_additive(*r);
  auto merged = combine(std::move(runs), opt);
  const VarNode *site = find_label(merged->tree, "node->exec (t.cc:30)");
  ASSERT_NE(site, nullptr);
  const VarNode *a = find_label(*site, "a");
  ASSERT_NE(a, nullptr);
  const VarNode *c = find_label(*a, "c (t.cc:40)");
  ASSERT_NE(c, nullptr);
  const VarNode *d = find_label(*c, "d (t.cc:50)");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->run, 1);
  EXPECT_GT(d->share, 0.0);
}


// A recursion as deep as a recursive server's worst request: f
// calls itself through site 1, `depth` deep, in one interval of many. The
// analyzer walks no structure by recursion on the call depth: this runs on
// the test's default stack, in time linear in the records.
trace::Trace deep_recursion(int depth, int intervals) {
  TraceBuilder tb;
  auto &th = tb.thread(1);
  int64_t t = 0;
  for (int i = 0; i < intervals; ++i) {
    const int d = i == intervals / 2 ? depth : 1 + i % 3;
    th.begin(t, uint64_t(i) + 1);
    for (int k = 0; k < d; ++k) {
      th.enter(t, 1);
      t += 3;
      if (k + 1 < d) th.site(t, 1);
    }
    for (int k = d - 1; k >= 0; --k) {
      t += 2;
      th.exit(t, 1);
      if (k > 0) th.site_end(t, 1);
    }
    th.end(t, uint64_t(i) + 1);
    t += 100;
  }
  return tb.build();
}

TEST(Recursion, AMillionDeepRecursionIsAnalyzedOnTheDefaultStack) {
  const int depth = 1000000, n = 200;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 20;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(deep_recursion(depth, n), make_names({{1, "f"}}, {{1, 1, "f", 10}}), opt, 0).value());
  const RunAnalysis &run = *runs[0];
  ASSERT_EQ(run.paths.rows.size(), size_t(n));
  expect_tiled_and_additive(run);
  // The deep interval lasts depth·5 ns, all of it f's: f is the whole of Var.
  EXPECT_EQ(run.paths.rows[n / 2].latency_ns, int64_t(depth) * 5);
  // f is shown at most StackTrie::kRecursionShown times on a path (f, then
  // its direct calls "f (t.cc:10)", each folded with its site); the deepest
  // instance holds all the recursion below it: its total is the latency less
  // the 3 + 2 ns of each f above it, so nothing is lost. The deepest site's
  // own time (none here) is a leaf under it.
  std::vector<const VarNode *> path;
  for (const VarNode *v = run.tree.children.empty() ? nullptr : &run.tree.children[0]; v;) {
    path.push_back(v);
    const VarNode *next = nullptr;
    for (const auto &c : v->children)
      if (c.kind == VarNode::Kind::Var) next = &c;
    v = next;
  }
  ASSERT_EQ(path.size(), size_t(StackTrie::kRecursionShown));
  EXPECT_EQ(path[0]->label, "f");
  for (size_t k = 1; k < path.size(); ++k) EXPECT_EQ(path[k]->label, "f (t.cc:10)");
  const VarNode *deepest = path.back();
  ASSERT_NE(find_label(*deepest, "f (body)"), nullptr);
  EXPECT_EQ(run.columns.total.at(n / 2, deepest->a.node),
            double(int64_t(depth - int(path.size()) + 1) * 5));
  auto a = combine(std::move(runs), opt);
  const Factor *f = factor(*a, "f");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->contribution, 1.0, 1e-9);
}

}  // namespace
}  // namespace vprof::testing
