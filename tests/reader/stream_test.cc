// The streaming reader (trace_stream.h) against the whole-trace reader: the
// same files must give the same events, release times, labels and
// diagnostics, whatever step the merge pulls them in.
#include <cmath>
#include <initializer_list>
#include <random>

#include <gtest/gtest.h>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/read/decoder.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/read/trace_stream.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace {

using vprof::testing::SynthThread;
using namespace vprof;

// Drains every source in steps of `step` events, settling what each step
// consumed, and returns the events per source.
std::vector<std::vector<trace::Event>> drain(trace::TraceStream &ts, size_t step) {
  std::vector<std::vector<trace::Event>> out;
  auto sources = ts.sources();
  out.resize(sources.size());
  // Epoch by epoch over all sources, as the merge does: fill all, then settle.
  int64_t until = std::numeric_limits<int64_t>::min();
  while (true) {
    bool any = false;
    int64_t next = std::numeric_limits<int64_t>::max();
    for (auto *s : sources) {
      s->fill(step + 1);
      if (s->size() > step) next = std::min(next, s->data()[step].ts);
      any = any || s->size() > 0;
    }
    if (!any) break;
    if (next == std::numeric_limits<int64_t>::max()) next = next - 1;  // the rest
    until = std::max(until + 1, next);
    for (auto *s : sources) s->settle(until);
    for (size_t i = 0; i < sources.size(); ++i) {
      auto *s = sources[i];
      size_t k = 0;
      while (k < s->size() && s->data()[k].ts < until) out[i].push_back(s->data()[k++]);
      s->consume(k);
    }
  }
  return out;
}

// Two threads sharing a lock many times (releases to prune), labels, a wake
// whose release record is missing, and a torn second file.
std::string write_trace(const std::string &name) {
  std::string dir = vprof::testing::fresh_dir("vprof-stream", name);
  SynthThread a(dir, 1, 11), b(dir, 1, 12);
  for (uint64_t i = 0; i < 300; ++i) {
    uint64_t t = 1000 + i * 100;
    a.interval_begin(t, i + 1, i % 2 ? "Read" : "Write", "c1");
    a.fn_enter(t + 1, 1);
    b.release(t + 5, 0x40);
    a.wait_begin(t + 2, 0x40);
    b.release(t + 20, 0x40);  // the one that wakes a
    a.wait_end(t + 30, 12, t + 20);
    b.release(t + 40, 0x40);  // after the wake: not it
    if (i == 150) {
      a.wait_begin(t + 41, 0x77);
      a.wait_end(t + 45, 12, t + 43);  // no such release: the runtime's delta
    }
    a.fn_exit(t + 50, 1);
    a.interval_end(t + 60, i + 1);
  }
  a.close();
  b.close(false);  // killed: a Warning
  return dir;
}

// Streams `dir` in steps of each size and checks every event, label and
// diagnostic against the whole-file reader; `also(summary, whole)` adds checks.
template <class Also>
void expect_stream_as_whole(const std::string &dir, std::initializer_list<size_t> steps,
                            Also also) {
  auto whole = trace::read_trace_dir(dir);
  ASSERT_TRUE(whole.ok());
  for (size_t step : steps) {
    auto ts = trace::TraceStream::open(dir);
    ASSERT_TRUE(ts.ok());
    auto got = drain(**ts, step);
    trace::Trace sum = (*ts)->summary();
    ASSERT_EQ(got.size(), whole->threads.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const auto &want = whole->threads[i].events;
      ASSERT_EQ(got[i].size(), want.size()) << "step " << step << " thread " << i;
      for (size_t k = 0; k < want.size(); ++k) {
        SCOPED_TRACE(::testing::Message() << "step " << step << " thread " << i << " event " << k);
        EXPECT_EQ(got[i][k].ts, want[k].ts);
        EXPECT_EQ(got[i][k].kind, want[k].kind);
        EXPECT_EQ(got[i][k].arg, want[k].arg);
        EXPECT_EQ(got[i][k].role, want[k].role);
        EXPECT_EQ(got[i][k].acquired, want[k].acquired);
        EXPECT_EQ(got[i][k].release_ts, want[k].release_ts);
        EXPECT_EQ(got[i][k].waker_tid, want[k].waker_tid);
        EXPECT_EQ(sum.labels[got[i][k].type_label], whole->labels[want[k].type_label]);
        EXPECT_EQ(sum.labels[got[i][k].client_label], whole->labels[want[k].client_label]);
      }
    }
    EXPECT_EQ(sum.total_records, whole->total_records);
    ASSERT_EQ(sum.diagnostics.size(), whole->diagnostics.size()) << "step " << step;
    for (size_t k = 0; k < sum.diagnostics.size(); ++k)
      EXPECT_EQ(sum.diagnostics[k].str(), whole->diagnostics[k].str()) << "step " << step;
    also(sum, *whole);
  }
}

