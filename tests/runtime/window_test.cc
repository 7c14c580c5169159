// Windowed recording (runtime/window.h), end to end: a
// parent and its forked child, two threads each, record under VPROF_SAMPLE;
// the analysis counts every interval once (counted or left out), the stacks
// are whole across windows, and the two processes agree on the windows.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "tests/runtime/run_workload.h"
#include "tests/support/temp_dir.h"

using vprof::trace::Kind;

namespace {

std::unique_ptr<vprof::analyzer::Analysis> analyze_dir(const vprof::trace::Trace &t) {
  using namespace vprof::analyzer;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto r = analyze_run(t, Names{}, opt, 0);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return nullptr;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(std::move(r).value());
  return combine(std::move(runs), opt);
}

}  // namespace

TEST(Windows, ForkedProcessesAgreeAndEveryIntervalIsCountedOrLeftOut) {
  // 2 processes x 2 threads x 300 intervals of ~2 x 150 us: ~90 ms a thread.
  // Windows of 4 ms covering 25%: a period of 16 ms, about five windows.
  const uint32_t threads = 2, n = 300;
  const std::string dir = vprof::testing::fresh_dir("vprof-windows", "fork");
  ASSERT_EQ(run_workload(dir, {"windows", std::to_string(threads), std::to_string(n), "150"},
                         {{"VPROF_SAMPLE", "25"}, {"VPROF_SAMPLE_WINDOW_MS", "4"}, {"VPROF_SAMPLE_CAP_MS", "5000"}}),
            0);
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->count(vprof::trace::Severity::Error), 0u);
  EXPECT_EQ(t->count(vprof::trace::Severity::Warning), 0u) << (t->diagnostics.empty() ? "" : t->diagnostics[0].str());

  // Both processes recorded in windows, and a window number means one
  // window: every thread that saw window k on, in either process, saw it
  // before k's drain began (the change its maker wrote).
  std::map<uint32_t, std::set<uint32_t>> seqs_by_pid;
  std::map<uint32_t, int64_t> drained;
  for (const auto &s : t->threads)
    for (const auto &e : s.events)
      if (e.kind == Kind::Window && VPROF_WINDOW_STATE(e.arg) == VPROF_WINDOW_DRAIN && VPROF_WINDOW_MADE(e.arg))
        drained[VPROF_WINDOW_SEQ(e.arg)] = e.ts;
  size_t checked = 0;
  for (const auto &s : t->threads)
    for (const auto &e : s.events) {
      if (e.kind != Kind::Window || VPROF_WINDOW_STATE(e.arg) != VPROF_WINDOW_ON) continue;
      const uint32_t seq = VPROF_WINDOW_SEQ(e.arg);
      seqs_by_pid[s.pid].insert(seq);
      if (drained.count(seq)) {
        EXPECT_LE(e.ts, drained[seq]) << "pid " << s.pid << " saw window " << seq << " on after it drained";
        ++checked;
      }
    }
  EXPECT_GT(checked, 0u);
  ASSERT_EQ(seqs_by_pid.size(), 2u) << "both processes recorded in windows";
  std::set<uint32_t> both;
  for (uint32_t s : seqs_by_pid.begin()->second)
    if (seqs_by_pid.rbegin()->second.count(s)) both.insert(s);
  EXPECT_FALSE(both.empty()) << "a window both processes recorded in";

  auto a = analyze_dir(*t);
  ASSERT_TRUE(a);
  const auto &r = *a->runs.front();
  const auto &w = r.merge_stats.sampling;
  ASSERT_TRUE(w.sampled);
  EXPECT_GE(w.windows, 2u);
  EXPECT_EQ(r.merge.windows_capped, 0u);
  const size_t counted = r.paths.rows.size();
  const uint64_t left_out = vprof::analyzer::intervals_left_out(r);
  EXPECT_GT(counted, 0u);
  EXPECT_EQ(counted + left_out, 2u * threads * n) << counted << " counted, " << left_out << " left out";
  EXPECT_EQ(r.paths.counters.incomplete_intervals, 0u);
  // Whole stacks across windows: nothing popped that was never pushed, no
  // exit without its enter, no frame lost, none left open but the ones a
  // thread was in when its data ended.
  EXPECT_EQ(r.merge.window_pops_unmatched, 0u);
  EXPECT_EQ(r.merge.window_frames_lost, 0u);
  EXPECT_EQ(r.merge.exits_without_enter, 0u);
  EXPECT_EQ(r.merge.missing_exits, 0u);
  // Each counted interval is function 1 > site 2 > function 3, whole: the
  // time outside function 1 is the interval's begin and end probes only.
  double in_fn1 = 0;
  for (const auto &c : a->tree.children)
    if (c.label == "fn#1") in_fn1 = c.share.value_or(0);
  EXPECT_GT(in_fn1, 0.95);
  // The windows covered about the fraction asked (25%, at random times; a
  // window also waits for its intervals to end): between 5% and 60%.
  ASSERT_GT(w.span_ns, 0);
  const double duty = double(w.on_ns) / double(w.span_ns);
  EXPECT_GT(duty, 0.05);
  EXPECT_LT(duty, 0.60);
}

