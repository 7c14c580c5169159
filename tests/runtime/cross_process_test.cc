// A wake-up edge across processes. PostgreSQL forks a backend per
// connection and keeps its locks in shared memory; a lock released in one
// backend wakes a waiter in another. Here two processes share a
// PTHREAD_PROCESS_SHARED mutex in MAP_SHARED memory (tests/runtime/workload.cc,
// mode xproc): the parent holds it in function 5 for a varying time, and
// every interval of the child blocks on it. The child's latency varies only
// with the parent's hold: its intervals must blame function 5, in the
// parent's process, through the wake-up edge the ownership map gives.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/read/trace_stream.h"
#include "analyzer/report/perfetto.h"
#include "tests/runtime/run_workload.h"
#include "tests/support/perfetto_schema.h"
#include "tests/support/temp_dir.h"

using vprof::trace::Kind;

TEST(CrossProcess, AWaitInOneProcessBlamesTheHolderInAnother) {
  using namespace vprof::analyzer;
  const int n = 200;
  std::string dir = vprof::testing::fresh_dir("vprof-xproc", "mutex");
  // Every wait kept (a hand-off can take less than VPROF_MIN_WAIT_NS); the
  // releases are the default's: the holder's release time comes from the
  // waiter's WAIT_END, across the two processes.
  ASSERT_EQ(run_workload(dir, {"xproc", std::to_string(n)},
                         {{"VPROF_PREEMPT", "0"}, {"VPROF_MIN_WAIT_NS", "0"}}),
            0);
  auto trace = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(trace.ok()) << trace.error().message;

  // Two processes, one thread each that recorded: the holder (function 5) and
  // the waiter (the intervals).
  const vprof::trace::ThreadStream *holder = nullptr, *waiter = nullptr;
  for (const auto &s : trace->threads)
    for (const auto &e : s.events) {
      if (e.kind == Kind::FuncEnter && e.arg == 5) holder = &s;
      if (e.kind == Kind::IntervalBegin) waiter = &s;
    }
  ASSERT_TRUE(holder && waiter);
  ASSERT_NE(holder->pid, waiter->pid) << "two processes";
  EXPECT_EQ(waiter->ppid, holder->pid) << "the waiter is the holder's forked child";
  // The two processes' anchor pairs put one tick at one time: the child's,
  // taken right after the fork, read 2-4 us late before each pair was the
  // narrowest of several brackets.
  {
    std::map<uint32_t, double> offset;  // pid -> anchor0_ns - anchor0_ticks / rate
    for (const auto &f : std::filesystem::directory_iterator(dir)) {
      if (f.path().extension() != ".vpt") continue;
      vprof_file_header h{};
      std::ifstream(f.path(), std::ios::binary).read(reinterpret_cast<char *>(&h), sizeof h);
      offset[h.pid] = double(h.anchor0_ns) - double(h.anchor0_ticks) / trace->ticks_per_ns;
    }
    ASSERT_EQ(offset.size(), 2u);
    EXPECT_LT(std::abs(offset[waiter->pid] - offset[holder->pid]), 500.0)
        << "the child's clock against its parent's, ns";
  }

  // Every wait that blocked names the holder's thread as its waker.
  size_t waits = 0, named = 0;
  for (const auto &e : waiter->events)
    if (e.kind == Kind::WaitEnd) {
      ++waits;
      named += e.waker_tid == holder->tid;
    }
  EXPECT_EQ(waits, (size_t)n);
  EXPECT_GE(named, (size_t)n * 9 / 10) << "waits resolved to the other process's release";

  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto r = analyze_run(*trace, Names{}, opt, 0);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(std::move(r).value());
  auto a = combine(std::move(runs), opt);
  ASSERT_EQ(a->runs.front()->paths.rows.size(), (size_t)n);
  // The holder worked for no interval: by docs/method.md, "The critical path",
  // the waits stay with the waiter's own function (the tree), and the holder's
  // process and function are the blame.
  ASSERT_FALSE(a->factors.empty());
  ASSERT_FALSE(a->factors.front().functions.empty());
  EXPECT_EQ(a->factors.front().functions.front(), "fn#1");
  ASSERT_FALSE(a->blame.empty()) << "no blame: the wake-up edges were lost";
  double total = 0;
  for (const auto &b : a->blame) total += b.ns;
  const NamedBlame &top = a->blame.front();
  EXPECT_EQ(top.waker_pid, holder->pid) << "the holder's process";
  EXPECT_EQ(top.waker_tid, holder->tid);
  // The function it held the lock in: the top entry at rest; with two CPU
  // hogs beside it the late-read releases (below) once made "(outside)" the
  // top entry (1 run in 12), so fn#5's entries are summed.
  double in_5 = 0;
  for (const auto &b : a->blame)
    if (b.waker_function == "fn#5") in_5 += b.ns;
  EXPECT_GE(in_5, 0.25 * total) << "the function that held the lock";
  // Blame names the function the holder was in at its release, which comes
  // a few ns before the holder leaves function 5. The child's anchor pair
  // once read 2-4 us late against the parent's (copy-on-write faults inside
  // its bracket), and the release, converted in the waiter's clock, fell
  // after the holder's exit: fn#5 got 16% of the blame in a CI run. The
  // release is now converted in the holder's clock (docs/trace-format.md,
  // "Clock"). What the waits waited for is also in the Held parts under the
  // wait: the holder's frames over the whole blocked stretch.
  double held = 0, held_in_5 = 0;
  const RunAnalysis &run = *a->runs.front();
  for (const PathCell &c : run.paths.cells) {
    if (run.trie[c.node].kind != FrameKind::Held) continue;
    held += c.ns;
    if (run.trie[c.node].id == (5 | kHeldFunction)) held_in_5 += c.ns;
  }
  EXPECT_GE(held_in_5, 0.95 * held);
  // What the waiter was blocked, from its own records: how much of it the
  // machine's load leaves to be blocked varies (with two CPU hogs beside it
  // the waiter reaches the lock later: 50-98 ms of the ~260 ms of holds,
  // where a fixed 0.1 s failed 4 runs in 12), but the blocked stretches are
  // Held parts and the holder's blame whatever their length.
  double blocked = 0;
  int64_t began = -1;
  for (const auto &e : waiter->events) {
    if (e.kind == Kind::WaitBegin) began = e.ts;
    if (e.kind == Kind::WaitEnd && began >= 0) {
      blocked += double(e.ts - began);
      began = -1;
    }
  }
  ASSERT_GT(blocked, 0);
  // Blame also counts each wait's wake-up latency, which a loaded machine
  // stretches (ctest -j2: held was 0.8 of it): the holds themselves are what
  // the Held parts must hold.
  EXPECT_GE(held, 0.5 * blocked) << "the blocked stretches are Held parts";
  EXPECT_GE(top.ns, 0.4 * total);
  EXPECT_GE(top.ns, 0.5 * blocked) << "the holder is blamed for the waits";
}