TEST(Stream, SameEventsAsTheWholeReaderAtAnyStep) {
  expect_stream_as_whole(write_trace("same"), {1, 2, 7, 1000},
                         [](const trace::Trace &sum, const trace::Trace &whole) {
                           EXPECT_EQ(sum.threads[1].torn, whole.threads[1].torn);
                         });
}

// Small chunks (records cross chunk ends often), time going backwards now
// and then, labels and strings mid-chunk, a drop marker, a damaged record:
// every path of the decoder, batched as the stream decodes or one at a time
// as the whole reader does, must give the same events and diagnostics.
TEST(Stream, DecoderPathsAgreeOnDamagedAndIrregularFiles) {
  std::string dir = vprof::testing::fresh_dir("vprof-stream", "paths");
  {
    SynthThread a(dir, 1, 21, 1024), b(dir, 1, 22, 1024);
    uint64_t t = 1000;
    for (uint64_t i = 0; i < 400; ++i) {
      t += 10;
      if (i % 3 == 0) a.interval_begin(t, i + 1, i % 2 ? "Read" : "Write", "c");
      else a.interval_begin(t, i + 1);
      a.fn_enter(i % 17 == 5 ? t - 7 : t + 1, 1);  // sometimes before the previous record
      a.site_begin(t + 2, 3);
      b.release(t + 3, 0x40);
      a.wait_begin(t + 2, 0x40);
      a.wait_end(t + 4, 22, t + 3);
      a.site_end(t + 5, 3);
      a.site_span(t + 5, 4, 1);  // spans: two events from one slot
      if (i % 50 == 7) a.site_span(t + 5, 5, 0);
      a.fn_exit(t + 6, 1);
      a.enqueue(t + 6, 0x900 + i);
      b.dequeue(t + 7, 0x900 + i);
      b.join(t + 7, i + 1);
      b.leave(t + 8);
      a.interval_end(t + 9, i + 1);
      if (i == 200) b.drop_begin(t + 9);
      if (i == 300) a.raw(((t + 9) << VPROF_TS_SHIFT) | 31, 0);  // unknown kind: rest of chunk lost
    }
    a.close();
    b.close(false);
  }
  auto whole = trace::read_trace_dir(dir);
  ASSERT_TRUE(whole.ok());
  ASSERT_GT(whole->diagnostics.size(), 2u);  // the damage, the regressions, the torn file
  expect_stream_as_whole(dir, {1, 5, 64, 100000},
                         [](const trace::Trace &sum, const trace::Trace &whole) {
                           EXPECT_EQ(sum.threads[1].drop_begin_ts, whole.threads[1].drop_begin_ts);
                         });
}

TEST(Stream, CriticalPathsFromStreamEqualFromMemory) {
  std::string dir = write_trace("paths");
  auto whole = trace::read_trace_dir(dir);
  ASSERT_TRUE(whole.ok());
  auto ref = analyzer::compute_critical_paths(*whole);
  ASSERT_EQ(ref.paths.rows.size(), 300u);
  for (size_t epoch : {1, 3, 1024}) {
    auto ts = trace::TraceStream::open(dir);
    ASSERT_TRUE(ts.ok());
    analyzer::PathOptions o;
    o.epoch_records = epoch;
    auto got = analyzer::compute_critical_paths((*ts)->sources(), o);
    EXPECT_EQ(got.paths.cells, ref.paths.cells) << "epoch " << epoch;
    EXPECT_EQ(got.paths.row_start, ref.paths.row_start);
    EXPECT_EQ(got.paths.blame.size(), ref.paths.blame.size());
  }
}

