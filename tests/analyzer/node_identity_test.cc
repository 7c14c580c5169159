// A call site's node is keyed by (caller, callee, ordinal of that callee in
// the caller), not by file and line: the same code built
// from another commit, with lines inserted above its call sites, gives the
// same keys, and two calls of one callee in one caller stay apart.
#include <functional>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// f (1) calls g through sites a and b and h through site c, in that order;
// each call lasts a different time per interval.
trace::Trace three_calls(uint32_t a, uint32_t b, uint32_t c) {
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (int i = 0; i < 8; ++i) {
    int64_t t = i * 1000;
    th.begin(t, i + 1).enter(t, 1);
    int64_t x = t + 1 + (i % 3) * 10, y = x + 5 + (i % 2) * 7, z = y + 3 + (i % 4) * 5;
    th.site(t + 1, a).site_end(x, a).site(x, b).site_end(y, b).site(y, c).site_end(z, c);
    th.exit(z, 1).end(z, i + 1);
  }
  return tb.build();
}

std::map<std::string, std::string> keys_by_label(const VarNode &root) {
  std::map<std::string, std::string> out;
  std::function<void(const VarNode &)> walk = [&](const VarNode &n) {
    out[n.label] = n.key;
    for (const auto &c : n.children) walk(c);
  };
  walk(root);
  return out;
}

TEST(NodeIdentity, SitesKeepTheirKeysWhenLinesMoveAndIdsShift) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  // Base: sites 1, 2 (g) and 3 (h) on lines 10, 12, 14.
  Names base = make_names({{1, "f"}}, {{1, 1, "g", 10}, {2, 1, "g", 12}, {3, 1, "h", 14}});
  // Head: 40 lines inserted above, and a new site (id 1, in another
  // function) numbered before them: f's sites are 2, 3, 4 now.
  Names head = make_names({{1, "f"}, {2, "e"}},
                          {{1, 2, "g", 5}, {2, 1, "g", 50}, {3, 1, "g", 52}, {4, 1, "h", 54}});
  auto b = analyze_run(three_calls(1, 2, 3), base, opt, 0).value();
  auto h = analyze_run(three_calls(2, 3, 4), head, opt, 0).value();
  auto kb = keys_by_label(b->tree), kh = keys_by_label(h->tree);
  ASSERT_TRUE(kb.count("g (t.cc:10)") && kb.count("g (t.cc:12)") && kb.count("h (t.cc:14)"));
  ASSERT_TRUE(kh.count("g (t.cc:50)") && kh.count("g (t.cc:52)") && kh.count("h (t.cc:54)"));
  EXPECT_EQ(kb["g (t.cc:10)"], kh["g (t.cc:50)"]);
  EXPECT_EQ(kb["g (t.cc:12)"], kh["g (t.cc:52)"]);
  EXPECT_EQ(kb["h (t.cc:14)"], kh["h (t.cc:54)"]);
  EXPECT_NE(kb["g (t.cc:10)"], kb["g (t.cc:12)"]) << "two calls of g in f are two nodes";
  EXPECT_EQ(kb["g (t.cc:10)"], "root/fn:f/site:f>g#0");
  EXPECT_EQ(kb["g (t.cc:12)"], "root/fn:f/site:f>g#1");
}

}  // namespace
}  // namespace vprof::testing
