// The tree within each interval type and per-client fairness (docs/method.md,
// "Beyond the papers"): synthetic traces whose answers are worked out by hand.
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

Names two_calls() {
  return make_names({{1, "R"}, {2, "f"}, {3, "g"}, {4, "h"}},
                    {{1, 1, "f", 40}, {2, 1, "g", 41}, {3, 2, "h", 50}});
}

std::unique_ptr<Analysis> analyze(const TraceBuilder &tb, const Names &names) {
  AnalyzeOptions opt;
  opt.factors.d = 0.0;
  opt.factors.bootstrap = 0;
  return analyze_one(tb.build(), names, opt);
}

// Intervals of type A vary only in f, intervals of type B only in g; the
// types also differ in their means (B's g is long), so the whole tree mixes
// both functions with the between-type variance.
// deeper: f's call of h (site 3) is instrumented too, a later run's view.
TraceBuilder typed_trace(bool deeper = false) {
  TraceBuilder tb;
  uint32_t a = tb.label("A"), b = tb.label("B");
  const int64_t f_a[] = {10, 50, 20, 80, 30, 60, 40, 70};
  const int64_t g_b[] = {300, 200, 500, 250, 400, 350, 450, 220};
  for (int i = 0; i < 16; ++i) {
    const bool is_a = i % 2 == 0;
    const int64_t t = i * 10000;
    const int64_t f = is_a ? f_a[i / 2] : 25, g = is_a ? 15 : g_b[i / 2];
    auto &th = tb.thread(1);
    th.begin(t, uint64_t(i + 1), is_a ? a : b).enter(t, 1);
    if (deeper) {
      th.site(t + 1, 1).enter(t + 1, 2).call(t + 2, t + f, 3, 4).exit(t + 1 + f, 2).site_end(t + 1 + f, 1);
    } else {
      th.call(t + 1, t + 1 + f, 1, 2);
    }
    th.call(t + 1 + f, t + 1 + f + g, 2, 3);
    th.exit(t + 2 + f + g, 1).end(t + 2 + f + g, uint64_t(i + 1));
  }
  return tb;
}

const TypeStats &type_named(const Analysis &a, const std::string &name) {
  for (const TypeStats &t : a.types.types)
    if (t.type == name) return t;
  throw std::runtime_error("no type " + name);
}

// Each node's parts' shares add up to its share (variance_tree.h).
void expect_shares_add_up(const VarNode &n) {
  if (n.kind == VarNode::Kind::Cov || n.children.empty()) return;
  EXPECT_NEAR(children_share(n), n.share.value_or(0), 1e-9) << n.label;
  for (const VarNode &c : n.children) expect_shares_add_up(c);
}

TEST(TypeTrees, EachTypesVarianceComesFromItsOwnFunction) {
  auto a = analyze(typed_trace(), two_calls());
  ASSERT_TRUE(a->types.labeled);
  ASSERT_EQ(a->types.types.size(), 2u);
  // Within A, L = constant + f: f's share Cov(f, L)/Var(L) is 1, g's 0 (a
  // constant). Within B the reverse. Found by label: "f (t.cc:40)".
  const TypeStats &ta = type_named(*a, "A"), &tb = type_named(*a, "B");
  EXPECT_EQ(ta.intervals, 8u);
  for (const auto &[t, varying, constant] :
       {std::tuple{&ta, "f (t.cc:40)", "g (t.cc:41)"}, std::tuple{&tb, "g (t.cc:41)", "f (t.cc:40)"}}) {
    const VarNode *v = find_label(t->tree, varying), *c = find_label(t->tree, constant);
    ASSERT_NE(v, nullptr) << t->type;
    ASSERT_NE(c, nullptr) << t->type;
    EXPECT_NEAR(v->share.value(), 1.0, 1e-12) << t->type;
    EXPECT_NEAR(c->share.value(), 0.0, 1e-12) << t->type;
    EXPECT_NEAR(t->tree.share.value(), 1.0, 1e-12);
    // The root is that type's latency: its variance is the type's (sample).
    EXPECT_NEAR(t->tree.value_ns2, t->variance_ns2 * 8.0 / 7.0, 1e-6) << t->type;
    expect_shares_add_up(t->tree);
  }
  // The whole tree mixes them: neither function explains all of it.
  const VarNode *wf = find_label(a->tree, "f (t.cc:40)"), *wg = find_label(a->tree, "g (t.cc:41)");
  ASSERT_TRUE(wf && wg);
  EXPECT_GT(wg->share.value(), 0.9);  // B's long g is most of the whole variance
  EXPECT_LT(wf->share.value(), 0.1);
}

