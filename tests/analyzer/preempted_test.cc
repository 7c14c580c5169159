// Preemption (docs/method.md, "The variance tree"): involuntary off-CPU time on
// the critical path goes to a (preempted) leaf under the node the thread was
// in, and that node's own leaf loses exactly those ns. Every number is worked
// out above its test.
#include <gtest/gtest.h>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using analyzer::StackTrie;
constexpr auto Fn = FrameKind::Function;
constexpr auto Site = FrameKind::Site;
constexpr auto Pre = FrameKind::Preempted;

TEST(Preempted, OffCpuTimeInABodyIsItsOwnLeafUnderTheFunction) {
  // F(1) over [5, 35); switched out involuntarily over [12, 18), drained at
  // the interval's end (40): F's body 30 - 6 = 24, F > (preempted) 6, outside 10.
  TraceBuilder tb;
  auto &t = tb.thread(1).begin(0, 9).enter(5, 1).exit(35, 1);
  t.preempted(40, 12, 18);
  t.end(40, 9);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 10);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 24);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Pre, 0}})), 6);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Preempted, AStretchAcrossAStackChangeSplitsAtIt) {
  // F(1) over [5, 35) calls G(2) through site 1 over [10, 20); preempted over
  // [8, 14): 2 ns in F's body, 4 in G. F body 30 - 10 - 2 = 18, G 10 - 4 = 6.
  TraceBuilder tb;
  auto &t = tb.thread(1).begin(0, 9).enter(5, 1).call(10, 20, 1, 2).exit(35, 1);
  t.preempted(40, 8, 14);
  t.end(40, 9);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 18);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Pre, 0}})), 2);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 6);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Pre, 0}})), 4);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 10);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Preempted, OnlyTheStretchInsideTheIntervalCounts) {
  // Preempted over [30, 50), the interval is [0, 40): 10 ns in F's (preempted)
  // leaf, F's body [5, 40) less those: 25; outside [0, 5).
  TraceBuilder tb;
  auto &t = tb.thread(1).begin(0, 9).enter(5, 1);
  t.end(40, 9);
  t.preempted(60, 30, 50);
  t.exit(70, 1);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 25);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Pre, 0}})), 10);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 5);
}

TEST(Preempted, NoPreemptionNoLeaf) {
  // Without PREEMPTED records (voluntary switches are never written) the
  // trie has no (preempted) node and F keeps all its time.
  TraceBuilder tb;
  tb.thread(1).begin(0, 9).enter(5, 1).exit(35, 1).end(40, 9);
  auto tl = analyzer::compute_critical_paths(tb.build());
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 1}})), 30);
  for (size_t n = 0; n < tl.trie.size(); ++n) EXPECT_NE(tl.trie[uint32_t(n)].kind, Pre);
}

}  // namespace
}  // namespace vprof::testing
