// The reader on hand-made files: exact decoding, and every kind of damage
// reported with the file and offset, never a crash.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/read/trace_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/synth_trace.h"

namespace fs = std::filesystem;
using vprof::testing::SynthThread;
using vprof::trace::Kind;
using vprof::trace::Severity;

namespace {

std::string fresh_dir(const std::string &name) { return vprof::testing::fresh_dir("vprof-rd", name); }

bool has_diag(const vprof::trace::Trace &t, Severity s, const std::string &file_end,
              uint64_t offset, const std::string &text) {
  for (const auto &d : t.diagnostics)
    if (d.severity == s && d.file.size() >= file_end.size() &&
        d.file.compare(d.file.size() - file_end.size(), file_end.size(), file_end) == 0 &&
        d.offset == offset && d.message.find(text) != std::string::npos)
      return true;
  return false;
}

std::string dump(const vprof::trace::Trace &t) {
  std::string s;
  for (const auto &d : t.diagnostics) s += d.str() + "\n";
  return s;
}

}  // namespace

TEST(Reader, DecodesEveryKindWithExactTimes) {
  std::string dir = fresh_dir("exact");
  SynthThread a(dir, 1, 11), b(dir, 1, 12);
  a.interval_begin(100, 7, "NewOrder", "bob");
  a.fn_enter(110, 1);
  a.site_begin(120, 5);
  a.wait_begin(130, 0xabc);
  b.release(150, 0xabc);
  a.wait_end(170, 12, 150);
  a.site_end(180, 5);
  a.enqueue(185, 0x77);
  b.dequeue(190, 0x77);
  b.join(191, 7);
  b.leave(195);
  a.fn_exit(200, 1);
  a.interval_end(210, 7);
  a.close();
  b.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->diagnostics.empty()) << dump(*t);
  ASSERT_EQ(t->threads.size(), 2u);
  const auto &ea = t->threads[0].events;
  ASSERT_EQ(ea.size(), 10u);
  EXPECT_EQ(ea[0].kind, Kind::IntervalBegin);
  EXPECT_EQ(ea[0].ts, 100);
  EXPECT_EQ(t->labels[ea[0].type_label], "NewOrder");
  EXPECT_EQ(t->labels[ea[0].client_label], "bob");
  EXPECT_EQ(ea[4].kind, Kind::WaitEnd);
  EXPECT_EQ(ea[4].arg, 0xabcu) << "wait-end carries the object of its wait-begin";
  EXPECT_EQ(ea[4].waker_tid, 12u);
  EXPECT_EQ(ea[4].release_ts, 150);
  EXPECT_EQ(ea[4].role, VPROF_SYNC_MUTEX);
  EXPECT_EQ(ea.back().kind, Kind::ThreadExit);
  EXPECT_TRUE(t->threads[0].clean_exit);
}

TEST(Reader, WaitEndMatchesTheLatestReleaseWithTheRecordedLowBits) {
  std::string dir = fresh_dir("match");
  SynthThread a(dir, 1, 11), b(dir, 1, 12);
  b.release(100, 0x1);
  b.release(140, 0x1);  // the one that woke a
  b.release(300, 0x1);  // after the wake: not it
  a.wait_begin(120, 0x1);
  a.wait_end(160, 12, 140);
  a.close();
  b.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->threads[0].events[1].release_ts, 140);
}

TEST(Reader, MissingWakerFallsBackToTheRuntimeDelta) {
  // A condvar's signal is always recorded: its absence is said. A lock's
  // release is not recorded by default (VPROF_MUTEX_RELEASES): the delta is
  // the way, and nothing is missing.
  for (uint32_t role : {uint32_t{VPROF_SYNC_CONDVAR}, uint32_t{VPROF_SYNC_MUTEX}}) {
    SCOPED_TRACE(role);
    std::string dir = fresh_dir("nowaker" + std::to_string(role));
    SynthThread a(dir, 1, 11);
    a.wait_begin(120, 0x1, role);
    a.wait_end(160, 99, 150);  // thread 99 left no file
    a.close();
    auto t = vprof::trace::read_trace_dir(dir);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->threads[0].events[1].release_ts, 150);
    EXPECT_EQ(t->count(Severity::Info), role == VPROF_SYNC_MUTEX ? 0u : 1u) << dump(*t);
  }
}