TEST(TypeTrees, JsonHasATreePerTypeAndTheTableShowsThemWithByType) {
  auto a = analyze(typed_trace(), two_calls());
  json j = to_json(*a);
  ASSERT_EQ(j["types"]["by_type"].size(), 2u);
  for (const auto &t : j["types"]["by_type"]) {
    ASSERT_TRUE(t.contains("tree")) << t.dump();
    const json &root = t["tree"];
    // The top-level tree's node shape.
    for (const char *k : {"id", "kind", "label", "functions", "call_site", "value_ns2",
                          "contribution", "share", "run", "children"})
      EXPECT_TRUE(root.contains(k)) << k;
    EXPECT_EQ(root["label"], "latency");
    EXPECT_DOUBLE_EQ(root["share"].get<double>(), 1.0);
  }
  std::stringstream plain, by_type;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, plain).ok());
  TerminalOptions opt;
  opt.by_type = true;
  ASSERT_TRUE(make_terminal_reporter(opt)->write(*a, by_type).ok());
  EXPECT_EQ(plain.str().find("variance tree within type"), std::string::npos);
  EXPECT_NE(by_type.str().find("variance tree within type A (8 intervals"), std::string::npos)
      << by_type.str();
  EXPECT_NE(by_type.str().find("variance tree within type B (8 intervals"), std::string::npos);
}

// Labels come from clients: a newline in a type broke the table's heading in
// two, and a client name cut at 24 bytes could end inside a UTF-8 character.
TEST(TypeTrees, LabelsWithControlCharactersStayOnTheirLine) {
  TraceBuilder tb;
  uint32_t a = tb.label("a\nb"), b = tb.label("tab\there");
  uint32_t c = tb.label("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
  for (int i = 0; i < 8; ++i) {
    const int64_t t = i * 1000;
    tb.thread(1).begin(t, uint64_t(i + 1), i % 2 ? a : b, c).enter(t, 1).exit(t + 10 + 7 * i, 1).end(t + 20 + 7 * i, uint64_t(i + 1));
  }
  auto an = analyze(tb, two_calls());
  TerminalOptions opt;
  opt.by_type = true;
  std::stringstream out;
  ASSERT_TRUE(make_terminal_reporter(opt)->write(*an, out).ok());
  const std::string text = out.str();
  EXPECT_NE(text.find("variance tree within type a\\nb (4 intervals"), std::string::npos) << text;
  EXPECT_NE(text.find("variance tree within type tab\\there (4 intervals"), std::string::npos) << text;
  // 13 two-byte characters are 26 bytes: cut to 11 and a '~' (23 bytes), not mid-character.
  EXPECT_NE(text.find("  \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9~ "), std::string::npos) << text;
}

TEST(TypeTrees, RunsMergeByFractionsWithinEachType) {
  // Run 1 also times f's call of h, which is all of f but 2 ns: within A
  // (where f varies) h carries f's whole share, 1, grafted under run 0's f.
  // Within B f is a constant: nothing to break down, in either run.
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  for (int r = 0; r < 2; ++r)
    runs.push_back(analyze_run(typed_trace(r == 1).build(), two_calls(), opt, r).value());
  auto a = combine(std::move(runs), opt);
  const VarNode *fa = find_label(type_named(*a, "A").tree, "f (t.cc:40)");
  ASSERT_NE(fa, nullptr);
  const VarNode *h = find_label(*fa, "h (t.cc:50)");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->run, 1);
  EXPECT_NEAR(h->share.value(), 1.0, 1e-12);
  const VarNode *fb = find_label(type_named(*a, "B").tree, "f (t.cc:40)");
  ASSERT_NE(fb, nullptr);
  EXPECT_TRUE(fb->children.empty());
  EXPECT_NEAR(fb->share.value(), 0.0, 1e-12);
}

TEST(TypeTrees, NoTypeLabelsNoTrees) {
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).end(10, 1).begin(20, 2).end(50, 2);
  auto a = analyze(tb, Names{});
  EXPECT_FALSE(a->types.labeled);
  EXPECT_TRUE(to_json(*a)["types"].is_null());
  EXPECT_TRUE(to_json(*a)["clients"].is_null());
  EXPECT_TRUE(to_json(*a)["unfairness"].is_null());
}

