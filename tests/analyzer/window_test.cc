// Windowed recording (issue 28, part 1; trace format v6 WINDOW records): an
// interval counts when it begins in a window's ON part, whatever its length;
// the frames a thread ended and began while nothing recorded are put right
// when recording resumes, as traces up to format 7 say them (`pops` and the
// replayed enters; format 8's are rebuilt by the reader:
// tests/reader/open_frames_test.cc). Every number is worked out above its test.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/pipeline/analyze.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using analyzer::StackTrie;
constexpr auto Fn = FrameKind::Function;
constexpr uint32_t OFF = VPROF_WINDOW_OFF, ON = VPROF_WINDOW_ON, DRAIN = VPROF_WINDOW_DRAIN;

double sample_variance(const std::vector<double> &x) {
  double m = 0, v = 0;
  for (double a : x) m += a;
  m /= double(x.size());
  for (double a : x) v += (a - m) * (a - m);
  return v / double(x.size() - 1);
}

// Window 1 is ON over [100, 200), drains until its counted intervals end
// (1130), window 2 is ON over [2000, 2100). Thread 1's intervals: 1 over
// [110, 120) (10 ns), 2 over [130, 1130) (1000 ns: it straddles the window's
// end at 200), 4 over [2010, 2030) (20 ns). Thread 2 begins interval 3 at 300,
// in the drain: left out; and ends interval 5, begun while nothing recorded.
// Counted: {10, 1000, 20}. Counting by end time (1 and 4 only) or cutting at
// the window's end (2 as 70 ns) would take the heavy interval's weight out
// of Var(L): by hand, 323 433.3 ns² here, 50 and 1 033.3 those ways.
TraceBuilder straddle() {
  TraceBuilder tb;
  auto &a = tb.thread(1);
  a.window(0, OFF, 0).window(100, ON, 1, true);
  a.begin(110, 1).enter(110, 1).exit(120, 1).end(120, 1);
  a.begin(130, 2).enter(130, 1).window(200, DRAIN, 1, true).exit(1130, 1).end(1130, 2);
  a.window(1130, OFF, 1, true);
  a.window(2000, ON, 2, true).begin(2010, 4).enter(2010, 1).exit(2030, 1).end(2030, 4);
  a.window(2100, DRAIN, 2, true).window(2100, OFF, 2, true);
  auto &b = tb.thread(2);
  b.window(0, OFF, 0).window(200, DRAIN, 1).begin(300, 3).enter(300, 1).exit(310, 1).end(310, 3);
  b.window(1130, OFF, 1).window(2000, ON, 2).end(2005, 5);
  return tb;
}

TEST(Windows, Issue28_AHeavyIntervalStraddlingTheWindowsEndCountsWhole) {
  TraceBuilder tb = straddle();
  analyzer::AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto a = analyze_one(tb.build(), make_names({{1, "f"}}, {}), opt);
  ASSERT_TRUE(a);
  const auto &r = *a->runs.front();
  ASSERT_EQ(r.paths.rows.size(), 3u);
  std::vector<uint64_t> ids;
  for (const auto &row : r.paths.rows) ids.push_back(row.id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2, 4}));
  EXPECT_NEAR(r.latency.variance_ns2, sample_variance({10, 1000, 20}), 1e-6);
  EXPECT_NEAR(r.latency.variance_ns2, 323433.333333, 1e-3);
  EXPECT_GT(r.latency.variance_ns2, 100 * sample_variance({10, 70, 20})) << "cut at the window's end";
  EXPECT_EQ(r.merge.intervals_left_out, 1u) << "interval 3, begun in the drain";
  EXPECT_EQ(r.merge.end_without_begin, 0u) << "interval 5's begin came while nothing recorded";
  EXPECT_EQ(r.paths.counters.incomplete_intervals, 0u);
  const analyzer::Sampling &w = r.merge_stats.sampling;
  EXPECT_TRUE(w.sampled);
  EXPECT_EQ(w.windows, 2u);
  EXPECT_EQ(r.merge.windows_capped, 0u);
  EXPECT_EQ(w.on_ns, 100 + 100);
  EXPECT_EQ(w.recording_ns, (1130 - 100) + (2100 - 2000));
  EXPECT_EQ(w.span_ns, 2100);
}

