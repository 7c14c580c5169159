// --perfetto (analyzer/report/perfetto.h): the export against the Chrome
// Trace Event format's rules as Perfetto's JSON importer applies them (a
// schema test), and its content on a trace whose answer is known.
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_stream.h"
#include "analyzer/report/perfetto.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"
#include "tests/support/perfetto_schema.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace vprof::testing {
namespace {

using namespace analyzer;
using nlohmann::json;

// Server::handle (thread 1) waits for a lock that thread 2 holds while it
// works for no interval (blame, not the path; in odd intervals thread 2
// releases it outside instrumented code), then hands a task to thread
// 3 and waits for its signal: the path goes through the queue to thread 3
// (a created-by edge) and back (a wake-up edge). Hold and work times vary.
constexpr int64_t kStart = 5000;  // the trace's first timestamp
const int64_t kHold[] = {50, 10, 80, 20, 40, 30, 60, 15, 25, 70};
const int64_t kWork[] = {30, 90, 10, 60, 20, 40, 50, 35, 45, 5};

TraceBuilder server_trace() {
  TraceBuilder tb;
  uint32_t type = tb.label("Query"), client = tb.label("alice");
  for (int i = 0; i < 10; ++i) {
    const int64_t t = kStart + i * 10000, h = kHold[i], w = kWork[i];
    const uint64_t id = uint64_t(i + 1), task = 0x100 + uint64_t(i), sig = 0x20 + uint64_t(i);
    auto &srv = tb.thread(1, 7);
    srv.begin(t, id, type, client).enter(t, 1).site(t + 10, 1).wait(t + 10, 0x10)
        .wait_end(t + 10 + h, 0x10, 2, t + 9 + h).site_end(t + 11 + h, 1)
        .enqueue(t + 20 + h, task).site(t + 21 + h, 3).wait(t + 21 + h, sig)
        .wait_end(t + 35 + h + w, sig, 3, t + 31 + h + w).site_end(t + 36 + h + w, 3)
        .call(t + 40 + h + w, t + 45 + h + w, 2, 3).exit(t + 46 + h + w, 1).end(t + 46 + h + w, id);
    // In odd intervals the holder releases outside any instrumented function.
    if (i % 2) tb.thread(2, 7).release(t + 9 + h, 0x10);
    else tb.thread(2, 7).enter(t + 1, 4).release(t + 9 + h, 0x10).exit(t + 12 + h, 4);
    tb.thread(3, 7).dequeue(t + 30 + h, task).join(t + 30 + h, id).enter(t + 30 + h, 5)
        .release(t + 31 + h + w, sig).exit(t + 32 + h + w, 5).leave(t + 33 + h + w);
  }
  return tb;
}

Names server_names() {
  return make_names({{1, "Server::handle"}, {3, "Log::append"}, {4, "Holder::work"}, {5, "Worker::run"}},
                    {{1, 1, "Lock::acquire", 40}, {2, 1, "Log::append", 41}, {3, 1, "Queue::wait", 42}});
}

struct Exported {
  std::unique_ptr<RunAnalysis> run;
  std::vector<ChosenInterval> chosen;
  json doc;
  std::string text;
};

Exported export_trace(const trace::Trace &t, size_t n) {
  Exported x;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  x.run = analyze_run(t, server_names(), opt, 0).value();
  x.chosen = choose_intervals(x.run->paths, n);
  std::vector<std::unique_ptr<trace::VectorSource>> owned;
  std::vector<trace::EventSource *> sources;
  for (const trace::ThreadStream &s : t.threads) {
    owned.push_back(std::make_unique<trace::VectorSource>(s));
    sources.push_back(owned.back().get());
  }
  std::stringstream ss;
  EXPECT_TRUE(write_perfetto(sources, t, *x.run, x.chosen, 1, ss).ok());
  x.text = ss.str();
  x.doc = json::parse(x.text);
  return x;
}

int64_t latency(int i) { return 46 + kHold[i] + kWork[i]; }

TEST(Perfetto, ChoosesTheSlowestAndThoseNearestTheMedian) {
  auto x = export_trace(server_trace().build(), 3);
  // Latencies 46 + hold + work: 126 146 136 126 106 116 156 96 116 121 for
  // ids 1..10. Slowest: 7 (156), 2 (146), 3 (136). The rest sorted: 96 106
  // 116 116 121 126 126 136 146 156; p50 by nearest rank is the 5th, 121;
  // nearest it among the rest: 10 (121, 0 away), then 1 and 4 (126, 5) ahead
  // of 6 and 9 (116, 5) by id; listed by latency.
  ASSERT_EQ(x.chosen.size(), 6u);
  std::vector<uint64_t> ids;
  for (const auto &c : x.chosen) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{7, 2, 3, 10, 1, 4}));
  EXPECT_EQ(x.chosen[0].slowest_rank, 1);
  EXPECT_EQ(x.chosen[3].slowest_rank, 0);
  EXPECT_EQ(x.chosen[0].latency_ns, latency(6));
  // Fewer intervals than asked: all of them, each once.
  EXPECT_EQ(choose_intervals(x.run->paths, 20).size(), 10u);
}