// Windows.AnIntervalLeftOpenByAnEndedProcess… (tests/analyzer) on files: a
// run (pid 100) stops with interval 1 in flight (begun at 10, its thread's
// last record at 20); the next run (pid 200) numbers its first interval 1 too,
// [100, 150). A file source says it is exhausted only once a fill() finds
// nothing more, often an epoch after its last record was fed: the thread's
// end must still be known (the time of its last record fed), or the begin at
// 100 reads as a duplicate and the end at 150 closes the old begin (140 ns).
// Pids 300 and 400 run at once and number an id alike: still duplicates.
TEST(Stream, AnIntervalLeftOpenByAnEndedProcessIsTheNextRunsOnFilesToo) {
  const std::string dir = vprof::testing::fresh_dir("vprof-stream", "ended");
  {
    SynthThread a(dir, 100, 100);
    a.interval_begin(10, 1);
    a.fn_enter(12, 1);
    a.fn_exit(20, 1);
    a.close();
    auto one = [&](uint32_t pid, uint64_t id, uint64_t begin, uint64_t end) {  // a process, one interval
      SynthThread t(dir, pid, pid);
      t.interval_begin(begin, id);
      t.interval_end(end, id);
      t.close();
    };
    one(200, 1, 100, 150);
    one(300, 5, 200, 230);
    one(400, 5, 210, 240);
  }
  for (size_t epoch : {size_t{1}, size_t{2}, size_t{3}, size_t{1} << 30}) {
    for (unsigned threads : {1u, 2u}) {
      SCOPED_TRACE(::testing::Message() << "epoch_records=" << epoch << " threads=" << threads);
      auto ts = trace::TraceStream::open(dir);
      ASSERT_TRUE(ts.ok());
      analyzer::PathOptions o;
      o.epoch_records = epoch;
      o.threads = threads;
      auto tl = analyzer::compute_critical_paths((*ts)->sources(), o);
      std::vector<std::pair<uint64_t, int64_t>> rows;
      for (const auto &row : tl.paths.rows) rows.push_back({row.id, row.latency_ns});
      EXPECT_EQ(rows, (std::vector<std::pair<uint64_t, int64_t>>{{1, 50}, {5, 30}}));
      EXPECT_EQ(tl.merge.duplicate_begins, 1u) << "pid 400's, begun while pid 300's was open";
      EXPECT_EQ(tl.paths.counters.incomplete_intervals, 1u) << "pid 100's";
    }
  }
}

