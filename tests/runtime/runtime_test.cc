// The runtime, end to end: run the workload program under VPROF_TRACE_DIR,
// read its trace with the reader, compare with what it must hold.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/read/process_files.h"
#include "analyzer/read/trace_reader.h"
#include "tests/runtime/run_workload.h"
#include "tests/support/temp_dir.h"
#include "roundtrip_script.h"

namespace fs = std::filesystem;
using vprof::trace::Kind;
using vprof::trace::Trace;

namespace {

std::string fresh_dir(const std::string &name) { return vprof::testing::fresh_dir("vprof-rt", name); }

// The workload with the recorder on. These tests count the program's
// records exactly; the runtime's own PREEMPTED records (as many as the
// machine's load makes) are preempt_test.cc's.
int run_counted(const std::string &dir, std::vector<std::string> args,
                std::map<std::string, std::string> env = {}) {
  env.emplace("VPROF_PREEMPT", "0");
  env.emplace("VPROF_MIN_WAIT_NS", "0");  // every wait kept, however short
  env.emplace("VPROF_MUTEX_RELEASES", "1");  // and every release
  return run_workload(dir, std::move(args), env);
}

Trace read_ok(const std::string &dir) {
  auto t = vprof::trace::read_trace_dir(dir);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  if (!t.ok()) return Trace{};
  EXPECT_EQ(t->count(vprof::trace::Severity::Error), 0u)
      << (t->first_error() ? t->first_error()->str() : "");
  return std::move(t).value();
}

// The program's records: without the runtime's own, PREEMPTED (the kernel's
// switches, preempt_test.cc) and RECORDER (its pauses, Runtime.Recorder_*).
std::vector<vprof::trace::Event> program_events(const vprof::trace::ThreadStream &s) {
  std::vector<vprof::trace::Event> ev;
  for (const auto &e : s.events)
    if (e.kind != Kind::Preempted && e.kind != Kind::Recorder) ev.push_back(e);
  return ev;
}

// The recorder's pauses on one thread: the first record is one (the file's
// making), each later one follows the record that paid for it at that
// record's time, and each ends before the next record begins.
void expect_recorder_spans(const vprof::trace::ThreadStream &s, size_t at_least) {
  ASSERT_FALSE(s.events.empty()) << s.file;
  EXPECT_EQ(s.events[0].kind, Kind::Recorder) << s.file << ": the file's making";
  size_t n = 0;
  for (size_t i = 0; i < s.events.size(); ++i) {
    const auto &e = s.events[i];
    if (e.kind != Kind::Recorder) continue;
    ++n;
    EXPECT_EQ(e.release_ts, e.ts) << s.file << " #" << i;
    EXPECT_GE(int64_t(e.arg), e.ts) << s.file << " #" << i;
    if (i > 0) EXPECT_EQ(e.ts, s.events[i - 1].ts) << s.file << " #" << i << ": after the record that paid";
    if (i + 1 < s.events.size()) EXPECT_LE(int64_t(e.arg), s.events[i + 1].ts) << s.file << " #" << i;
  }
  EXPECT_GE(n, at_least) << s.file;
}

// FuncEnter ids of one stream must be exactly 0..m-1 (per round), each followed by its exit.
void expect_pairs(const vprof::trace::ThreadStream &s, uint32_t m, uint32_t rounds = 1) {
  std::vector<const vprof::trace::Event *> ev;
  for (const auto &e : s.events)
    if (e.kind == Kind::FuncEnter || e.kind == Kind::FuncExit) ev.push_back(&e);
  ASSERT_EQ(ev.size(), 2ull * m * rounds) << s.file;
  for (size_t i = 0; i < ev.size(); ++i) {
    ASSERT_EQ(ev[i]->kind, i % 2 ? Kind::FuncExit : Kind::FuncEnter) << s.file << " #" << i;
    ASSERT_EQ(ev[i]->arg, (i / 2) % m) << s.file << " #" << i;
    if (i) ASSERT_GE(ev[i]->ts, ev[i - 1]->ts);
  }
}

}  // namespace