// An interval begun on one thread and ended on another (a request handed
// from an acceptor to a worker) leaves its window's count when it ends: the
// window closes on time instead of draining to its cap (a 10% sample
// recorded 79% of the time).
TEST(Windows, AnIntervalEndedOnAnotherThreadLeavesItsWindow) {
  // 400 intervals of ~200 us: ~80 ms; windows of 2 ms covering 10%.
  const std::string dir = vprof::testing::fresh_dir("vprof-windows", "pass");
  ASSERT_EQ(run_workload(dir, {"passwindows", "400", "200"},
                         {{"VPROF_SAMPLE", "10"}, {"VPROF_SAMPLE_WINDOW_MS", "2"}, {"VPROF_SAMPLE_CAP_MS", "5000"}}),
            0);
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto a = analyze_dir(*t);
  ASSERT_TRUE(a);
  const auto &r = *a->runs.front();
  const auto &w = r.merge_stats.sampling;
  ASSERT_TRUE(w.sampled);
  EXPECT_EQ(r.merge.windows_capped, 0u);
  ASSERT_GT(w.span_ns, 0);
  // The time recorded, drains included (a window that never closes records
  // on to the cap: 97% of this run before).
  const double recorded = double(w.recording_ns) / double(w.span_ns);
  EXPECT_GE(w.windows, 2u) << "recorded " << recorded;
  EXPECT_LT(recorded, 0.5) << "the window stayed open: " << w.windows << " windows";
  EXPECT_GT(r.paths.rows.size(), 1u) << "intervals counted";
}

TEST(Windows, RecordedInFullThereIsNoWindowRecord) {
  const std::string dir = vprof::testing::fresh_dir("vprof-windows", "full");
  ASSERT_EQ(run_workload(dir, {"windows", "1", "20", "10"}), 0);
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  size_t begins = 0;
  for (const auto &s : t->threads)
    for (const auto &e : s.events) {
      EXPECT_NE(e.kind, Kind::Window);
      begins += e.kind == Kind::IntervalBegin;
    }
  EXPECT_EQ(begins, 40u) << "every interval of both processes";
  auto a = analyze_dir(*t);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->runs.front()->merge_stats.sampling.sampled);
  EXPECT_EQ(a->runs.front()->paths.rows.size(), 40u);
}

// A wait that began between windows (its probe stops at the inline test:
// no runtime call, nothing counted or written; its begin is written when it
// ends, trace format 8) and ends in the next window names the
// release in that window that ended it: in a window every release goes to
// the ownership map (recorder.h, Process::release_if_waited). A release
// written only when a wait was counted would miss it (measured, and undone:
// docs/performance.md). The waiter is a forked child, as a PostgreSQL
// backend; every wait of its that the trace has ended by the parent's
// release.
TEST(Windows, AWaitBegunBetweenWindowsNamesItsWakerInTheNextOne) {
  const std::string dir = vprof::testing::fresh_dir("vprof-windows", "straddle");
  ASSERT_EQ(run_workload(dir, {"straddle", "6"},
                         {{"VPROF_SAMPLE", "20"}, {"VPROF_SAMPLE_WINDOW_MS", "2"}, {"VPROF_SAMPLE_CAP_MS", "5000"},
                          {"VPROF_MIN_WAIT_NS", "1000"}}),
            0)
      << "exit 4: no wait began between windows and ended in one";
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const vprof::trace::ThreadStream *releaser = nullptr, *waiter = nullptr;
  for (const auto &s : t->threads)
    for (const auto &e : s.events) {
      if (e.kind == Kind::IntervalBegin) releaser = &s;
      if (e.kind == Kind::WaitEnd) waiter = &s;
    }
  ASSERT_NE(releaser, nullptr);
  ASSERT_NE(waiter, nullptr);
  ASSERT_NE(releaser->pid, waiter->pid);
  size_t ends = 0;
  for (const auto &e : waiter->events)
    if (e.kind == Kind::WaitEnd) {
      ++ends;
      EXPECT_EQ(e.waker_tid, releaser->tid) << "wait end " << ends << " at " << e.ts;
    }
  EXPECT_GE(ends, 1u);
}