// Each process converts its ticks with its own anchor pair; two pairs can
// disagree (a forked child's first pair once read 2-4 us late). A lock's
// release, not recorded, comes as a tick delta from the waiter's wake: its
// time is the waker's tick in the waker's clock, where the waker's own
// records put it (before it left the function it released in), not the
// waiter's. Process 2's pair here reads 30 ns later than process 1's.
TEST(Reader, AnUnrecordedReleaseIsTimedInTheWakersClock) {
  std::string dir = fresh_dir("wakerclock");
  SynthThread holder(dir, 1, 11), waiter(dir, 2, 21);
  waiter.header().anchor0_ns = 30;  // ns = ticks + 30 in process 2
  holder.fn_enter(100, 5);
  holder.fn_exit(152, 5);   // left function 5 two ticks after its release at 150
  waiter.wait_begin(120, 0x1);
  waiter.wait_end(170, 11, 150);  // woke 20 ticks after the release
  holder.close();
  waiter.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->threads.size(), 2u);
  const auto &we = t->threads[1].events[1];
  ASSERT_EQ(we.kind, Kind::WaitEnd);
  EXPECT_EQ(we.ts, 200) << "the wake in the waiter's clock";
  EXPECT_EQ(we.release_ts, 150) << "the release in the holder's clock: inside its function 5";
  EXPECT_LT(we.release_ts, t->threads[0].events[1].ts);
  // A waker that left no file: the waiter's clock is the only one.
  std::string dir2 = fresh_dir("wakerclock-gone");
  SynthThread alone(dir2, 2, 21);
  alone.header().anchor0_ns = 30;
  alone.wait_begin(120, 0x1);
  alone.wait_end(170, 11, 150);
  alone.close();
  auto t2 = vprof::trace::read_trace_dir(dir2);
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->threads[0].events[1].release_ts, 180);
}

// A tid reused by a later process: the release is timed in the clock of
// the process that had begun by the wake, the latest of them.
TEST(Reader, AReusedWakerTidTakesTheClockOfTheProcessRunningAtTheWake) {
  std::string dir = fresh_dir("wakerclock-reused");
  SynthThread early(dir, 1, 11), late(dir, 3, 11), waiter(dir, 2, 21);
  late.header().anchor0_ticks = 1000;
  late.header().anchor0_ns = 1000 + 40;  // process 3 began at tick 1000, its pair 40 ns later
  early.fn_enter(10, 5);
  early.fn_exit(20, 5);
  late.fn_enter(1100, 5);
  late.fn_exit(1152, 5);
  waiter.wait_begin(1120, 0x1);
  waiter.wait_end(1170, 11, 1150);
  early.close();
  late.close();
  waiter.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  for (const auto &th : t->threads)
    if (th.pid == 2) EXPECT_EQ(th.events[1].release_ts, 1190);
}

TEST(Reader, FailedTryLockIsNotAcquired) {
  std::string dir = fresh_dir("try");
  SynthThread a(dir, 1, 11);
  a.wait_begin(10, 0x1, VPROF_SYNC_MUTEX_TRY);
  a.wait_end(12, 0, 0, /*acquired=*/false);
  a.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->threads[0].events[1].acquired, 0);
  EXPECT_EQ(t->threads[0].events[1].release_ts, -1);
}

TEST(Reader, TruncatedHeaderIsAnErrorNamingFileAndOffset) {
  std::string dir = fresh_dir("trunc");
  SynthThread a(dir, 1, 11);
  a.fn_enter(1, 1);
  a.close();
  fs::resize_file(a.path(), 100);
  SynthThread b(dir, 1, 12);  // a good file beside it is still read
  b.fn_enter(1, 1);
  b.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(has_diag(*t, Severity::Error, "t-1-11.vpt", 100, "truncated header")) << dump(*t);
  EXPECT_EQ(t->threads.size(), 1u);
}

TEST(Reader, BadMagicIsAnError) {
  std::string dir = fresh_dir("magic");
  std::ofstream(dir + "/t-1-1.vpt") << std::string(5000, 'x');
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(has_diag(*t, Severity::Error, "t-1-1.vpt", 0, "bad magic")) << dump(*t);
}