TEST(Runtime, RoundTripEveryEventKindExactly) {
  std::string dir = fresh_dir("roundtrip");
  ASSERT_EQ(run_counted(dir, {"roundtrip"}), 0);
  Trace t = read_ok(dir);
  ASSERT_EQ(t.threads.size(), 2u);
  for (int half = 0; half < 2; ++half) {
    const auto &s = t.threads[half];  // sorted by tid: main thread first
    auto script = vprof::testing::roundtrip_script(half);
    expect_recorder_spans(s, 1);
    const auto ev = program_events(s);
    ASSERT_EQ(ev.size(), script.size() + 1) << "plus THREAD_EXIT";
    EXPECT_TRUE(s.clean_exit);
    EXPECT_EQ(ev.back().kind, Kind::ThreadExit);
    for (size_t i = 0; i < script.size(); ++i) {
      const auto &e = ev[i];
      EXPECT_EQ(static_cast<int>(e.kind), script[i].kind) << "event " << i;
      EXPECT_EQ(e.arg, script[i].arg) << "event " << i;
      if (script[i].role) {
        EXPECT_EQ(e.role, script[i].role) << "event " << i;
      }
      if (e.kind == Kind::IntervalBegin) {
        EXPECT_EQ(t.labels[e.type_label], script[i].type ? script[i].type : "") << i;
        EXPECT_EQ(t.labels[e.client_label], script[i].client ? script[i].client : "") << i;
      }
      if (i) EXPECT_GE(e.ts, ev[i - 1].ts);
    }
  }
  EXPECT_EQ(t.dropped_records, 0u);
  EXPECT_GT(t.overhead.probe_pair_ns, 0.0);
  EXPECT_GT(t.overhead.empty_interval_ns, 0.0);
}

TEST(Runtime, WakeupEdgeNamesTheReleasingThreadAndItsRelease) {
  std::string dir = fresh_dir("handoff");
  ASSERT_EQ(run_counted(dir, {"handoff"}), 0);
  Trace t = read_ok(dir);
  ASSERT_EQ(t.threads.size(), 2u);
  // Find A (the thread whose first wait had no waker) and B.
  const vprof::trace::ThreadStream *a = nullptr, *b = nullptr;
  for (const auto &s : t.threads) (program_events(s)[1].waker_tid == 0 ? a : b) = &s;
  ASSERT_TRUE(a && b);
  const auto bw = program_events(*b), aw = program_events(*a);
  ASSERT_EQ(bw[0].kind, Kind::WaitBegin);
  ASSERT_EQ(bw[1].kind, Kind::WaitEnd);
  EXPECT_EQ(bw[1].waker_tid, a->tid);
  const auto *release = &aw[2];
  ASSERT_EQ(release->kind, Kind::Release);
  EXPECT_EQ(bw[1].release_ts, release->ts) << "resolved to A's own release record";
  EXPECT_GT(bw[1].release_ts, bw[0].ts) << "released while B waited";
  EXPECT_LE(bw[1].release_ts, bw[1].ts);
}

// PostgreSQL's sync pack wraps every LWLock acquire, and most are
// uncontended: a wait-begin/wait-end pair each cost the backends 9.5% of
// pgbench's throughput before any function was timed, and a release record
// each as much again. A wait shorter than VPROF_MIN_WAIT_NS (default 1 us)
// is taken back; a real one is kept whole, with its waker; a lock's release
// is in the ownership map only (VPROF_MUTEX_RELEASES=0, the default), but
// for one a thread was waiting for: it is recorded.
TEST(Runtime, AnUncontendedAcquireLeavesNoWaitRecords) {
  for (bool keep_all : {false, true}) {
    SCOPED_TRACE(keep_all ? "VPROF_MIN_WAIT_NS=0" : "default");
    std::string dir = fresh_dir(keep_all ? "shortwaits-all" : "shortwaits");
    std::map<std::string, std::string> env;  // keep_all: run_counted's
    if (!keep_all) env = {{"VPROF_MIN_WAIT_NS", "1000"}, {"VPROF_MUTEX_RELEASES", "0"}};
    ASSERT_EQ(run_counted(dir, {"shortwaits"}, env), 0);
    Trace t = read_ok(dir);
    ASSERT_GE(t.threads.size(), 2u);  // A and B (main records nothing)
    size_t begins = 0, ends = 0, releases = 0;
    const vprof::trace::Event *contended = nullptr, *contended_begin = nullptr;
    uint32_t a_tid = 0;
    for (const auto &s : t.threads) {
      for (const auto &e : s.events) {
        if (e.kind == Kind::WaitBegin) ++begins;
        if (e.kind == Kind::Release) ++releases;
        if (e.kind != Kind::WaitEnd) continue;
        ++ends;
        if (e.waker_tid && e.waker_tid != s.tid) {
          contended = &e;
          contended_begin = &e - 1;
        }
      }
    }
    // A: the one thread that released the mutex and never waited long.
    std::set<uint32_t> others;
    for (const auto &s : t.threads)
      if (contended && !s.events.empty() &&
          (&s.events.front() > contended || &s.events.back() < contended))
        others.insert(s.tid);
    if (others.size() == 1) a_tid = *others.begin();
    ASSERT_NE(contended, nullptr) << "the contended wait is kept, with its waker";
    EXPECT_EQ(contended->waker_tid, a_tid);
    // Without A's release record, the runtime's delta places the release
    // inside B's ~20 ms wait.
    ASSERT_EQ(contended_begin->kind, Kind::WaitBegin);
    EXPECT_GT(contended->release_ts, contended_begin->ts);
    EXPECT_LE(contended->release_ts, contended->ts);
    EXPECT_EQ(t.count(vprof::trace::Severity::Info), 0u) << "no release record was missing";
    if (keep_all) {
      EXPECT_EQ(releases, 1002u);
      EXPECT_EQ(begins, 1002u);
      EXPECT_EQ(ends, 1002u);
    } else {
      // A lock's releases are in the ownership map only, but for those a
      // thread was waiting for (B's): the analysis tiles a wait by them.
      EXPECT_GE(releases, 1u);
      EXPECT_LE(releases, 11u);
      // A's 1001 acquires took a few hundred ns at most; on a loaded machine
      // one can be descheduled mid-acquire and kept: a handful, not 1001.
      EXPECT_EQ(begins, ends);
      EXPECT_LE(begins, 11u);
      EXPECT_GE(begins, 1u);
    }
  }
}