// --perfetto on the same workload, through its trace files as `vprof analyze`
// reads them: a track per thread in each process, named from the trace, and
// the holder's releases flowing to the waiter's wake-ups across the processes.
TEST(CrossProcess, PerfettoExportShowsBothProcessesAndTheWakeUpsBetweenThem) {
  using namespace vprof::analyzer;
  using nlohmann::json;
  std::string dir = vprof::testing::fresh_dir("vprof-xproc", "perfetto");
  ASSERT_EQ(run_workload(dir, {"xproc", "40"}, {{"VPROF_PREEMPT", "0"}}), 0);
  auto stream = vprof::trace::TraceStream::open(dir);
  ASSERT_TRUE(stream);
  const vprof::trace::Trace meta = (*stream)->summary();
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(**stream, Names{}, opt, 0);
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto again = vprof::trace::TraceStream::open(dir);
  std::stringstream out;
  ASSERT_TRUE(write_perfetto((*again)->sources(), meta, **run, choose_intervals((*run)->paths, 5), 1, out).ok());
  vprof::testing::check_schema(out.str());
  json doc = json::parse(out.str());
  std::set<int64_t> processes;
  size_t across = 0, intervals = 0;
  std::map<int64_t, int64_t> flow_pid;  // id -> the s event's pid
  for (const json &e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      processes.insert(e["pid"].get<int64_t>());
      EXPECT_EQ(e["args"]["name"], "runtime_workloa");  // the comm, 15 characters
    }
    if (e["ph"] == "b" && e["cat"] == "interval") ++intervals;
    if (e["ph"] == "s") flow_pid[e["id"]] = e["pid"];
    if (e["ph"] == "f") across += flow_pid.at(e["id"]) != e["pid"].get<int64_t>();
  }
  EXPECT_EQ(processes.size(), 2u);
  EXPECT_EQ(intervals, 10u);  // the 5 slowest and the 5 nearest the median
  EXPECT_GT(across, 0u);
}