// Three clients with known rates over the same 1 ms:
//   alice 100 intervals (one every 10 us), latencies 4, 6, 4, 6, ... us
//   bob    50 intervals (one every 20 us), latencies 5, 15, 5, 15, ... us
//   carol  25 intervals (one every 40 us), latency 8 us each
// plus 3 intervals without a client (in no share).
// By hand (AppleS §3.1, equal weights phi_i = 1):
//   N = (100, 50, 25), n = 3, H = (100 + 50 + 25) / 3 = 175/3
//   |N_i - H| = 125/3, 25/3, 100/3; the largest is alice's
//   U_f = (125/3) / (175/3) = 5/7 = 0.714285...
//   shares 100/175 = 4/7, 50/175 = 2/7, 25/175 = 1/7
//   CV (population sd / mean): alice 1/5 = 0.2, bob 5/10 = 0.5, carol 0
//   mean CV = (0.2 + 0.5 + 0) / 3 = 7/30 = 0.2333...
TEST(Fairness, MatchesTheHandComputation) {
  TraceBuilder tb;
  uint32_t alice = tb.label("alice"), bob = tb.label("bob"), carol = tb.label("carol");
  uint64_t id = 1;
  for (int i = 0; i < 100; ++i)
    tb.thread(1).begin(i * 10000, id, 0, alice).end(i * 10000 + (i % 2 ? 6000 : 4000), id), ++id;
  for (int i = 0; i < 50; ++i)
    tb.thread(2).begin(i * 20000, id, 0, bob).end(i * 20000 + (i % 2 ? 15000 : 5000), id), ++id;
  for (int i = 0; i < 25; ++i) tb.thread(3).begin(i * 40000, id, 0, carol).end(i * 40000 + 8000, id), ++id;
  for (int i = 0; i < 3; ++i) tb.thread(4).begin(i * 1000, id).end(i * 1000 + 500, id), ++id;
  auto a = analyze(tb, Names{});
  const Fairness &f = a->clients;
  ASSERT_TRUE(f.labeled);
  EXPECT_EQ(f.unlabeled_intervals, 3u);
  ASSERT_EQ(f.clients.size(), 3u);
  EXPECT_EQ(f.clients[0].client, "alice");
  EXPECT_EQ(f.clients[1].client, "bob");
  EXPECT_EQ(f.clients[2].client, "carol");
  EXPECT_NEAR(f.unfairness, 5.0 / 7.0, 1e-12);
  EXPECT_NEAR(f.clients[0].share, 4.0 / 7.0, 1e-12);
  EXPECT_NEAR(f.clients[1].share, 2.0 / 7.0, 1e-12);
  EXPECT_NEAR(f.clients[2].share, 1.0 / 7.0, 1e-12);
  EXPECT_NEAR(f.clients[0].cv, 0.2, 1e-12);
  EXPECT_NEAR(f.clients[1].cv, 0.5, 1e-12);
  EXPECT_NEAR(f.clients[2].cv, 0.0, 1e-12);
  EXPECT_NEAR(f.clients[0].mean_ns, 5000.0, 1e-9);
  EXPECT_NEAR(f.mean_cv, 7.0 / 30.0, 1e-12);

  json j = to_json(*a);
  ASSERT_EQ(j["clients"].size(), 3u);
  EXPECT_EQ(j["clients"][1]["client"], "bob");
  EXPECT_EQ(j["clients"][1]["intervals"], 50);
  for (const char *k : {"client", "intervals", "share", "cv", "mean_ns"})
    EXPECT_TRUE(j["clients"][0].contains(k)) << k;
  EXPECT_NEAR(j["unfairness"].get<double>(), 5.0 / 7.0, 1e-12);
  EXPECT_NEAR(j["mean_client_cv"].get<double>(), 7.0 / 30.0, 1e-12);
  EXPECT_EQ(j["unlabeled_client_intervals"], 3);

  std::stringstream ss;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, ss).ok());
  EXPECT_NE(ss.str().find("by client: 3 clients, unfairness U_f 0.714"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("mean CV of latency 0.233"), std::string::npos);
}

TEST(Fairness, EqualRatesAreFair) {
  TraceBuilder tb;
  uint32_t x = tb.label("x"), y = tb.label("y");
  for (int i = 0; i < 10; ++i) {
    tb.thread(1).begin(i * 100, uint64_t(2 * i + 1), 0, x).end(i * 100 + 50, uint64_t(2 * i + 1));
    tb.thread(2).begin(i * 100, uint64_t(2 * i + 2), 0, y).end(i * 100 + 70, uint64_t(2 * i + 2));
  }
  auto a = analyze(tb, Names{});
  EXPECT_DOUBLE_EQ(a->clients.unfairness, 0.0);
  EXPECT_DOUBLE_EQ(a->clients.mean_cv, 0.0);
}

}  // namespace
}  // namespace vprof::testing
