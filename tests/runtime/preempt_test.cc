// Context switches, end to end: two threads busy on one CPU are preempted by
// the kernel, and the runtime writes those stretches as PREEMPTED records
// before each interval's end. Skips (with the reason) where the kernel
// refuses perf_event_open; then the process file must say so.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/read/process_files.h"
#include "analyzer/read/trace_reader.h"
#include "tests/runtime/run_workload.h"
#include "tests/support/temp_dir.h"

using vprof::trace::Kind;

namespace {


}  // namespace

TEST(Preempt, ThreadsSharingACpuRecordTheirInvoluntarySwitches) {
  std::string dir = vprof::testing::fresh_dir("vprof-preempt", "pinned");
  ASSERT_EQ(run_workload(dir, {"preempt", "300"}), 0);
  auto procs = vprof::trace::read_process_files(dir);
  ASSERT_EQ(procs.files, 1u);
  if (!procs.preemption_measured()) {
    EXPECT_TRUE(procs.preemption & VPROF_PREEMPT_REFUSED);
    GTEST_SKIP() << "perf_event_open refused here (see /proc/sys/kernel/perf_event_paranoid)";
  }
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count(vprof::trace::Severity::Error), 0u)
      << (t->first_error() ? t->first_error()->str() : "");
  size_t stretches = 0;
  for (const auto &s : t->threads) {
    int64_t iv_begin = -1, iv_end = -1;
    for (const auto &e : s.events) {
      if (e.kind == Kind::IntervalBegin) iv_begin = e.ts;
      if (e.kind == Kind::IntervalEnd) iv_end = e.ts;
    }
    if (iv_begin < 0) continue;
    ASSERT_GE(iv_end, iv_begin) << s.file;
    int64_t last_in = -1;
    for (const auto &e : s.events) {
      if (e.kind != Kind::Preempted) continue;
      int64_t out = e.release_ts, in = int64_t(e.arg);
      EXPECT_LT(out, in) << s.file;
      EXPECT_LE(in, e.ts + 1000) << s.file << ": a stretch is drained after it ended";
      EXPECT_GE(out, last_in) << s.file << ": stretches are in order and disjoint";
      last_in = in;
      // Drained at the interval's end, before its END record.
      if (out >= iv_begin && in <= iv_end) ++stretches;
    }
  }
  // Two busy threads on one CPU for 300 ms each: the scheduler's slices are
  // a few ms, so each is switched out involuntarily many times.
  EXPECT_GE(stretches, 2u);
}

TEST(Preempt, TurnedOffTheProcessFileSaysNotMeasured) {
  std::string dir = vprof::testing::fresh_dir("vprof-preempt", "off");
  ASSERT_EQ(run_workload(dir, {"preempt", "20"}, {{"VPROF_PREEMPT", "0"}}), 0);
  auto procs = vprof::trace::read_process_files(dir);
  ASSERT_EQ(procs.files, 1u);
  EXPECT_FALSE(procs.preemption_measured());
  EXPECT_TRUE(procs.preemption & VPROF_PREEMPT_REFUSED);
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  for (const auto &s : t->threads)
    for (const auto &e : s.events) EXPECT_NE(e.kind, Kind::Preempted) << s.file;
}

// Recording in windows: a thread's context-switch event
// is open only while it records. The kernel does perf's work at every switch
// of a thread with the event open (~1.5 us a switch here), so between windows
// it is closed, and the stretches inside windows are still recorded.
TEST(Preempt, BetweenWindowsNoSwitchEventIsOpen) {
  std::string full = vprof::testing::fresh_dir("vprof-preempt", "maps-full");
  const int in_full = run_workload(full, {"perfmaps"});
  if (in_full == 0) GTEST_SKIP() << "perf_event_open refused here: no event to close";
  EXPECT_EQ(in_full, 1) << "one thread, one event";
  // Windows of an hour at 1%: the first opens at a random point of 100 hours.
  std::string off = vprof::testing::fresh_dir("vprof-preempt", "maps-off");
  EXPECT_EQ(run_workload(off, {"perfmaps"}, {{"VPROF_SAMPLE", "1"}, {"VPROF_SAMPLE_WINDOW_MS", "3600000"}}), 0);
}

TEST(Preempt, InsideWindowsPreemptionsAreRecordedAndOutsideNone) {
  // Two threads busy on one CPU, 100 intervals of 4 ms each; windows of
  // 20 ms over half the time.
  std::string dir = vprof::testing::fresh_dir("vprof-preempt", "windows");
  ASSERT_EQ(run_workload(dir, {"preemptmany", "100", "4"},
                         {{"VPROF_SAMPLE", "50"}, {"VPROF_SAMPLE_WINDOW_MS", "20"}, {"VPROF_SAMPLE_CAP_MS", "5000"}}),
            0);
  auto procs = vprof::trace::read_process_files(dir);
  if (!procs.preemption_measured()) GTEST_SKIP() << "perf_event_open refused here";
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count(vprof::trace::Severity::Error), 0u);
  size_t inside = 0, windows = 0;
  for (const auto &s : t->threads) {
    // The thread's recording stretches, from its WINDOW records.
    std::vector<std::pair<int64_t, int64_t>> on;
    for (const auto &e : s.events) {
      if (e.kind != Kind::Window) continue;
      const bool rec = VPROF_WINDOW_STATE(e.arg) != VPROF_WINDOW_OFF;
      if (rec && (on.empty() || on.back().second != INT64_MAX)) on.push_back({e.ts, INT64_MAX});
      if (!rec && !on.empty() && on.back().second == INT64_MAX) on.back().second = e.ts;
    }
    windows += on.size();
    for (const auto &e : s.events) {
      if (e.kind != Kind::Preempted) continue;
      bool within = false;
      for (auto [a, b] : on) within |= e.release_ts >= a && int64_t(e.arg) <= b;
      EXPECT_TRUE(within) << s.file << ": a stretch " << e.release_ts << ".." << e.arg << " outside every window";
      inside += within;
    }
  }
  EXPECT_GE(windows, 2u);
  EXPECT_GE(inside, 2u) << "preemptions inside the windows are recorded";
}