// Recording in full, a release goes to the ownership map only while
// some thread times a wait on its object, so an uncontended lock's release
// reads no clock and writes no shared line; a wait the map cannot explain
// names no waker rather than the last release from before it began. The
// workload (stalewaker): B's two 5 ms waits were ended by no release; A
// released m with no one waiting and n while C waited. Windowed, every
// release in a window still goes to the map (recorder.h).
TEST(Runtime, AReleaseNoOneWaitedForIsNotAWaker) {
  std::string dir = fresh_dir("stalewaker");
  ASSERT_EQ(run_counted(dir, {"stalewaker"}, {{"VPROF_MIN_WAIT_NS", "1000"}}), 0);
  Trace t = read_ok(dir);
  // The waits in the order they began (workload.cc, stale_waker): B's on m,
  // C's on n, B's on n; before them, at most the first thread's uncontended
  // acquire of m (taken back, unless a busy machine preempted it in between).
  // By order, not by length: on a loaded machine C's 2 ms can outlast 4 ms.
  std::vector<const vprof::trace::Event *> ends;
  for (const auto &s : t.threads)
    for (const auto &e : s.events) {
      if (e.kind != Kind::WaitEnd) continue;
      ASSERT_EQ((&e - 1)->kind, Kind::WaitBegin);
      ends.push_back(&e);
    }
  std::sort(ends.begin(), ends.end(), [](auto *a, auto *b) { return (a - 1)->ts < (b - 1)->ts; });
  ASSERT_GE(ends.size(), 3u);
  ASSERT_LE(ends.size(), 4u);
  const auto *b_on_m = ends[ends.size() - 3], *c_on_n = ends[ends.size() - 2], *b_on_n = ends.back();
  ASSERT_NE(b_on_m->arg, c_on_n->arg);
  ASSERT_EQ(c_on_n->arg, b_on_n->arg);
  EXPECT_GE(b_on_m->ts - (b_on_m - 1)->ts, 4000000) << "B's waits are 5 ms each";
  EXPECT_GE(b_on_n->ts - (b_on_n - 1)->ts, 4000000);
  EXPECT_EQ(b_on_m->waker_tid, 0u) << "m's release had no waiter: not in the map";
  EXPECT_EQ(b_on_n->waker_tid, 0u) << "n's release was before the wait began";
  EXPECT_NE(c_on_n->waker_tid, 0u) << "C's wait names A, whose release it waited for";
}

// A condition wait gives its mutex up and takes it back (trace format 11):
// its WAIT_BEGIN is followed by a WAIT_MUTEX naming the mutex, and while it
// waits the mutex counts as waited for, so that the signaller's unlock 3 ms
// after its signal, which kept the woken waiter out, is recorded though
// lock releases are recorded only when waited for (the default). A short
// condition wait is taken back whole, its WAIT_MUTEX with it.
TEST(Runtime, AConditionWaitNamesItsMutexAndItsHoldersReleasesAreRecorded) {
  std::string dir = fresh_dir("condmutex");
  ASSERT_EQ(run_counted(dir, {"condmutex"}, {{"VPROF_MIN_WAIT_NS", "1000"}, {"VPROF_MUTEX_RELEASES", "0"}}), 0);
  Trace t = read_ok(dir);
  const vprof::trace::Event *begin = nullptr, *end = nullptr, *signal = nullptr, *unlock = nullptr;
  uint64_t cv = 0, mutex = 0;
  size_t mutexes = 0;
  for (const auto &s : t.threads)
    for (const auto &e : s.events) {
      if (e.kind != Kind::WaitMutex) continue;
      ++mutexes;
      const auto &b = *(&e - 1);
      ASSERT_EQ(b.kind, Kind::WaitBegin) << "right after its wait's begin";
      EXPECT_EQ(b.ts, e.ts);
      EXPECT_EQ(e.arg >> 56, uint64_t{VPROF_SYNC_MUTEX});
      if (b.role == VPROF_SYNC_CONDVAR) {
        begin = &b;
        end = &e + 1;
        cv = b.arg;
        mutex = e.arg & VPROF_OBJ_MASK;
      }
    }
  ASSERT_NE(begin, nullptr) << "A's condition wait is kept, with its mutex";
  ASSERT_EQ(end->kind, Kind::WaitEnd);
  EXPECT_LE(mutexes, 1u + 10u) << "the 100 short ones are taken back, but for a few a busy machine kept";
  uint32_t signaller = 0, unlocker = 0;
  for (const auto &s : t.threads)
    for (const auto &e : s.events)
      if (e.kind == Kind::Release && e.arg == cv) {
        signal = &e;
        signaller = s.tid;
      } else if (e.kind == Kind::Release && e.arg == mutex && e.ts > begin->ts && e.ts < end->ts) {
        unlock = &e;
        unlocker = s.tid;
      }
  ASSERT_NE(signal, nullptr);
  ASSERT_NE(unlock, nullptr) << "B's unlock, during A's wait: recorded because A's wait counted the mutex";
  EXPECT_EQ(unlocker, signaller);
  EXPECT_GE(unlock->ts - signal->ts, 2500000) << "B held the mutex 3 ms after its signal";
  EXPECT_EQ(end->waker_tid, signaller);
  EXPECT_EQ(end->release_ts, signal->ts) << "the wait's waker is the signal";
}

