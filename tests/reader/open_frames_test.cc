// Trace format 8: between recording windows a probe does nothing, and a
// thread resumes recording with its stack unknown. The reader puts in, right
// after the WINDOW record and at its time, an enter for each frame whose
// exit comes before the thread stops again (analyzer/read/open_frames.h):
// the same events whether the trace is read whole or a few events at a time,
// and stacks whole for the walk, a holder's frame entered before the window
// included. Every time is in ns (1 tick = 1 ns); the numbers are worked out
// above each test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/read/trace_stream.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace vprof::testing {
namespace {

using analyzer::FrameKind;
using trace::Event;
using trace::Kind;
constexpr uint32_t OFF = VPROF_WINDOW_OFF, ON = VPROF_WINDOW_ON;

struct Ev {
  int64_t ts;
  Kind kind;
  uint64_t arg;
  bool operator==(const Ev &o) const { return ts == o.ts && kind == o.kind && arg == o.arg; }
};
std::ostream &operator<<(std::ostream &o, const Ev &e) {
  return o << "{" << e.ts << " " << trace::kind_name(e.kind) << " " << e.arg << "}";
}

std::vector<Ev> frames_of(const std::vector<Event> &events) {
  std::vector<Ev> out;
  for (const Event &e : events)
    if (e.kind == Kind::FuncEnter || e.kind == Kind::FuncExit || e.kind == Kind::SiteBegin ||
        e.kind == Kind::SiteEnd || e.kind == Kind::Window)
      out.push_back({e.ts, e.kind, e.kind == Kind::Window ? VPROF_WINDOW_STATE(e.arg) : e.arg});
  return out;
}

// Thread 11 is in f(1) > site 5 when window 1 closes at 50. While nothing
// records, site 5 ends and f calls g(2), which calls h(3) at its site 6.
// Window 2 opens at 200, the stack unknown: k(4) begins and ends, h ends at
// 220, site 6 at 225, interval 9 runs over [230, 260) in g, g ends at 270,
// and the window closes at 300. f ends in window 3, at 510. Small chunks: a
// window's events span several, so the stream must decode ahead across them.
std::string write_thread(const std::string &name) {
  const std::string dir = fresh_dir("vprof-open-frames", name);
  SynthThread t(dir, 1, 11, 256);
  t.window(0, ON, 1, true);
  t.fn_enter(10, 1);
  t.site_begin(20, 5);
  t.window(50, OFF, 1, true);
  t.window(200, ON, 2, true, true);
  t.fn_enter(205, 4);
  t.fn_exit(208, 4);
  t.fn_exit(220, 3);
  t.site_end(225, 6);
  t.interval_begin(230, 9);
  t.interval_end(260, 9);
  t.fn_exit(270, 2);
  for (uint64_t i = 0; i < 20; ++i) t.site_span(280 + i, 7, 0);  // more chunks
  t.window(300, OFF, 2, true);
  t.window(500, ON, 3, true, true);
  t.fn_exit(510, 1);
  t.window(600, OFF, 3, true);
  t.close();
  return dir;
}

std::vector<Ev> expected() {
  std::vector<Ev> want = {{0, Kind::Window, ON},     {10, Kind::FuncEnter, 1},  {20, Kind::SiteBegin, 5},
                          {50, Kind::Window, OFF},   {200, Kind::Window, ON},   {200, Kind::FuncEnter, 2},
                          {200, Kind::SiteBegin, 6}, {200, Kind::FuncEnter, 3}, {205, Kind::FuncEnter, 4},
                          {208, Kind::FuncExit, 4},  {220, Kind::FuncExit, 3},  {225, Kind::SiteEnd, 6},
                          {270, Kind::FuncExit, 2}};
  for (int64_t i = 0; i < 20; ++i) {
    want.push_back({280 + i, Kind::SiteBegin, 7});
    want.push_back({280 + i, Kind::SiteEnd, 7});
  }
  for (Ev e : std::vector<Ev>{{300, Kind::Window, OFF},
                              {500, Kind::Window, ON},
                              {500, Kind::FuncEnter, 1},
                              {510, Kind::FuncExit, 1},
                              {600, Kind::Window, OFF}})
    want.push_back(e);
  return want;
}

TEST(OpenFrames, FramesOpenWhenRecordingResumesAreReadFromTheirExits) {
  const std::string dir = write_thread("whole");
  auto t = trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->count(trace::Severity::Error), 0u);
  ASSERT_EQ(t->threads.size(), 1u);
  EXPECT_EQ(frames_of(t->threads[0].events), expected());
}