TEST(Reader, NewerUnreadableVersionIsAnError) {
  std::string dir = fresh_dir("version");
  SynthThread a(dir, 1, 11);
  a.header().version = VPROF_TRACE_VERSION + 2;
  a.header().min_readable = VPROF_TRACE_VERSION + 1;
  a.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(has_diag(*t, Severity::Error, "t-1-11.vpt", 8,
                       "needs a reader of version " + std::to_string(VPROF_TRACE_VERSION + 1)))
      << dump(*t);
}

// A file older than format 8 (or one of this format relabelled so, which the
// old layout would misread) is refused, saying why.
TEST(Reader, AFileOlderThanAnyThisVprofReadsIsRefused) {
  std::string dir = fresh_dir("relabelled");
  SynthThread a(dir, 1, 11);
  a.header().version = 2;
  a.header().min_readable = 2;
  a.fn_enter(5, 1);
  a.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(has_diag(*t, Severity::Error, "t-1-11.vpt", 8,
                       "format version 2: written by a vprof older than any this one reads (format " + std::to_string(VPROF_TRACE_OLDEST_READ) + " and later)"))
      << dump(*t);
  EXPECT_TRUE(t->threads.empty());
}

TEST(Reader, NewerButReadableVersionIsRead) {
  std::string dir = fresh_dir("compat");
  SynthThread a(dir, 1, 11);
  a.header().version = VPROF_TRACE_VERSION + 1;
  a.header().min_readable = 1;
  a.fn_enter(5, 1);
  a.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count(Severity::Error), 0u);
  EXPECT_EQ(t->threads[0].events.size(), 2u);
}

TEST(Reader, CorruptedKindStopsTheChunkWithAnErrorAtItsOffset) {
  std::string dir = fresh_dir("corrupt");
  SynthThread a(dir, 1, 11);
  a.fn_enter(1, 1);
  a.raw((2ull << 8) | 200, 0);  // kind 200 does not exist
  a.fn_exit(3, 1);
  a.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(has_diag(*t, Severity::Error, "t-1-11.vpt", 4096 + 16, "unknown record kind 200"))
      << dump(*t);
  EXPECT_EQ(t->threads[0].events.size(), 1u);
}

TEST(Reader, TornTailIsAWarningAndEverythingBeforeItIsKept) {
  std::string dir = fresh_dir("torn");
  SynthThread a(dir, 1, 11);
  for (uint32_t i = 0; i < 100; ++i) a.fn_enter(i, i);
  a.close(/*thread_exit=*/false);
  fs::resize_file(a.path(), 4096 + 50 * 16 + 7);  // a kill mid-slot
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count(Severity::Error), 0u) << dump(*t);
  EXPECT_EQ(t->threads[0].events.size(), 50u);
  EXPECT_TRUE(t->threads[0].torn);
  EXPECT_TRUE(has_diag(*t, Severity::Warning, "t-1-11.vpt", 4096 + 50 * 16 + 7, "no thread-exit"));
}

TEST(Reader, CutLabeledRecordIsAnError) {
  std::string dir = fresh_dir("cutlabel");
  SynthThread a(dir, 1, 11);
  a.raw((1ull << 8) | VPROF_K_IV_BEGIN_LABELED, 5);  // its extension slot is missing
  a.close(false);
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(has_diag(*t, Severity::Error, "t-1-11.vpt", 4096, "cut short")) << dump(*t);
}

TEST(Reader, TimeRegressionIsClampedAndWarned) {
  std::string dir = fresh_dir("regress");
  SynthThread a(dir, 1, 11);
  a.fn_enter(100, 1);
  a.fn_exit(90, 1);
  a.close(true, 120);
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->threads[0].events[1].ts, 100);
  EXPECT_TRUE(has_diag(*t, Severity::Warning, "t-1-11.vpt", 4096 + 16, "went backwards"));
}

TEST(Reader, DroppedRecordsAreReported) {
  std::string dir = fresh_dir("drops");
  SynthThread a(dir, 1, 11);
  a.fn_enter(1, 1);
  a.drop_begin(2);
  a.header().dropped_records = 42;
  a.close();
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dropped_records, 42u);
  EXPECT_EQ(t->threads[0].drop_begin_ts, 2);
  EXPECT_TRUE(has_diag(*t, Severity::Info, "t-1-11.vpt", 88, "42 records dropped"));
}