// A call that records nothing inside is one SITE_SPAN slot (trace format
// 4): the reader gives back the begin and the end, in order and in time,
// wherever the span cannot be used (a record inside, a ring switch between
// begin and end) the two records are there as before, and the file holds
// about one slot a call, not two. Calls of one site in a row with nothing
// between them (a loop around a library call) are one SITE_RUN (format 9):
// 20 000 of them read as one call as long as their sum, after the time
// between them, and take no ring at all.
// An iterate session's build holds probes a run leaves dormant
// (VPROF_DORMANT): those record nothing, and the rest record as they would
// in a build without them: a site inside a dormant site, a site around a
// dormant function's call (a span: nothing recorded inside).
TEST(Runtime, DormantProbesRecordNothingAndTheRestAsIfTheyWereNotBuilt) {
  std::string dir = fresh_dir("dormant");
  const std::string list = dir + ".dormant";
  {
    std::ofstream out(list);
    out << "s 2\nf 6\ns 9\ns 10";  // no newline after the last line
  }
  ASSERT_EQ(run_counted(dir, {"spans", "100"}, {{"VPROF_DORMANT", list}}), 0);
  Trace t = read_ok(dir);
  ASSERT_EQ(t.threads.size(), 1u);
  std::vector<std::pair<Kind, uint64_t>> got;
  for (const auto &e : t.threads[0].events)
    if (e.kind == Kind::SiteBegin || e.kind == Kind::SiteEnd || e.kind == Kind::FuncEnter ||
        e.kind == Kind::FuncExit)
      got.emplace_back(e.kind, e.arg);
  const Kind B = Kind::SiteBegin, E = Kind::SiteEnd;
  const std::vector<std::pair<Kind, uint64_t>> want = {{B, 1}, {E, 1}, {B, 3}, {E, 3}, {B, 4}, {B, 4}, {E, 4},
                                                       {E, 4}, {B, 5}, {E, 5}, {B, 7}, {E, 7}, {B, 8}, {E, 8}};
  EXPECT_EQ(got, want);
  fs::remove_all(dir);
  fs::remove(list);
}

// A list the runtime cannot read, or one with a line that is not "f ID" or
// "s ID", turns recording off (the run would name probes the session did not
// ask for), and says so on stderr; the program runs.
TEST(Runtime, ADormantListThatCannotBeReadTurnsRecordingOff) {
  for (const std::string text : {std::string("none"), std::string("f 3\nx 4\n"), std::string("s 99999999999\n")}) {
    std::string dir = fresh_dir("dormant-bad");
    const std::string list = dir + ".dormant";
    if (text != "none") std::ofstream(list) << text;
    ASSERT_EQ(run_counted(dir, {"spans", "100"}, {{"VPROF_DORMANT", list}}), 0) << text;
    size_t thread_files = 0;
    if (fs::exists(dir))
      for (const auto &e : fs::directory_iterator(dir)) thread_files += e.path().extension() == ".vpt";
    EXPECT_EQ(thread_files, 0u) << text;
    fs::remove_all(dir);
    fs::remove(list);
  }
}