// The merge decodes sources in parallel (each file numbers labels in a table
// of its own; settle() gives them the trace's numbers): with any worker
// count, and any epoch size, labels must be numbered as one serial decode
// numbers them, and every row must carry the same labels and diagnostics.
TEST(Stream, ParallelDecodeNumbersLabelsAsSerial) {
  std::string dir = vprof::testing::fresh_dir("vprof-stream", "labels");
  {
    SynthThread a(dir, 1, 31), b(dir, 1, 32), c(dir, 1, 33);
    SynthThread *th[] = {&a, &b, &c};
    const char *types[] = {"NewOrder", "Payment", "Delivery", "StockLevel", "OrderStatus"};
    uint64_t t = 1000;
    for (uint64_t i = 0; i < 600; ++i) {
      SynthThread &w = *th[i % 3];
      t += 10;
      // Each file meets the names in another order, some only late.
      const char *type = types[(i * (1 + i % 3) + i / 200) % 5];
      std::string client = "c" + std::to_string((i * 7) % (3 + i / 100));
      w.interval_begin(t, i + 1, type, client.c_str());
      w.fn_enter(t + 1, 1);
      w.fn_exit(t + 5 + i % 4, 1);
      w.interval_end(t + 9, i + 1);
      if (i == 400) {  // a label string never defined: a diagnostic from one file
        w.raw(((t + 9) << VPROF_TS_SHIFT) | VPROF_K_IV_BEGIN_LABELED, 10000);
        w.raw(99, 0);
        w.interval_end(t + 9, 10000);
      }
    }
    a.close();
    b.close();
    c.close(false);  // a torn file: a diagnostic
  }
  struct Result {
    std::vector<std::string> labels, row_labels;
    std::vector<std::string> diagnostics;
  };
  auto run = [&](unsigned threads, size_t epoch) {
    auto ts = trace::TraceStream::open(dir);
    EXPECT_TRUE(ts.ok());
    analyzer::PathOptions o;
    o.threads = threads;
    o.epoch_records = epoch;
    auto got = analyzer::compute_critical_paths((*ts)->sources(), o);
    trace::Trace sum = (*ts)->summary();
    Result r;
    r.labels = sum.labels;
    for (const auto &row : got.paths.rows)
      r.row_labels.push_back(sum.labels[row.type_label] + "/" + sum.labels[row.client_label]);
    for (const auto &d : sum.diagnostics) r.diagnostics.push_back(d.str());
    return r;
  };
  for (size_t epoch : {size_t{3}, size_t{64}, size_t{1024}}) {
    Result one = run(1, epoch);
    ASSERT_EQ(one.row_labels.size(), 601u);
    ASSERT_GE(one.labels.size(), 6u);
    ASSERT_GE(one.diagnostics.size(), 2u);  // the undefined string, the torn file
    for (unsigned threads : {2u, 3u}) {
      SCOPED_TRACE(::testing::Message() << "epoch " << epoch << ", " << threads << " threads");
      Result par = run(threads, epoch);
      EXPECT_EQ(par.labels, one.labels);
      EXPECT_EQ(par.row_labels, one.row_labels);
      EXPECT_EQ(par.diagnostics, one.diagnostics);
    }
  }
}

}  // namespace

namespace {

TEST(Clock, RoundingMatchesLlroundOnEdgeValues) {
  using vprof::trace::detail::Clock;
  std::vector<double> xs;
  for (double base : {0.0, 1.0, 2.0, 3.0, 1e6, 4503599627370495.0 /* 2^52 - 1 */,
                      4503599627370496.0, 9007199254740991.0, 1e17})
    for (double d : {0.0, 0.5, 1.5, 0.25, 0.75})
      for (double v : {base + d, std::nextafter(base + d, 0.0), std::nextafter(base + d, 1e300)})
        xs.push_back(v);
  xs.push_back(0.49999999999999994);
  xs.push_back(std::nextafter(0.5, 0.0));
  xs.push_back(std::nextafter(0.5, 1.0));
  std::vector<double> all = xs;
  for (double v : xs) all.push_back(-v);
  for (double v : all) ASSERT_EQ(Clock::round_half_away(v), std::llround(v)) << std::hexfloat << v;
}

TEST(Clock, RoundsAsLlround) {
  // ns = llround(ticks since the anchor × ns per tick), half away from zero,
  // on both sides of the anchor: ties, values a hair either side of them, and
  // big offsets, at rates a TSC has and at 1 tick per ns.
  std::mt19937_64 rng(5);
  for (double rate : {1.0, 2.0, 4.0, 2.5, 2.1, 3.0000001, 0.024, 1.0 / 3}) {
    vprof::trace::detail::Clock c(rate, 1'000'000'000'000ull, 777);
    std::vector<uint64_t> ticks;
    for (int64_t d : {0, 1, -1, 2, -2, 3, -3, 5, -5, 7, -7})
      ticks.push_back(c.anchor_ticks + uint64_t(d));
    for (int i = 0; i < 100000; ++i) {
      int64_t d = int64_t(rng() % 20'000'000'000ull) - 10'000'000'000ll;
      if (i % 2) d %= 1000;
      ticks.push_back(c.anchor_ticks + uint64_t(d));
    }
    for (uint64_t t : ticks) {
      double x = double(int64_t(t - c.anchor_ticks)) * (1.0 / rate);
      ASSERT_EQ(c.ns(t), 777 + std::llround(x)) << "rate " << rate << " ticks " << t;
    }
  }
}

}  // namespace
