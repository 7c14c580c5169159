// Windowed recording (trace format v6 WINDOW records): an
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

TEST(Windows, AHeavyIntervalStraddlingTheWindowsEndCountsWhole) {
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
TEST(Windows, FramesEndedAndBegunBetweenWindowsArePutRight) {
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
TEST(Windows, NestedWaitsEndedBetweenWindowsPopNoFrame) {
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
TEST(Windows, MorePopsThanFramesAreCounted) {
  TraceBuilder tb;
  auto &t = tb.thread(1);
  t.window(0, ON, 1, true).enter(10, 1).window(50, OFF, 1, true);
  t.window(200, ON, 2, true, 3).enter(200, 2).begin(210, 9).end(260, 9).exit(270, 2);
  auto tl = analyzer::compute_critical_paths(tb.build());
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  EXPECT_EQ(tl.merge.window_pops_unmatched, 2u);
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 2}})), 50);
}


// Found on the sampled demo (`SAMPLE=10 scripts/demo.sh`: ten runs of minidb
// an iteration into one trace, each numbering its intervals from 1): 7
// duplicate_begins, 14 duplicate_ends and 952 reused_ids, and 7 counted
// intervals ignored. Recording in windows leaves one side of an interval
// unrecorded as a rule: one begun in a window's drain ends after its thread
// stopped recording, one begun between windows ends in the next. Neither is
// ambiguous there.
// Process A (pid 100): interval 1 over [110, 120) counted; 2 begun in the
// drain at 210, its end not recorded; 7 begun in the drain at 215, its end
// not recorded, and again in the next window over [520, 560) (a pooled id).
// Process B (pid 200), a later run of the same program: 1 begun between
// windows, ended at 1060; 2 over [1100, 1150) and 3 over [1160, 1190).
// Counted: A's 1 (10 ns) and 7 (40 ns), B's 2 (50 ns) and 3 (30 ns); left
// out: A's 2 and first 7, B's 1 (its begin is in B's header, not here).
TEST(Windows, OneSideOfAnIntervalUnrecordedIsNoDuplicateNorAReuse) {
  TraceBuilder tb;
  auto &a = tb.thread(1, 100);
  a.window(0, OFF, 0).window(100, ON, 1, true).begin(110, 1).end(120, 1);
  a.window(200, DRAIN, 1, true).begin(210, 2).begin(215, 7).window(220, OFF, 1, true);
  a.window(500, ON, 2, true).begin(520, 7).end(560, 7).window(600, DRAIN, 2, true).window(600, OFF, 2, true);
  auto &b = tb.thread(2, 200);
  b.window(1000, OFF, 0).window(1050, ON, 1, true).end(1060, 1);
  b.begin(1100, 2).end(1150, 2).begin(1160, 3).end(1190, 3);
  b.window(1200, DRAIN, 1, true).window(1200, OFF, 1, true);
  analyzer::AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto an = analyze_one(tb.build(), make_names({{1, "f"}}, {}), opt);
  ASSERT_TRUE(an);
  const auto &r = *an->runs.front();
  std::vector<std::pair<uint64_t, int64_t>> rows;
  for (const auto &row : r.paths.rows) rows.push_back({row.id, row.latency_ns});
  EXPECT_EQ(rows, (std::vector<std::pair<uint64_t, int64_t>>{{1, 10}, {7, 40}, {2, 50}, {3, 30}}));
  EXPECT_EQ(r.merge.duplicate_begins, 0u);
  EXPECT_EQ(r.merge.duplicate_ends, 0u);
  EXPECT_EQ(r.merge.reused_ids, 0u) << "A's 7 is left out, and B's ids are another process's";
  EXPECT_EQ(r.merge.intervals_left_out, 2u) << "A's 2 and A's first 7";
  EXPECT_EQ(r.merge.end_without_begin, 0u);
  EXPECT_EQ(r.paths.counters.incomplete_intervals, 0u);
}

// Recorded in full, an id begun again while open stays ambiguous, and one
// reused in the same process is counted as before.
TEST(Windows, RecordedInFullADuplicateBeginIsStillOne) {
  TraceBuilder tb;
  tb.thread(1, 100).begin(10, 1).begin(20, 1).end(30, 1).begin(40, 1).end(50, 1);
  auto tl = analyzer::compute_critical_paths(tb.build());
  EXPECT_EQ(tl.merge.duplicate_begins, 1u);
  EXPECT_EQ(tl.merge.reused_ids, 1u);
  ASSERT_EQ(tl.paths.rows.size(), 2u);
}

// Recorded in full too, runs of one program into one trace: run A (pid 100)
// stopped with interval 1 in flight (its thread's records end at 20); run B
// (pid 200) then begins 1 over [100, 150). B's interval counts (it was
// ignored as a duplicate begin) and A's is incomplete. Two processes at
// once that number their ids alike stay ambiguous: C (pid 300) begins 5 at
// 200 and ends it at 230, D (pid 400) begins 5 at 210 while C still records.
TEST(Windows, AnIntervalLeftOpenByAnEndedProcessIsNotTheNextRunsDuplicate) {
  TraceBuilder tb;
  tb.thread(1, 100).begin(10, 1).enter(12, 1).exit(20, 1);
  tb.thread(2, 200).begin(100, 1).end(150, 1);
  tb.thread(3, 300).begin(200, 5).end(230, 5);
  tb.thread(4, 400).begin(210, 5).end(240, 5);
  const trace::Trace t = tb.build();
  for (size_t epoch : {size_t{1}, size_t{2}, size_t{3}, size_t{1} << 30}) {
    for (unsigned threads : {1u, 2u}) {
      SCOPED_TRACE(::testing::Message() << "epoch_records=" << epoch << " threads=" << threads);
      analyzer::PathOptions o;
      o.epoch_records = epoch;
      o.threads = threads;
      auto tl = analyzer::compute_critical_paths(t, o);
      std::vector<std::pair<uint64_t, int64_t>> rows;
      for (const auto &row : tl.paths.rows) rows.push_back({row.id, row.latency_ns});
      EXPECT_EQ(rows, (std::vector<std::pair<uint64_t, int64_t>>{{1, 50}, {5, 30}}));
      EXPECT_EQ(tl.merge.duplicate_begins, 1u) << "D's, begun while C recorded";
      EXPECT_EQ(tl.merge.duplicate_ends, 1u) << "D's";
      EXPECT_EQ(tl.paths.counters.incomplete_intervals, 1u) << "A's";
    }
  }
}
// A site whose first call entered g(20) and whose second entered h(3), a
// call never closed in the data (the thread's records end inside it, as a
// call whose end falls between windows): no close counted it as not direct,
// and h was folded into the site that names g, so interval 9's 50 ns read as
// g's (the 5% flake of the runtime's Windows.FramesOpen... test). h keeps
// its own node.
TEST(Windows, AFunctionIsNotFoldedIntoASiteThatNamesAnother) {
  TraceBuilder tb;
  tb.thread(1).enter(10, 1).site(20, 5).enter(30, 20).exit(40, 20).site_end(50, 5);
  tb.thread(1).site(60, 5).enter(70, 3).begin(80, 9).end(130, 9);
  auto tl = analyzer::compute_critical_paths(tb.build());
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 1}, {FrameKind::Site, 5}, {Fn, 3}})), 50);
}

}  // namespace
}  // namespace vprof::testing