TEST(Runtime, Spans_ACallWithNothingInsideIsOneSlotAndCallsInARowOneRun) {
  std::string dir = fresh_dir("spans");
  const uint32_t n = 20000;
  ASSERT_EQ(run_counted(dir, {"spans", std::to_string(n)}, {{"VPROF_CHUNK_KB", "4"}}), 0);
  Trace t = read_ok(dir);
  ASSERT_EQ(t.threads.size(), 1u);
  const auto &s = t.threads[0];
  std::vector<std::pair<Kind, uint64_t>> got;
  std::vector<int64_t> ts;
  for (const auto &e : s.events) {
    if (e.kind == Kind::SiteBegin || e.kind == Kind::SiteEnd || e.kind == Kind::FuncEnter ||
        e.kind == Kind::FuncExit) {
      got.emplace_back(e.kind, e.arg);
      ts.push_back(e.ts);
    }
  }
  const Kind B = Kind::SiteBegin, E = Kind::SiteEnd;
  std::vector<std::pair<Kind, uint64_t>> want = {
      {B, 1}, {E, 1}, {B, 2}, {B, 3}, {E, 3}, {E, 2}, {B, 4}, {B, 4}, {E, 4}, {E, 4},
      {B, 5}, {Kind::FuncEnter, 6}, {Kind::FuncExit, 6}, {E, 5}, {B, 7}, {E, 7}, {B, 8}, {E, 8}};
  for (uint32_t i = 0; i < n; i += 2)
    for (uint64_t site : {9, 10}) {
      want.emplace_back(B, site);
      want.emplace_back(E, site);
    }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "event " << i;
    if (i) ASSERT_GE(ts[i], ts[i - 1]) << "event " << i;
  }
  EXPECT_GE(ts[15] - ts[14], 2000000) << "site 7's 2 ms call keeps its length";
  EXPECT_LT(ts[15] - ts[14], 1000000000);
  // The run: its calls' sum, after the time between them, ending where the
  // loop ended (before the first call of site 9).
  EXPECT_GT(ts[17] - ts[16], 0);
  EXPECT_LE(ts[17], ts[18]);
  // ~20 000 calls in turn in 4 KiB rings of 254 slots: ~158 data chunks as
  // begin and end records, ~79 as spans; the run adds none.
  vprof_file_header h;
  FILE *f = std::fopen(s.file.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fread(&h, sizeof h, 1, f), 1u);
  std::fclose(f);
  EXPECT_EQ(h.version, VPROF_TRACE_VERSION);
  EXPECT_LE(h.data_chunks, 85u) << "one slot a call";
  EXPECT_GE(h.data_chunks, 78u);
}

// A signal handler's probes that land between a probe's look at its flag
// and the flag can fill the ring to its end (or park its end at the
// position: windowed recording). The probe then looks at the room under its
// flag and takes the slow path, a new ring; looked at before the flag, it
// wrote its record at the end, into the slots kept for the drop and exit
// markers, and a drop's marker after it went past the ring. hold_race.cc
// makes the handler land there at every probe of a function around a call
// site (4 KiB rings): each record is where it belongs, in order, whole.
TEST(Runtime, AProbeInterruptedBeforeItsFlagByAFullRingTakesANewOne) {
  std::string dir = fresh_dir("holdrace");
  const uint32_t rounds = 200;
  ASSERT_EQ(run_counted(dir, {"holdrace", std::to_string(rounds)}, {{"VPROF_CHUNK_KB", "4"}}), 0)
      << "exit 10-13: a probe's record went past its ring's end; 14: the handler did not run";
  Trace t = read_ok(dir);
  ASSERT_EQ(t.threads.size(), 1u);
  std::vector<std::pair<Kind, uint64_t>> got;
  size_t handler_calls = 0;
  int64_t last = 0;
  for (const auto &e : t.threads[0].events) {
    ASSERT_GE(e.ts, last);
    last = e.ts;
    if ((e.kind == Kind::SiteBegin || e.kind == Kind::SiteEnd) && (e.arg == 7 || e.arg == 8)) handler_calls += e.kind == Kind::SiteEnd;
    else if ((e.kind == Kind::FuncEnter || e.kind == Kind::FuncExit) && e.arg == 20) handler_calls += e.kind == Kind::FuncExit;
    else if (e.kind == Kind::SiteBegin || e.kind == Kind::SiteEnd || e.kind == Kind::FuncEnter ||
             e.kind == Kind::FuncExit || e.kind == Kind::IntervalBegin || e.kind == Kind::IntervalEnd)
      got.emplace_back(e.kind, e.arg);
  }
  std::vector<std::pair<Kind, uint64_t>> want;
  for (uint64_t i = 1; i <= rounds; ++i)
    for (auto k : std::vector<std::pair<Kind, uint64_t>>{{Kind::IntervalBegin, i},
                                                          {Kind::FuncEnter, 3},
                                                          {Kind::SiteBegin, 9},
                                                          {Kind::SiteEnd, 9},
                                                          {Kind::FuncExit, 3},
                                                          {Kind::IntervalEnd, i}})
      want.push_back(k);
  EXPECT_EQ(got, want);
  // Four full rings a round: at least one slot short of 254 each.
  EXPECT_GE(handler_calls, size_t(rounds) * 4 * 240);
  fs::remove_all(dir);
}