TEST(Perfetto, ExportFollowsTheFormatsRules) {
  auto x = export_trace(server_trace().build(), 3);
  check_schema(x.text);
  EXPECT_GT(x.doc["traceEvents"].size(), 50u);
}

TEST(Perfetto, ShowsTheIntervalsTheirPathsAndEdges) {
  auto x = export_trace(server_trace().build(), 1);  // the slowest (id 7) and the median one (id 10)
  const json &ev = x.doc["traceEvents"];
  auto find = [&](auto pred) {
    std::vector<const json *> out;
    for (const json &e : ev)
      if (pred(e)) out.push_back(&e);
    return out;
  };
  // The interval as an async slice, in us from the trace's first timestamp.
  auto begins = find([](const json &e) { return e["ph"] == "b" && e["cat"] == "interval"; });
  ASSERT_EQ(begins.size(), 2u);
  const json &b = *begins[0];
  EXPECT_EQ(b["name"], "interval 7 (slowest #1)");
  EXPECT_EQ(ns(b["ts"]), 6 * 10000);  // began at kStart + 6 * 10000
  EXPECT_EQ(b["args"]["latency_ns"], latency(6));
  EXPECT_EQ(b["args"]["type"], "Query");
  EXPECT_EQ(b["args"]["client"], "alice");
  EXPECT_EQ(b["tid"], 1);
  EXPECT_EQ((*begins[1])["name"], "interval 10 (median)");
  // Its critical path: thread 1, the queue, thread 3, thread 1 again.
  std::vector<std::string> on;
  for (const json *e : find([&](const json &e) {
         return e["ph"] == "b" && e["cat"] == "critical" && e["id"] == b["id"];
       }))
    on.push_back((*e)["args"]["on"]);
  EXPECT_EQ(on, (std::vector<std::string>{"tid 1", "(queue wait)", "tid 3", "tid 1"}));
  // Frames: thread 3's Worker::run in interval 7 is on the path; the lock
  // holder's Holder::work (thread 2, no interval) is not.
  const int64_t t7 = 6 * 10000;
  auto worker = find([&](const json &e) {
    return e["ph"] == "X" && e["name"] == "Worker::run" && ns(e["ts"]) > t7 && ns(e["ts"]) < t7 + 10000;
  });
  ASSERT_EQ(worker.size(), 1u);
  EXPECT_EQ((*worker[0])["cat"], "function,critical");
  EXPECT_EQ((*worker[0])["tid"], 3);
  EXPECT_EQ(ns((*worker[0])["dur"]), kWork[6] + 2);
  EXPECT_EQ((*worker[0])["args"]["critical_ns"], kWork[6] + 1);  // until its release
  auto holder = find([](const json &e) { return e["ph"] == "X" && e["name"] == "Holder::work"; });
  ASSERT_FALSE(holder.empty());
  for (const json *h : holder) EXPECT_EQ((*h)["cat"], "function");
  // Call sites nest inside their functions, the wait inside its call site.
  auto blocked = find([&](const json &e) {
    return e["ph"] == "X" && e["name"] == "blocked" && e["tid"] == 1 && ns(e["ts"]) == t7 + 10;
  });
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ((*blocked[0])["args"]["waker_tid"], 2);
  EXPECT_EQ(ns((*blocked[0])["dur"]), kHold[6]);
  EXPECT_EQ(find([](const json &e) { return e["ph"] == "X" && e["name"] == "Lock::acquire (t.cc:40)"; })
                .size(),
            2u);
  // Edges of interval 7: the holder's release (not on the path), the
  // enqueue to the worker's dequeue and the worker's signal (both on it).
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> flows;  // name -> (tid, ts)
  for (const json &e : ev)
    if ((e["ph"] == "s" || e["ph"] == "f") && ns(e["ts"]) >= t7 && ns(e["ts"]) < t7 + 10000)
      flows[e["name"]].push_back({e["tid"], ns(e["ts"])});
  const int64_t h = kHold[6], w = kWork[6];
  using P = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(flows["wake-up"], (P{{2, t7 + 9 + h}, {1, t7 + 10 + h}}));
  EXPECT_EQ(flows["created-by (critical path)"], (P{{1, t7 + 20 + h}, {3, t7 + 30 + h}}));
  EXPECT_EQ(flows["wake-up (critical path)"], (P{{3, t7 + 31 + h + w}, {1, t7 + 35 + h + w}}));
  // Interval 10's lock was released outside instrumented code: the flow
  // starts at a zero-length "release" slice, the only slice of thread 2 there.
  const int64_t t10 = 9 * 10000;
  auto t2 = find([&](const json &e) {
    return e["tid"] == 2 && e["ph"] != "M" && ns(e["ts"]) >= t10 && ns(e["ts"]) < t10 + 10000;
  });
  ASSERT_EQ(t2.size(), 2u);
  EXPECT_EQ((*t2[0])["name"], "release");
  EXPECT_EQ(ns((*t2[0])["dur"]), 0);
  EXPECT_EQ(ns((*t2[0])["ts"]), t10 + 9 + kHold[9]);
  EXPECT_EQ((*t2[1])["ph"], "s");
  // Names from the trace, or the tid.
  auto names = find([](const json &e) { return e["ph"] == "M" && e["name"] == "thread_name"; });
  EXPECT_EQ(names.size(), 3u);
}