TEST(OpenFrames, TheStreamDecodesAheadToTheWindowsEndAtAnyStep) {
  const std::string dir = write_thread("stream");
  for (size_t step : {1, 2, 3, 5, 1000}) {
    auto ts = trace::TraceStream::open(dir);
    ASSERT_TRUE(ts.ok());
    trace::EventSource *s = (*ts)->sources().at(0);
    std::vector<Event> got;
    while (!s->exhausted() || s->size() > 0) {
      s->fill(step);
      s->settle(std::numeric_limits<int64_t>::max());
      got.insert(got.end(), s->data(), s->data() + s->size());
      s->consume(s->size());
    }
    EXPECT_EQ(frames_of(got), expected()) << "step " << step;
  }
}

TEST(OpenFrames, TheWalkSeesTheRebuiltStack) {
  auto t = trace::read_trace_dir(write_thread("walk"));
  ASSERT_TRUE(t.ok());
  auto tl = analyzer::compute_critical_paths(*t);
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  const int64_t g = tl.trie.find(analyzer::StackTrie::kRoot, FrameKind::Function, 2);
  ASSERT_GE(g, 0) << "g, rebuilt from its exit";
  EXPECT_EQ(tl.paths.at(0, uint32_t(g)), 30) << "interval 9's 30 ns in g's body";
  EXPECT_EQ(tl.merge.exits_without_enter, 0u);
  EXPECT_EQ(tl.merge.window_pops_unmatched, 0u);
  EXPECT_EQ(tl.merge.missing_exits, 0u);
}

// Thread 11 enters H(7) at 100, before any window, takes lock 0x40 and holds
// it until 300; H ends at 310. Window 1 opens at 200 (both threads resume
// with their stacks unknown). Thread 12 begins interval 1 at 210 in W(8),
// waits for the lock from 220, and is woken by 11's release at 300 (awake at
// 305); W ends at 320, the interval at 330. Of its 120 ns, the 80 from 220
// to 300 are what 11 did meanwhile: H's, which only its exit at 310 names.
TEST(OpenFrames, AHolderEnteredBeforeTheWindowIsNamedByItsExit) {
  const std::string dir = fresh_dir("vprof-open-frames", "holder");
  {
    SynthThread a(dir, 1, 11), b(dir, 1, 12);
    a.window(0, OFF, 0);
    a.window(200, ON, 1, true, true);
    a.release(300, 0x40);
    a.fn_exit(310, 7);
    a.window(400, OFF, 1, true);
    a.close();
    b.window(0, OFF, 0);
    b.window(205, ON, 1, false, true);
    b.interval_begin(210, 1);
    b.fn_enter(210, 8);
    b.wait_begin(220, 0x40);
    b.wait_end(305, 11, 300);
    b.fn_exit(320, 8);
    b.interval_end(330, 1);
    b.window(400, OFF, 1);
    b.close();
  }
  auto t = trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto tl = analyzer::compute_critical_paths(*t);
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  EXPECT_EQ(tl.paths.rows[0].latency_ns, 120);
  // W's body 10 ns before the wait, 80 held by H, 5 of wake-up and 15 more
  // in W's body, and 10 outside W at the end.
  const int64_t w = tl.trie.find(analyzer::StackTrie::kRoot, FrameKind::Function, 8);
  ASSERT_GE(w, 0);
  const int64_t held = tl.trie.find(uint32_t(w), FrameKind::Held, analyzer::kHeldFunction | 7);
  ASSERT_GE(held, 0) << "a Held leaf naming H, known only from its exit";
  EXPECT_EQ(tl.paths.at(0, uint32_t(held)), 80);
  EXPECT_EQ(tl.paths.at(0, uint32_t(w)), 30);
  EXPECT_EQ(tl.merge.exits_without_enter, 0u);
}

}  // namespace
}  // namespace vprof::testing