// Where a call site names its callee (an instrumented
// function), the callee's enter takes the site's begin time and the site's
// end the callee's exit time: one clock read each side of the call, not two.
// A site naming another function, an argument's site in between, or another
// exit newest: each probe reads its own clock. A named callee that recorded
// nothing leaves one SITE_SPAN slot, as any site does.
// The ownership map is 4 MiB by default (a larger one cost
// pgbench a TLB miss a lookup); an object it has no room for is counted in
// the process file, which the analysis warns of, and its wake-up names no
// waker. 3000 objects waited on fill a map of 1024 slots; the handoff's
// contended wait after them is on one more.
TEST(Runtime, AnObjectTheOwnershipMapHasNoRoomForIsCounted) {
  for (bool small : {true, false}) {
    SCOPED_TRACE(small ? "VPROF_OWNERSHIP_SLOTS=1024" : "the default");
    std::string dir = fresh_dir(small ? "manyobjects-small" : "manyobjects");
    std::map<std::string, std::string> env = {{"VPROF_MIN_WAIT_NS", "1000"}, {"VPROF_MUTEX_RELEASES", "0"}};
    if (small) env["VPROF_OWNERSHIP_SLOTS"] = "1024";
    ASSERT_EQ(run_counted(dir, {"manyobjects", "3000"}, env), 0);
    const auto p = vprof::trace::read_process_files(dir);
    Trace t = read_ok(dir);
    size_t named = 0;
    for (const auto &s : t.threads)
      for (const auto &e : s.events)
        if (e.kind == Kind::WaitEnd && e.waker_tid && e.waker_tid != s.tid) ++named;
    if (small) {
      EXPECT_GE(p.ownership_misses, 3000u + 1 - 1024);
      EXPECT_EQ(named, 0u) << "the contended wait's object had no slot";
    } else {
      EXPECT_EQ(p.ownership_misses, 0u);
      EXPECT_EQ(named, 1u);
    }
  }
}

TEST(Runtime, ASiteAndTheCalleeItNamesShareTheirClockReads) {
  std::string dir = fresh_dir("sharedclock");
  ASSERT_EQ(run_counted(dir, {"sharedclock"}), 0);
  Trace t = read_ok(dir);
  ASSERT_EQ(t.threads.size(), 1u);
  std::vector<std::pair<Kind, uint64_t>> got;
  std::vector<int64_t> ts;
  for (const auto &e : t.threads[0].events)
    if (e.kind == Kind::SiteBegin || e.kind == Kind::SiteEnd || e.kind == Kind::FuncEnter ||
        e.kind == Kind::FuncExit) {
      got.emplace_back(e.kind, e.arg);
      ts.push_back(e.ts);
    }
  const Kind B = Kind::SiteBegin, E = Kind::SiteEnd, In = Kind::FuncEnter, Out = Kind::FuncExit;
  const std::vector<std::pair<Kind, uint64_t>> want = {
      {In, 1}, {B, 2}, {In, 3},  {Out, 3}, {E, 2},  {B, 4},   {In, 5}, {Out, 5}, {E, 4},  {B, 6},
      {B, 8},  {E, 8}, {In, 7},  {Out, 7}, {In, 3}, {Out, 3}, {E, 6},  {B, 10},  {E, 10}, {Out, 1}};
  ASSERT_EQ(got, want);
  for (size_t i = 1; i < ts.size(); ++i) ASSERT_GE(ts[i], ts[i - 1]) << "event " << i;
  const int64_t us100 = 100000;  // ns: half a spin
  EXPECT_EQ(ts[2], ts[1]) << "3's enter shares its site's begin";
  EXPECT_GT(ts[3] - ts[2], us100) << "the call keeps its length";
  EXPECT_EQ(ts[4], ts[3]) << "the site's end shares 3's exit";
  EXPECT_GT(ts[6] - ts[5], us100) << "5 is not the function site 4 names";
  EXPECT_GT(ts[8] - ts[7], us100);
  EXPECT_GT(ts[12] - ts[10], us100) << "an argument's site came between site 6 and 7's enter";
  EXPECT_GT(ts[16] - ts[15], us100) << "3's exit, not 7's, was newest at site 6's end";
  EXPECT_GT(ts[18] - ts[17], us100) << "site 10's span keeps its length";
}