TEST(Perfetto, OverlappingWindowsStayNestedThroughTraceFiles) {
  // Two threads serve intervals that overlap in time, so the chosen windows
  // overlap: the slices of one thread must still nest. Written as trace
  // files and streamed, as `vprof analyze --perfetto` reads them.
  const std::string dir = fresh_dir("vprof-perfetto", "files");
  {
    SynthThread a(dir, 1, 11), b(dir, 1, 12);
    for (uint64_t i = 0; i < 12; ++i) {
      uint64_t t = 1000 + i * 100;
      SynthThread &th = i % 2 ? b : a;
      th.interval_begin(t, i + 1, "Get", i % 3 ? "c1" : "c2");
      th.fn_enter(t + 1, 1);
      th.site_begin(t + 2, 2);
      th.fn_enter(t + 2, 3);
      th.fn_exit(t + 50 + 13 * (i % 5), 3);
      th.site_end(t + 50 + 13 * (i % 5), 2);
      th.fn_exit(t + 160 + 7 * i, 1);
      th.interval_end(t + 160 + 7 * i, i + 1);
    }
    a.close();
    b.close();
  }
  auto stream = trace::TraceStream::open(dir);
  ASSERT_TRUE(stream);
  const trace::Trace meta = (*stream)->summary();
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyze_run(**stream, Names{}, opt, 0).value();
  ASSERT_EQ(run->paths.rows.size(), 12u);
  auto again = trace::TraceStream::open(dir);
  std::stringstream ss;
  ASSERT_TRUE(write_perfetto((*again)->sources(), meta, *run, choose_intervals(run->paths, 4), 1, ss).ok());
  check_schema(ss.str());
  json doc = json::parse(ss.str());
  int slices = 0;
  for (const json &e : doc["traceEvents"]) slices += e["ph"] == "X";
  EXPECT_GT(slices, 20);
}

TEST(Perfetto, NoIntervalsGivesAnEmptyButValidFile) {
  TraceBuilder tb;
  tb.thread(1).enter(0, 1).exit(10, 1);
  auto x = export_trace(tb.build(), 20);
  EXPECT_TRUE(x.chosen.empty());
  check_schema(x.text);
  EXPECT_TRUE(x.doc["traceEvents"].empty());
}

}  // namespace
}  // namespace vprof::testing