// Found on PostgreSQL at 10%: an LWLock wait around its semaphore's wait,
// both begun between windows, the inner one ended first in the next window.
// Each gets its WAIT_BEGIN when it ends (nothing recorded the begins); the
// outer one's came at the window's opening, before the inner one's end
// already written: time went back on the thread, which the reader clamps
// and reports. Now it comes at the inner one's end: records in time order,
// both waits named by their objects.
TEST(Windows, NestedWaitsBegunBetweenWindowsAreWrittenInTimeOrder) {
  const std::string dir = vprof::testing::fresh_dir("vprof-windows", "nestedwaits");
  ASSERT_EQ(run_workload(dir, {"nestedwaits", "5"},
                         {{"VPROF_SAMPLE", "20"}, {"VPROF_SAMPLE_WINDOW_MS", "2"}, {"VPROF_SAMPLE_CAP_MS", "5000"},
                          {"VPROF_MIN_WAIT_NS", "0"}, {"VPROF_PREEMPT", "0"}}),
            0)
      << "exit 4: no round's waits began between windows";
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->count(vprof::trace::Severity::Warning), 0u) << (t->diagnostics.empty() ? "" : t->diagnostics[0].str());
  EXPECT_EQ(t->count(vprof::trace::Severity::Error), 0u);
  for (const auto &l : t->losses) EXPECT_EQ(l.clamped, 0u) << l.file;
  std::set<uint8_t> roles;
  for (const auto &s : t->threads)
    for (const auto &e : s.events)
      if (e.kind == Kind::WaitBegin) roles.insert(e.role);
  EXPECT_EQ(roles, (std::set<uint8_t>{VPROF_SYNC_MUTEX, VPROF_SYNC_SEMAPHORE})) << "both waits named";
}

// Between windows a probe does nothing (probes.h, vprof_records), and a
// thread resumes recording with its stack unknown: the reader rebuilds it
// from the exits that follow (analyzer/read/open_frames.h). Windows that
// open and close deep in a recursion (a level is two frames; up to 80 of
// them, more than the 64 the shadow stack kept before trace format 8) must
// leave whole stacks: no exit without its enter, and every counted
// interval's function 3 under every level of the recursion. Every wait is on
// one lock: the waits begun between windows, whose begin is written when
// they end, name it as the ones written while recording do.
TEST(Windows, FramesOpenWhenAWindowOpensAreRebuiltFromTheirExits) {
  for (auto [least, depth] : {std::pair{0u, 30u}, std::pair{40u, 40u}}) {
    const uint32_t n = 400;
    const std::string dir = vprof::testing::fresh_dir("vprof-windows", "deep" + std::to_string(depth));
    ASSERT_EQ(run_workload(dir, {"deepwindows", std::to_string(n), std::to_string(least), std::to_string(depth), "100"},
                           {{"VPROF_SAMPLE", "25"}, {"VPROF_SAMPLE_WINDOW_MS", "2"}, {"VPROF_SAMPLE_CAP_MS", "5000"}}),
              0);
    auto t = vprof::trace::read_trace_dir(dir);
    ASSERT_TRUE(t.ok()) << t.error().message;
    auto a = analyze_dir(*t);
    ASSERT_TRUE(a);
    const auto &r = *a->runs.front();
    ASSERT_TRUE(r.merge_stats.sampling.sampled);
    EXPECT_GE(r.merge_stats.sampling.windows, 2u) << depth;
    const size_t counted = r.paths.rows.size();
    EXPECT_GT(counted, 0u) << depth;
    EXPECT_EQ(counted + vprof::analyzer::intervals_left_out(r), n) << depth;
    std::set<uint64_t> wait_args;
    size_t waits = 0;
    for (const auto &th : t->threads)
      for (const auto &e : th.events)
        if (e.kind == Kind::WaitBegin) wait_args.insert(e.arg), ++waits;
    EXPECT_GT(waits, 0u) << depth;
    EXPECT_EQ(wait_args.size(), 1u) << depth << ": one lock, one arg";
    EXPECT_EQ(r.merge.window_frames_lost, 0u) << depth;
    EXPECT_EQ(r.merge.window_pops_unmatched, 0u) << depth;
    EXPECT_EQ(r.merge.exits_without_enter, 0u) << depth;
    EXPECT_EQ(r.merge.unmatched_wait_ends, 0u) << depth;
    // Each counted interval's function 3 is under as many calls of site 21
    // as its level of the recursion (workload.cc: interval i at least + (i -
    // 1) mod (depth - least + 1)): each rebuilt from its exit in the window.
    // The tree shows a recursion StackTrie::kRecursionShown deep (deeper
    // levels fold into the deepest shown): the levels seen are at most that.
    size_t whole = 0;
    for (size_t row = 0; row < counted; ++row) {
      const uint64_t want = std::min<uint64_t>(least + (r.paths.rows[row].id - 1) % (depth - least + 1),
                                               vprof::analyzer::StackTrie::kRecursionShown);
      uint32_t levels = 0;
      bool has_fn3 = false;
      for (const auto *c = r.paths.row_begin(row); c != r.paths.row_end(row); ++c) {
        // Function 3, or the call of it folded into the site that calls
        // it (the deepest level's site never calls anything else).
        const auto &leaf = r.trie[c->node];
        using vprof::analyzer::FrameKind;
        if (!(leaf.kind == FrameKind::Function && leaf.id == 3) &&
            !(leaf.kind == FrameKind::Site && leaf.id == 21 && leaf.callee_fn == 3))
          continue;
        has_fn3 = true;
        for (uint32_t n = c->node; n != 0; n = r.trie[n].parent)
          levels += r.trie[n].kind == FrameKind::Site && r.trie[n].id == 21;
      }
      whole += has_fn3 && levels == want;
    }
    EXPECT_EQ(whole, counted) << depth << ": intervals under the whole recursion";
  }
}