// PostgreSQL's make, without --enable-depend, did not rebuild the files that
// include a header vprof instrumented, and the session's binary held code of
// two instrumentations, which must be said. Each rewritten file registers
// its own id, which the manifest lists; the process file keeps every
// distinct id, and an id the manifest does not list is a file the build did
// not recompile.
TEST(Runtime, AProgramBuiltFromTwoInstrumentationsIsSaid) {
  using vprof::trace::build_mismatch;
  using vprof::trace::read_process_files;
  std::string one = fresh_dir("manifest-one"), two = fresh_dir("manifest-two");
  ASSERT_EQ(run_counted(one, {"manifests", "aaaa000000000001"}), 0);
  ASSERT_EQ(run_counted(two, {"manifests", "aaaa000000000001", "bbbb000000000002", "aaaa000000000001"}), 0);
  auto p1 = read_process_files(one), p2 = read_process_files(two);
  ASSERT_EQ(p1.manifests.size(), 1u);
  EXPECT_EQ(p1.manifests.begin()->first, "aaaa000000000001");
  EXPECT_EQ(p1.manifests.begin()->second, "/nonexistent/manifest.json");
  EXPECT_EQ(build_mismatch(p1, one), "");
  EXPECT_EQ(build_mismatch(p1, one, {"aaaa000000000001"}), "");
  std::string other = build_mismatch(p1, one, {"cccc000000000003"});
  EXPECT_NE(other.find("built from another instrumentation (id aaaa000000000001)"), std::string::npos) << other;
  // Two files' ids, both listed: one instrumentation.
  ASSERT_EQ(p2.manifests.size(), 2u) << "each distinct id once";
  EXPECT_EQ(build_mismatch(p2, two, {"aaaa000000000001", "bbbb000000000002", "cccc000000000003"}), "");
  // One of them not listed: a file the build left as it was.
  std::string stale = build_mismatch(p2, two, {"aaaa000000000001", "cccc000000000003"});
  EXPECT_EQ(stale.rfind(two + ": the traced program holds code of two or more instrumentations (id bbbb000000000002", 0),
            0u) << stale;
  EXPECT_NE(stale.find("--enable-depend"), std::string::npos) << stale;
}

// More distinct ids than a process file holds: the first 256 are kept, and
// the reader says the rest were not checked.
TEST(Runtime, MoreIdsThanAProcessFileHoldsAreSaid) {
  std::string dir = fresh_dir("manifest-many");
  ASSERT_EQ(run_counted(dir, {"manyids", "300"}), 0);
  auto p = vprof::trace::read_process_files(dir);
  EXPECT_EQ(p.manifests.size(), size_t(VPROF_MANIFEST_IDS));
  EXPECT_EQ(p.manifests.count("0000000000000001"), 1u);
  EXPECT_EQ(p.manifests.count("0000000000000100"), 1u) << "the 256th";
  EXPECT_EQ(p.manifests.count("0000000000000101"), 0u) << "the 257th is not kept";
  EXPECT_TRUE(p.ids_overflow);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("not checked"), std::string::npos) << p.warnings[0];
}

TEST(Runtime, SixteenThreadsMillionEventsEachAllPresentInOrder) {
  std::string dir = fresh_dir("16x1m");
  ASSERT_EQ(run_counted(dir, {"threads", "16", "500000"}), 0);  // 1M records per thread
  Trace t = read_ok(dir);
  ASSERT_EQ(t.threads.size(), 16u);  // the main thread recorded nothing: no file
  size_t workers = 0;
  for (const auto &s : t.threads) {
    if (s.events.size() <= 1) continue;
    ++workers;
    expect_pairs(s, 500000);
    EXPECT_TRUE(s.clean_exit);
  }
  EXPECT_EQ(workers, 16u);
  EXPECT_EQ(t.dropped_records, 0u);
  fs::remove_all(dir);
}

// Small rings, so that threads switch rings thousands of times,
// with the background writer (VPROF_WRITER=1: it appends, or the thread does
// when it lags) and without it (0: every thread appends its own rings, no
// thread of vprof's in the program). Every record is there, none dropped.
TEST(Runtime, SmallRingsWithAndWithoutTheWriterKeepEveryRecord) {
  for (const char *writer : {"1", "0"}) {
    SCOPED_TRACE(std::string("VPROF_WRITER=") + writer);
    std::string dir = fresh_dir(std::string("rings-") + writer);
    ASSERT_EQ(run_counted(dir, {"threads", "4", "200000"},
                          {{"VPROF_CHUNK_KB", "16"}, {"VPROF_WRITER", writer}}),
              0);
    Trace t = read_ok(dir);
    size_t workers = 0;
    for (const auto &s : t.threads) {
      if (s.events.size() <= 1) continue;
      ++workers;
      expect_pairs(s, 200000);
      EXPECT_TRUE(s.clean_exit);
      // 400 000 records in rings of 1022 slots: 391 switches or more, each a
      // pause of the recorder's on this thread, and one for the file.
      expect_recorder_spans(s, 1 + 400000 / 1022);
    }
    EXPECT_EQ(workers, 4u);
    EXPECT_EQ(t.dropped_records, 0u);
    fs::remove_all(dir);
  }
}

TEST(Runtime, TenThousandShortLivedThreadsAllComplete) {
  std::string dir = fresh_dir("short");
  ASSERT_EQ(run_counted(dir, {"short", "10000"}), 0);
  Trace t = read_ok(dir);
  size_t workers = 0;
  for (const auto &s : t.threads) {
    if (s.events.size() <= 1) continue;
    ++workers;
    expect_pairs(s, 5);
    EXPECT_TRUE(s.clean_exit) << s.file;
  }
  EXPECT_EQ(workers, 10000u);
  fs::remove_all(dir);
}