TEST(Reader, EmptyOrMissingDirectoryFailsWithItsName) {
  std::string dir = fresh_dir("empty");
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find(dir), std::string::npos);
  auto m = vprof::trace::read_trace_dir(dir + "/nope");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("cannot open"), std::string::npos);
}

namespace {

// A two-ring file by hand: data chunk 0 holds function 1's pair, ring 1 (the
// pending one) function 2's, ring 0 (the current one) function 3's and the
// thread's exit. `pending_chunk` says whether ring 1 still waits to become
// data chunk 1 (1) or was appended already (0: not to be read again).
void write_two_ring_file(const std::string &dir, uint64_t pending_chunk) {
  const uint64_t chunk = 4096;
  vprof_file_header h{};
  std::memcpy(h.magic, VPROF_TRACE_MAGIC, 8);
  h.version = VPROF_TRACE_VERSION;
  h.min_readable = VPROF_TRACE_MIN_READABLE;
  h.header_bytes = VPROF_HEADER_BYTES;
  h.pid = 1;
  h.tid = 21;
  h.clock_source = VPROF_CLOCK_MONOTONIC;
  h.chunk_bytes = chunk;
  h.ticks_per_ns = 1.0;
  h.flags = VPROF_FLAG_CLOSED;
  h.data_chunks = 1;
  h.ring_valid = 1;
  h.cur_ring = 0;
  h.pending_chunk = pending_chunk;
  auto slot = [](uint64_t ts, uint32_t kind, uint64_t arg) { return vprof_slot{(ts << VPROF_TS_SHIFT) | kind, arg}; };
  std::vector<vprof_slot> ring0 = {slot(300, VPROF_K_FUNC_ENTER, 3), slot(310, VPROF_K_FUNC_EXIT, 3),
                                   slot(320, VPROF_K_THREAD_EXIT, 0)};
  std::vector<vprof_slot> ring1 = {slot(200, VPROF_K_FUNC_ENTER, 2), slot(210, VPROF_K_FUNC_EXIT, 2)};
  std::vector<vprof_slot> data0 = {slot(100, VPROF_K_FUNC_ENTER, 1), slot(110, VPROF_K_FUNC_EXIT, 1)};
  // As a full chunk would be: records up to its two reserved slots.
  while (data0.size() < chunk / VPROF_SLOT_BYTES - 2) data0.push_back(slot(110, VPROF_K_FUNC_EXIT, 1));
  std::ofstream f(dir + "/t-1-21.vpt", std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(&h), sizeof h);
  for (auto *part : {&ring0, &ring1, &data0}) {
    std::vector<vprof_slot> c(chunk / VPROF_SLOT_BYTES, vprof_slot{0, 0});
    std::copy(part->begin(), part->end(), c.begin());
    f.write(reinterpret_cast<const char *>(c.data()), (std::streamsize)chunk);
  }
}

std::vector<uint64_t> function_ids(const vprof::trace::Trace &t) {
  std::vector<uint64_t> ids;
  for (const auto &e : t.threads.at(0).events)
    if (e.kind == Kind::FuncEnter && (ids.empty() || ids.back() != e.arg)) ids.push_back(e.arg);
  return ids;
}

}  // namespace

TEST(Reader, TwoRingsReadDataThenThePendingRingThenTheCurrentOne) {
  // The runtime's writer had not appended ring 1 yet (or the process died
  // first): its records come after the data chunks and before the current ring's.
  std::string dir = fresh_dir("two-rings");
  write_two_ring_file(dir, 1);
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count(Severity::Error), 0u) << dump(*t);
  EXPECT_EQ(function_ids(*t), (std::vector<uint64_t>{1, 2, 3}));

  // Appended already (data_chunks passed pending_chunk): ring 1 is stale
  // (being zeroed) and must not be read twice.
  std::string dir2 = fresh_dir("two-rings-appended");
  write_two_ring_file(dir2, 0);
  auto t2 = vprof::trace::read_trace_dir(dir2);
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->count(Severity::Error), 0u) << dump(*t2);
  EXPECT_EQ(function_ids(*t2), (std::vector<uint64_t>{1, 3}));
}

// A thread's events as (kind, arg, ts), its ThreadExit left out: what the
// reader made of the records a test wrote.
using EventRow = std::tuple<Kind, uint64_t, int64_t>;
std::vector<EventRow> event_rows(const vprof::trace::ThreadStream &th) {
  std::vector<EventRow> out;
  for (const auto &e : th.events)
    if (e.kind != Kind::ThreadExit) out.emplace_back(e.kind, e.arg, e.ts);
  return out;
}