// `runtime_workload signalwindows N 50 [probes]`: N intervals of 50 us while
// a SIGALRM every 20 us runs a probe pair in its handler (PostgreSQL's
// SIGUSR1 and SIGALRM handlers run instrumented code), under 1 ms windows at
// 50% in 4 KiB chunks (the ring fills every few ms, and a handler's probe
// that meets a full ring drains the switches: recorder.cc). Checks the run
// whole and in time order: no damage, no clamped time, every interval
// counted or left out. A handler's probe that lands while its thread writes
// a record is dropped and counted (probes.h); returns how many were.
static uint64_t expect_signal_run_whole(const std::string &dir, uint32_t n, bool probes) {
  std::vector<std::string> args{"signalwindows", std::to_string(n), "50"};
  if (probes) args.push_back("probes");
  EXPECT_EQ(run_workload(dir, args,
                         {{"VPROF_SAMPLE", "50"},
                          {"VPROF_SAMPLE_WINDOW_MS", "1"},
                          {"VPROF_SAMPLE_CAP_MS", "5000"},
                          {"VPROF_CHUNK_KB", "4"}}),
            0);
  auto t = vprof::trace::read_trace_dir(dir);
  EXPECT_TRUE(t.ok()) << t.error().message;
  if (!t.ok()) return 0;
  auto a = analyze_dir(*t);
  EXPECT_TRUE(a);
  if (!a) return 0;
  const auto &r = *a->runs.front();
  EXPECT_GE(r.merge_stats.sampling.windows, 2u) << dir;
  EXPECT_EQ(vprof::analyzer::data_lost(r).clamped, 0u) << dir;
  EXPECT_FALSE(vprof::analyzer::data_lost(r).any()) << dir;
  EXPECT_EQ(r.paths.rows.size() + vprof::analyzer::intervals_left_out(r), n)
      << dir << ": incomplete " << r.paths.counters.incomplete_intervals << ", dropped " << r.read.dropped_records;
  return r.read.dropped_records;
}

// A signal handler's probes while windows open and close. Run a few times:
// each race is a matter of where each signal lands.
// - A PostgreSQL backend at 10% died in switches_drain: its handler's probe
//   drained the context-switch ring its thread had just unmapped.
// - A handler's look at the window parked the ring's end while its thread
//   was about to switch rings; the switch left the end pointing into the
//   other ring, later records went past the ring, and the file lost records
//   or a chunk's tail and a window's intervals (3 runs of 30 beside a busy
//   loop on each core).
// - A record whose time was read before a handler's probe recorded was
//   written after it (a window's, the API's): the reader clamped 94-313
//   records a run, and PostgreSQL's windowed runs warned of it.
TEST(Windows, ASignalHandlersProbesWhileTheSwitchRingOpensAndClosesAreSafeAndInTimeOrder) {
  for (int round = 0; round < 3; ++round)
    expect_signal_run_whole(vprof::testing::fresh_dir("vprof-windows", "signals" + std::to_string(round)), 3000,
                            false);
}

// The same beside the thread's own probes (a function and a call site around
// each clock read of its spin): a handler's probe lands between a probe's
// test and its record, or inside it. A probe reads its clock after its
// flag, so a handler's records come before that time or are dropped: the
// reader clamped 15 000-20 000 records a run when the clock came first.
TEST(Windows, ASignalHandlersProbesAmongItsThreadsProbesKeepTimeInOrder) {
  EXPECT_GT(expect_signal_run_whole(vprof::testing::fresh_dir("vprof-windows", "signalprobes"), 1000, true), 0u)
      << "no handler's probe landed inside one of the thread's";
}

// An instrumented program run without a trace directory: its probes stop
// inline (vprof_rt_idle) and no thread gets a state (workload.cc, "idle").
TEST(Windows, AProcessThatDoesNotRecordGivesNoThreadAState) {
  const std::string dir = vprof::testing::fresh_dir("vprof-windows", "idle");
  EXPECT_EQ(run_workload(dir, {"idle"}, {{"VPROF_TRACE_DIR", ""}}), 0);
}