TEST(Runtime, ForkedChildWritesItsOwnCompleteFiles) {
  std::string dir = fresh_dir("fork");
  ASSERT_EQ(run_counted(dir, {"fork", "1000"}), 0);
  Trace t = read_ok(dir);
  std::set<uint32_t> pids;
  for (const auto &s : t.threads) pids.insert(s.pid);
  ASSERT_EQ(pids.size(), 2u);
  uint32_t parent = *pids.begin() < *pids.rbegin() ? *pids.begin() : *pids.rbegin();
  for (const auto &s : t.threads) {
    EXPECT_TRUE(s.clean_exit) << s.file;
    if (s.pid == parent) {
      expect_pairs(s, 1000, 2);  // before and after the fork, one file
    } else {
      EXPECT_EQ(s.ppid, parent);
      expect_pairs(s, 1000);  // the child's main thread and its thread
    }
  }
  EXPECT_EQ(t.threads.size(), 3u);
}

TEST(Runtime, SigkillLeavesEveryRecordBeforeTheKillReadable) {
  std::string dir = fresh_dir("kill");
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    setenv("VPROF_TRACE_DIR", dir.c_str(), 1);
    execl(WORKLOAD_PATH, WORKLOAD_PATH, "kill", "200000", (char *)nullptr);
    _exit(127);
  }
  close(out[1]);
  char buf[16] = {};
  ASSERT_GT(read(out[0], buf, 6), 0);
  ASSERT_STREQ(buf, "ready\n");
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  close(out[0]);
  ASSERT_TRUE(WIFSIGNALED(st));

  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->count(vprof::trace::Severity::Error), 0u);
  ASSERT_EQ(t->threads.size(), 1u);
  const auto &s = t->threads[0];
  EXPECT_TRUE(s.torn);
  EXPECT_FALSE(s.clean_exit);
  // Every record up to the kill: the first 200000 pairs, then an unbroken
  // prefix of the 1000-pair rounds (the reader stops at the first unwritten slot).
  // The runtime's own PREEMPTED records (drained at chunk switches, as many
  // as the machine's load makes) and RECORDER records (its pauses) are whole
  // too; the program's are counted.
  expect_recorder_spans(s, 2);
  const std::vector<vprof::trace::Event> ev = program_events(s);
  ASSERT_GE(ev.size(), 400000u);
  for (size_t i = 0; i < ev.size(); ++i) {
    size_t pair = i / 2;
    uint64_t want = pair < 200000 ? pair : (pair - 200000) % 1000;
    ASSERT_EQ(ev[i].arg, want) << "record " << i;
    ASSERT_EQ(ev[i].kind, i % 2 ? Kind::FuncExit : Kind::FuncEnter) << "record " << i;
  }
  bool warned = false;
  for (const auto &d : t->diagnostics)
    warned |= d.severity == vprof::trace::Severity::Warning &&
              d.message.find("no thread-exit record") != std::string::npos;
  EXPECT_TRUE(warned) << "the torn tail is reported";
}

TEST(Runtime, TinyBudgetDropsAreCountedExactlyAndNeverBlock) {
  std::string dir = fresh_dir("budget");
  // 1 MiB for the process in 64 KiB chunks; 2 threads x 2 M records need 64 MiB.
  ASSERT_EQ(run_counted(dir, {"budget", "2", "1000000"},
                         {{"VPROF_BUFFER_MB", "1"}, {"VPROF_CHUNK_KB", "64"}}),
            0);
  Trace t = read_ok(dir);
  uint64_t dropped = 0, kept = 0;
  size_t saw_drop_marker = 0;
  for (const auto &s : t.threads) {
    if (s.events.size() <= 1 && s.dropped_records == 0) continue;  // main thread
    uint64_t pairs_kept = 0;
    for (const auto &e : s.events)
      if (e.kind == Kind::FuncEnter || e.kind == Kind::FuncExit) ++pairs_kept;
    // Exact: every record the thread tried to write is either here or counted.
    EXPECT_EQ(pairs_kept + s.dropped_records, 2000000u) << s.file;
    // What was kept is a prefix, in order.
    const auto ev = program_events(s);
    for (uint64_t i = 0; i < pairs_kept; ++i) ASSERT_EQ(ev[i].arg, i / 2);
    saw_drop_marker += s.drop_begin_ts >= 0;
    dropped += s.dropped_records;
    kept += pairs_kept;
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_LE(kept * 16, 1u << 20) << "the budget is respected";
  EXPECT_EQ(dropped, t.dropped_records);
  EXPECT_GE(saw_drop_marker, 1u);
}

TEST(Runtime, OffWithoutTraceDirWritesNothing) {
  std::string dir = fresh_dir("off");
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("VPROF_TRACE_DIR");
    if (chdir(dir.c_str()) != 0) _exit(3);
    execl(WORKLOAD_PATH, WORKLOAD_PATH, "threads", "2", "1000", (char *)nullptr);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_TRUE(fs::is_empty(dir));
}