// Trace format 9: calls of one site in a row are one SITE_RUN. It reads as
// the time between the calls (the caller's), then one begin and end around
// their sum; a sum past the run's length is capped at it; a run whose
// thread was killed while its first two calls became one (the extension
// written, its head still a span) reads as that span, and the data ends at
// the extension.
TEST(Reader, RunsReadAsTheTimeBetweenThenOneCallAsLongAsTheirSum) {
  std::string dir = vprof::testing::fresh_dir("vprof-reader", "runs");
  {
    SynthThread a(dir, 1, 11);
    a.fn_enter(1000, 1);
    a.site_run(1010, 7, 30000, 20000, 1000);  // 1000 calls, 20 us of them in 30 us
    a.site_run(40000, 8, 500, 900, 3);        // damaged: the sum past the length
    a.fn_exit(50000, 1);
    a.close();
  }
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->threads.size(), 1u);
  EXPECT_EQ(t->count(Severity::Warning), 0u);
  std::vector<EventRow> want = {
      {Kind::FuncEnter, 1, 1000}, {Kind::SiteBegin, 7, 11010}, {Kind::SiteEnd, 7, 31010},
      {Kind::SiteBegin, 8, 40000}, {Kind::SiteEnd, 8, 40500}, {Kind::FuncExit, 1, 50000}};
  const std::vector<EventRow> got = event_rows(t->threads[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "event " << i;
  EXPECT_EQ(t->threads[0].events[2].type_label, 1000u) << "a run's end says how many calls it ends";

  std::string cut = vprof::testing::fresh_dir("vprof-reader", "runs-cut");
  {
    SynthThread a(cut, 1, 11);
    a.fn_enter(1000, 1);
    a.site_span(1010, 7, 60);                    // the head: still a span, of both calls
    a.raw(50ull << VPROF_TS_SHIFT, 7 | 2ull << 32);  // the extension: kind bits 0
    a.close();
  }
  auto c = vprof::trace::read_trace_dir(cut);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->threads.size(), 1u);
  want = {{Kind::FuncEnter, 1, 1000}, {Kind::SiteBegin, 7, 1010}, {Kind::SiteEnd, 7, 1070}};
  EXPECT_EQ(event_rows(c->threads[0]), want);
}

// Trace format 4: a call with nothing inside is one SITE_SPAN slot. It reads
// as the site's begin and end; a length past the reader's step check is
// kept; a damaged length that runs past the next record stops there; a begin
// whose span was cut short by a kill (its length written, not its kind)
// reads as a begin of the same site.
TEST(Reader, SpansReadAsABeginAndAnEnd) {
  std::string dir = vprof::testing::fresh_dir("vprof-reader", "spans");
  {
    SynthThread a(dir, 1, 11);
    a.fn_enter(1000, 1);
    a.site_span(1010, 7, 25);
    a.site_span(1040, 8, 5000000);         // 5 ms: longer than the step check
    a.site_span(5001100, 9, 4000000000u);  // damaged: past the next record
    a.fn_enter(5002000, 2);
    a.raw((5003000ull << VPROF_TS_SHIFT) | VPROF_K_SITE_BEGIN, 10 | (123ull << 32));  // cut short
    a.fn_exit(5004000, 2);
    a.fn_exit(5005000, 1);
    a.close();
  }
  auto t = vprof::trace::read_trace_dir(dir);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->threads.size(), 1u);
  EXPECT_EQ(t->count(Severity::Warning), 0u);
  std::vector<EventRow> want = {
      {Kind::FuncEnter, 1, 1000},     {Kind::SiteBegin, 7, 1010},    {Kind::SiteEnd, 7, 1035},
      {Kind::SiteBegin, 8, 1040},     {Kind::SiteEnd, 8, 5001040},   {Kind::SiteBegin, 9, 5001100},
      {Kind::SiteEnd, 9, 5002000},    {Kind::FuncEnter, 2, 5002000}, {Kind::SiteBegin, 10, 5003000},
      {Kind::FuncExit, 2, 5004000},   {Kind::FuncExit, 1, 5005000}};
  const std::vector<EventRow> got = event_rows(t->threads[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "event " << i;
}
