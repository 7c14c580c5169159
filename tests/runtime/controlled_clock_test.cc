// The runtime in this process, on a clock the test sets: the runtime's
// sources built with VPROF_CONTROLLED_CLOCK (runtime/clock.cc), so every
// time a probe, an anchor or a pause reads is the test's. What the recorder
// writes through its real paths (the fast path, ring switches, the writer,
// a thread's exit, the wake-up map) is read back by the analyzer's reader
// and compared with exact times, with no workload process and no real clock
// in between.
//
// The runtime reads its settings once, before main(): main() runs the tests
// in a copy of this program started with them (a fresh trace directory,
// 4 KiB rings so that a few hundred records switch rings, no context-switch
// events); the budget's test starts one more copy with a budget of its own.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <vprof/probes.h>
#include <vprof/vprof.h>

#include "analyzer/read/trace_reader.h"

extern "C" void vprof_controlled_clock_set(uint64_t ns);

namespace {

namespace fs = std::filesystem;
using vprof::trace::Event;
using vprof::trace::Kind;

const char *trace_dir() { return std::getenv("VPROF_TRACE_DIR"); }

// Runs `body` on a thread of its own and waits for its exit, which closes
// its trace file; returns that thread's events as the reader decodes them,
// the runtime's own markers (its pauses, the thread's exit) left out.
std::vector<Event> recorded_by(uint32_t &tid, const std::function<void()> &body) {
  std::promise<uint32_t> got;
  std::thread t([&] {
    got.set_value(uint32_t(gettid()));
    body();
  });
  tid = got.get_future().get();
  t.join();
  auto trace = vprof::trace::read_trace_dir(trace_dir());
  EXPECT_TRUE(trace) << trace.error().message;
  std::vector<Event> out;
  if (!trace) return out;
  for (const auto &s : trace->threads)
    if (s.tid == tid) {
      EXPECT_TRUE(s.clean_exit) << s.file;
      EXPECT_EQ(s.dropped_records, 0u) << s.file;
      for (const Event &e : s.events)
        if (e.kind != Kind::Recorder && e.kind != Kind::ThreadExit) out.push_back(e);
    }
  return out;
}

TEST(ControlledClock, EveryRecordCarriesTheTimeItWasTakenAt) {
  uint32_t tid = 0;
  const uint64_t t0 = 2'000'000;
  auto ev = recorded_by(tid, [&] {
    vprof_controlled_clock_set(t0);
    vprof_interval_begin(7);
    vprof_controlled_clock_set(t0 + 100);
    vprof_fn_enter(1);
    vprof_controlled_clock_set(t0 + 150);
    vprof_site_begin(3);
    vprof_controlled_clock_set(t0 + 350);
    vprof_site_end(3);
    vprof_controlled_clock_set(t0 + 380);
    vprof_fn_exit(1);
    vprof_controlled_clock_set(t0 + 400);
    vprof_interval_end(7);
  });
  const std::vector<std::pair<Kind, int64_t>> want = {
      {Kind::IntervalBegin, t0},   {Kind::FuncEnter, t0 + 100}, {Kind::SiteBegin, t0 + 150},
      {Kind::SiteEnd, t0 + 350},   {Kind::FuncExit, t0 + 380},  {Kind::IntervalEnd, t0 + 400}};
  ASSERT_EQ(ev.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(ev[i].kind, want[i].first) << i;
    EXPECT_EQ(ev[i].ts, want[i].second) << i;
  }
  EXPECT_EQ(ev[0].arg, 7u);
  EXPECT_EQ(ev[1].arg, 1u);
  EXPECT_EQ(ev[2].arg, 3u);
}

TEST(ControlledClock, RingSwitchesKeepEveryRecordOnceAndInOrder) {
  // 4 KiB rings hold 254 records: 3 000 pairs switch rings 23 times, the
  // writer appending the full ones while the thread goes on.
  constexpr int kPairs = 3000;
  uint32_t tid = 0;
  const uint64_t t0 = 10'000'000;
  auto ev = recorded_by(tid, [&] {
    for (int i = 0; i < kPairs; ++i) {
      vprof_controlled_clock_set(t0 + uint64_t(i) * 20);
      vprof_fn_enter(uint32_t(i % 50 + 1));
      vprof_controlled_clock_set(t0 + uint64_t(i) * 20 + 10);
      vprof_fn_exit(uint32_t(i % 50 + 1));
    }
  });
  ASSERT_EQ(ev.size(), size_t(2 * kPairs));
  // The full rings went to the file as data chunks: its header, two rings
  // and at least 20 chunks of 4 KiB.
  uintmax_t size = 0;
  for (const auto &f : fs::directory_iterator(trace_dir()))
    if (f.path().filename().string().find("-" + std::to_string(tid) + ".vpt") != std::string::npos)
      size = f.file_size();
  EXPECT_GE(size, uintmax_t(4096) * (1 + 2 + 20));
  for (int i = 0; i < kPairs; ++i) {
    const Event &in = ev[size_t(2 * i)], &out = ev[size_t(2 * i + 1)];
    ASSERT_EQ(in.kind, Kind::FuncEnter) << i;
    ASSERT_EQ(out.kind, Kind::FuncExit) << i;
    ASSERT_EQ(in.ts, int64_t(t0 + uint64_t(i) * 20)) << i;
    ASSERT_EQ(out.ts, int64_t(t0 + uint64_t(i) * 20 + 10)) << i;
    ASSERT_EQ(in.arg, uint64_t(i % 50 + 1)) << i;
  }
}

TEST(ControlledClock, AWaitNamesTheThreadThatSignalledAndWhenItDid) {
  // A waits on a condition variable from t0; B signals it at t0 + 50 us;
  // A's wait ends at t0 + 80 us. The wake-up names B and the signal's time.
  int cond = 0;
  const uint64_t t0 = 50'000'000;
  std::promise<void> waiting, signalled;
  uint32_t b_tid = 0, a_tid = 0;
  std::thread b;
  auto ev = recorded_by(a_tid, [&] {
    b = std::thread([&] {
      b_tid = uint32_t(gettid());
      waiting.get_future().wait();
      vprof_controlled_clock_set(t0 + 50'000);
      vprof_sync_release(&cond, VPROF_SYNC_CONDVAR);
      signalled.set_value();
    });
    vprof_controlled_clock_set(t0);
    vprof_fn_enter(9);
    vprof_sync_wait_begin(&cond, VPROF_SYNC_CONDVAR);
    waiting.set_value();
    signalled.get_future().wait();
    vprof_controlled_clock_set(t0 + 80'000);
    vprof_sync_wait_end(&cond, VPROF_SYNC_CONDVAR, 1);
    vprof_fn_exit(9);
    b.join();
  });
  auto end = std::find_if(ev.begin(), ev.end(), [](const Event &e) { return e.kind == Kind::WaitEnd; });
  ASSERT_NE(end, ev.end());
  EXPECT_EQ(end->ts, int64_t(t0 + 80'000));
  EXPECT_EQ(end->waker_tid, b_tid);
  EXPECT_EQ(end->release_ts, int64_t(t0 + 50'000));
  EXPECT_EQ(end->acquired, 1);
  auto begin = std::find_if(ev.begin(), ev.end(), [](const Event &e) { return e.kind == Kind::WaitBegin; });
  ASSERT_NE(begin, ev.end());
  EXPECT_EQ(begin->ts, int64_t(t0));
}

// The budget is the process's (VPROF_BUFFER_MB), so this test runs in a copy
// of this program of its own, with 1 MiB: 100 000 records through 4 KiB rings
// fill it at about 64 000. What the file keeps and what its header counts as
// dropped are every record the thread wrote, once ("records + dropped is
// every record the program wrote", docs/run.md).
TEST(ControlledClock, PastTheBudgetEveryRecordIsKeptOrCountedDroppedOnce) {
  if (std::getenv("VPROF_BUFFER_MB") == nullptr) {
    const fs::path dir = fs::path(trace_dir()) / "budget";
    fs::create_directories(dir);
    const std::string cmd = "VPROF_BUFFER_MB=1 VPROF_TRACE_DIR='" + dir.string() +
                            "' /proc/" + std::to_string(getpid()) +
                            "/exe --gtest_filter=ControlledClock.PastTheBudget* > '" + dir.string() + ".log' 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << "the copy with a 1 MiB budget failed; its output: " << dir.string() << ".log";
    return;
  }
  constexpr uint64_t kRecords = 100000;
  uint32_t tid = 0;
  std::promise<uint32_t> got;
  std::thread t([&] {
    got.set_value(uint32_t(gettid()));
    for (uint64_t i = 0; i < kRecords / 2; ++i) {
      vprof_controlled_clock_set(20'000'000 + 2 * i);
      vprof_fn_enter(1);
      vprof_controlled_clock_set(20'000'000 + 2 * i + 1);
      vprof_fn_exit(1);
    }
  });
  tid = got.get_future().get();
  t.join();
  auto trace = vprof::trace::read_trace_dir(trace_dir());
  ASSERT_TRUE(trace) << trace.error().message;
  uint64_t kept = 0, dropped = 0;
  for (const auto &s : trace->threads)
    if (s.tid == tid) {
      dropped += s.dropped_records;
      for (const Event &e : s.events) kept += e.kind == Kind::FuncEnter || e.kind == Kind::FuncExit;
    }
  EXPECT_GT(dropped, 0u) << "the budget was not reached";
  EXPECT_GT(kept, kRecords / 2) << "most of the budget holds records";
  EXPECT_EQ(kept + dropped, kRecords) << kept << " kept, " << dropped << " dropped";
}

}  // namespace

int main(int argc, char **argv) {
  if (!trace_dir()) {
    // The runtime read its settings before main(): start the copy that runs
    // the tests with them.
    const fs::path dir = fs::temp_directory_path() / ("vprof-controlled-clock-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    setenv("VPROF_TRACE_DIR", dir.c_str(), 1);
    setenv("VPROF_CHUNK_KB", "4", 1);
    setenv("VPROF_PREEMPT", "0", 1);
    std::vector<char *> args(argv, argv + argc);
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    return 127;
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  fs::remove_all(trace_dir(), ec);
  return rc;
}