// Thread 1 is in f(1) and, inside it, at call site 5 when the window closes
// at 50; while nothing records, both end (pops 2), a wait it was in too in
// the second case, and g(2) begins: recording resumes at 200 with g entered
// at 200. Interval 9 over [210, 260) is all g's: 50 ns at root > g, nothing
// under f.
TEST(Windows, Issue28_FramesEndedAndBegunBetweenWindowsArePutRight) {
  for (bool waiting : {false, true}) {
    TraceBuilder tb;
    auto &t = tb.thread(1);
    t.window(0, ON, 1, true).enter(10, 1).site(20, 5);
    if (waiting) t.wait(30, 0x77);
    t.window(50, OFF, 1, true);
    t.window(200, ON, 2, true, waiting ? 3 : 2).enter(200, 2);
    t.begin(210, 9).end(260, 9).exit(270, 2);
    auto tl = analyzer::compute_critical_paths(tb.build());
    ASSERT_EQ(tl.paths.rows.size(), 1u);
    EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 2}})), 50) << (waiting ? "waiting" : "");
    EXPECT_EQ(tl.merge.window_pops_unmatched, 0u);
    EXPECT_EQ(tl.merge.exits_without_enter, 0u);
    EXPECT_EQ(tl.merge.missing_exits, 0u);
    EXPECT_EQ(tl.merge.unmatched_wait_ends, 0u);
    EXPECT_EQ(tl.merge.nested_waits, 0u);
  }
}

// Found on PostgreSQL (an LWLock wait holds the semaphore's wait inside it):
// f(1) > site 5 > a wait > a nested wait when the window closes; while off
// both waits end (pops 2), then g(2) begins. Both pops are the waits: the
// site and f stay open, g goes on top of them, and nothing is unmatched
// (before, the second pop closed the site: 1 unmatched on PostgreSQL).
TEST(Windows, Issue28_NestedWaitsEndedBetweenWindowsPopNoFrame) {
  TraceBuilder tb;
  auto &t = tb.thread(1);
  t.window(0, ON, 1, true).enter(10, 1).site(20, 5).wait(30, 0x77).wait(35, 0x78);
  t.window(50, OFF, 1, true);
  t.window(200, ON, 2, true, 2).enter(200, 2);
  t.begin(210, 9).end(260, 9).exit(270, 2).site_end(280, 5).exit(290, 1);
  auto tl = analyzer::compute_critical_paths(tb.build());
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  // g entered directly at the site: its call, folded into the site's node.
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 1}, {FrameKind::Site, 5}})), 50);
  EXPECT_EQ(tl.merge.window_pops_unmatched, 0u);
  EXPECT_EQ(tl.merge.exits_without_enter, 0u);
  EXPECT_EQ(tl.merge.missing_exits, 0u);
  EXPECT_EQ(tl.merge.unmatched_wait_ends, 0u);
}

// More frames ended between windows than the records began (a thread whose
// earlier records were lost): counted, and the stack is emptied.
TEST(Windows, Issue28_MorePopsThanFramesAreCounted) {
  TraceBuilder tb;
  auto &t = tb.thread(1);
  t.window(0, ON, 1, true).enter(10, 1).window(50, OFF, 1, true);
  t.window(200, ON, 2, true, 3).enter(200, 2).begin(210, 9).end(260, 9).exit(270, 2);
  auto tl = analyzer::compute_critical_paths(tb.build());
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  EXPECT_EQ(tl.merge.window_pops_unmatched, 2u);
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 2}})), 50);
}

}  // namespace
}  // namespace vprof::testing
