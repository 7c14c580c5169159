// Damaged trace files through the whole analysis:
// a damaged file costs only its damaged part, the other files are analyzed
// in full, and the report's first line says what was lost.
//
// The trace: four threads, each with its own intervals (ids tid * 100000 +
// i), in 4 KiB chunks so that a file has a ring and several data chunks laid
// out as the runtime lays them out (synth_trace.h). One file is damaged at
// many byte offsets; for each, every interval of the other three files must
// still be analyzed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/process_files.h"
#include "analyzer/read/trace_stream.h"
#include "analyzer/report/reporter.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
namespace analyzer = vprof::analyzer;
namespace trace = vprof::trace;
using vprof::testing::SynthThread;

namespace {

constexpr uint64_t kChunk = 4096;
constexpr uint32_t kIntervals = 300;  // per thread: 4 records each, about 5 chunks
const uint32_t kTids[] = {11, 12, 13, 14};
constexpr uint32_t kDamaged = 12;

std::string fresh_dir(const std::string &name) {
  return vprof::testing::fresh_dir("vprof-damage", name);
}

uint64_t interval_id(uint32_t tid, uint32_t i) { return uint64_t{tid} * 100000 + i + 1; }

// Writes the four-thread trace into dir; returns the damaged thread's file.
std::string write_trace(const std::string &dir) {
  std::string damaged;
  for (uint32_t tid : kTids) {
    SynthThread t(dir, 1, tid, kChunk);
    for (uint32_t i = 0; i < kIntervals; ++i) {
      uint64_t ts = 1000 + uint64_t{i} * 100;
      t.interval_begin(ts, interval_id(tid, i));
      t.fn_enter(ts + 10, 1);
      t.fn_exit(ts + 50 + (i * tid) % 17, 1);
      t.interval_end(ts + 90, interval_id(tid, i));
    }
    t.close();
    if (tid == kDamaged) damaged = t.path();
  }
  return damaged;
}

struct Result {
  std::unique_ptr<analyzer::Analysis> analysis;
  std::map<uint32_t, size_t> intervals_by_tid;  // analyzed intervals per writing thread
  std::string headline;
  nlohmann::json json;
  bool readable = true;  // some file could be read (else `vprof analyze` exits 2)
};

Result analyze(const std::string &dir) {
  Result res;
  auto stream = trace::TraceStream::open(dir);
  EXPECT_TRUE(stream.ok());
  if (!stream.ok()) return res;
  if ((*stream)->sources().empty()) {
    res.readable = false;
    return res;
  }
  analyzer::AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto run = analyzer::analyze_run(**stream, analyzer::Names{}, opt, 0);
  EXPECT_TRUE(run.ok());
  if (!run.ok()) return res;
  for (const auto &row : (*run)->paths.rows) ++res.intervals_by_tid[uint32_t(row.id / 100000)];
  std::vector<std::unique_ptr<analyzer::RunAnalysis>> runs;
  runs.push_back(std::move(run).value());
  res.analysis = analyzer::combine(std::move(runs), opt);
  std::ostringstream table;
  EXPECT_TRUE(analyzer::make_terminal_reporter()->write(*res.analysis, table).ok());
  res.headline = table.str().substr(0, table.str().find('\n'));
  res.json = analyzer::to_json(*res.analysis);
  return res;
}

// Copies the pristine trace into a fresh directory; returns the damaged
// thread's file there.
std::string copy_trace(const std::string &from, const std::string &to) {
  fs::remove_all(to);
  fs::copy(from, to);
  return to + "/t-1-" + std::to_string(kDamaged) + ".vpt";
}

void expect_others_whole(const Result &r, const std::string &what) {
  for (uint32_t tid : kTids) {
    if (tid == kDamaged) continue;
    auto it = r.intervals_by_tid.find(tid);
    EXPECT_EQ(it == r.intervals_by_tid.end() ? 0 : it->second, kIntervals)
        << what << ": intervals of thread " << tid << " (undamaged)";
  }
}

// Offsets worth cutting at: in the header, the ring, each chunk's start,
// middle and a slot's middle, the last bytes; and a sweep every 509 bytes.
std::vector<uint64_t> cut_offsets(uint64_t size) {
  std::set<uint64_t> at = {0, 1, 8, 100, 191, 200, 4095, 4096, 4097, 4104, 4112};
  for (uint64_t c = 4096; c < size; c += kChunk)
    for (uint64_t d : {uint64_t{0}, uint64_t{8}, uint64_t{16}, kChunk / 2, kChunk / 2 + 7,
                       kChunk - 32, kChunk - 16, kChunk - 1})
      at.insert(c + d);
  for (uint64_t d : {1, 7, 8, 15, 16, 17, 32, 100}) at.insert(size - d);
  for (uint64_t o = 0; o < size; o += 509) at.insert(o);
  std::vector<uint64_t> v;
  for (uint64_t o : at)
    if (o < size) v.push_back(o);
  return v;
}

}  // namespace

// A file truncated at any offset costs only what was cut off; the
// other files' intervals are all analyzed; the headline says what was lost
// (it said "0 incomplete, 0 dropped" with a quarter of the data gone), and
// the JSON counts it; only when nothing is readable does the run fail.
TEST(Damage, TruncatedFileAtEveryOffsetCostsOnlyItsCutPart) {
  const std::string pristine = fresh_dir("cut-pristine");
  const std::string file = write_trace(pristine);
  const uint64_t size = fs::file_size(file);
  ASSERT_GT(size, 4096 + 4 * kChunk) << "the damaged file must have several data chunks";
  {
    Result whole = analyze(pristine);
    ASSERT_EQ(whole.intervals_by_tid[kDamaged], kIntervals);
    expect_others_whole(whole, "undamaged trace");
    EXPECT_EQ(whole.headline.find("LOST"), std::string::npos) << whole.headline;
    EXPECT_EQ(whole.json["data_lost"]["damaged_files"], 0);
  }
  const std::string dir = fresh_dir("cut");
  for (uint64_t off : cut_offsets(size)) {
    SCOPED_TRACE(::testing::Message() << "cut at " << off << " of " << size);
    std::string f = copy_trace(pristine, dir);
    fs::resize_file(f, off);
    Result r = analyze(dir);
    ASSERT_TRUE(r.readable);  // three files are whole
    expect_others_whole(r, "cut at " + std::to_string(off));
    EXPECT_NE(r.headline.find("LOST to damage: 1 of 4 trace files"), std::string::npos)
        << r.headline;
    const auto &lost = r.json["data_lost"];
    EXPECT_EQ(lost["damaged_files"], 1);
    EXPECT_EQ(lost["trace_files"], 4);
    ASSERT_EQ(lost["files"].size(), 1u);
    EXPECT_EQ(lost["files"][0]["file"], f);
    if (off < 4096) {
      EXPECT_EQ(lost["unreadable_files"], 1);
      EXPECT_EQ(r.intervals_by_tid.count(kDamaged), 0u);
    } else {
      // Read up to the cut: what was lost is counted in bytes or records.
      uint64_t counted = lost["bytes"].get<uint64_t>() + lost["missing_bytes"].get<uint64_t>() +
                         lost["records"].get<uint64_t>();
      EXPECT_GT(counted, 0u);
      // The intervals before the cut are kept: at least those whose four
      // records lie in the data chunks that are wholly there (after the
      // header and the two rings, trace format v3).
      uint64_t whole_chunks = off < 4096 + 3 * kChunk ? 0 : (off - 4096 - 2 * kChunk) / kChunk;
      uint64_t per_chunk_intervals = (kChunk / 16 - 2) / 4;
      size_t got = r.intervals_by_tid.count(kDamaged) ? r.intervals_by_tid.at(kDamaged) : 0;
      EXPECT_GE(got + whole_chunks, whole_chunks * per_chunk_intervals);
    }
  }
}

// When every file is unreadable, nothing is left to analyze: the
// run fails (vprof analyze exits 2 naming the first error).
TEST(Damage, NothingReadableFailsTheRun) {
  const std::string dir = fresh_dir("none");
  write_trace(dir);
  for (uint32_t tid : kTids) fs::resize_file(dir + "/t-1-" + std::to_string(tid) + ".vpt", 100);
  Result r = analyze(dir);
  EXPECT_FALSE(r.readable);
}

// One corrupt byte at many offsets (a kind, a timestamp, a length,
// a header field): the analysis runs, the other files are whole, and damage
// that the reader can see is counted.
TEST(Damage, CorruptByteAtManyOffsetsLeavesTheOtherFilesWhole) {
  const std::string pristine = fresh_dir("corrupt-pristine");
  const std::string file = write_trace(pristine);
  const uint64_t size = fs::file_size(file);
  const std::string dir = fresh_dir("corrupt");
  std::vector<uint64_t> offsets = {0, 8, 12, 32, 48, 192};
  for (uint64_t o = 4096; o < size; o += 16 * 37) {
    offsets.push_back(o);      // a kind byte
    offsets.push_back(o + 7);  // a timestamp's top byte
  }
  for (uint64_t off : offsets) {
    SCOPED_TRACE(::testing::Message() << "byte " << off);
    std::string f = copy_trace(pristine, dir);
    char was = 0;
    {
      std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
      io.seekg(std::streamoff(off));
      io.get(was);
      io.seekp(std::streamoff(off));
      io.put(char(0xfe));
    }
    Result r = analyze(dir);
    ASSERT_TRUE(r.readable);
    expect_others_whole(r, "byte " + std::to_string(off));
    // A record's kind made unknown, or bad magic: seen and counted. (A zero
    // slot after the ring's last record is never read.)
    bool kind_byte = off >= 4096 && (off - 4096) % 16 == 0 && was != 0;
    if (kind_byte || off == 0) {
      EXPECT_NE(r.headline.find("LOST to damage: 1 of 4"), std::string::npos) << r.headline;
      EXPECT_EQ(r.json["data_lost"]["damaged_files"], 1);
    }
  }
}

// One record whose time jumps far ahead costs that record, counted;
// it used to clamp every later record of the thread (thousands) to its time,
// reported as "1 reader warnings".
TEST(Damage, CorruptTimestampCostsOnlyItsRecord) {
  const std::string dir = fresh_dir("jump");
  SynthThread t(dir, 1, 11, 1 << 16);
  const uint32_t n = 3000;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t ts = 1000 + uint64_t{i} * 100;
    t.interval_begin(ts, i + 1);
    t.fn_enter(ts + 10, 1);
    if (i == 500)
      t.raw(((ts + 40 + (uint64_t{1} << 40)) << VPROF_TS_SHIFT) | VPROF_K_FUNC_EXIT, 1);
    else
      t.fn_exit(ts + 40, 1);
    t.interval_end(ts + 90, i + 1);
  }
  t.close();
  auto whole = trace::read_trace_dir(dir);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->losses.size(), 1u);
  EXPECT_EQ(whole->losses[0].records, 1u);
  EXPECT_EQ(whole->losses[0].clamped, 0u);
  EXPECT_EQ(whole->threads[0].events.size(), size_t{4} * n - 1 + 1);  // one lost, THREAD_EXIT
  for (size_t k = 1; k < whole->threads[0].events.size(); ++k)
    ASSERT_LT(whole->threads[0].events[k].ts, int64_t{1} << 39) << "event " << k << " clamped";
  Result r = analyze(dir);
  // The interval whose exit was lost still ends; all n are analyzed.
  EXPECT_EQ(r.intervals_by_tid[0], n);
  EXPECT_NE(r.headline.find("1 records"), std::string::npos) << r.headline;
  EXPECT_EQ(r.json["data_lost"]["records"], 1);
}

// A signal handler's record between a probe's clock read and the probe's
// own record: PostgreSQL's SIGUSR1 handler set a latch (a RELEASE, naming the
// waker of another backend's wait) 481 us after a FUNC_EXIT read the clock,
// and the FUNC_EXIT followed it (t-28679-28679.vpt of the 60-run check). The
// RELEASE is real: the record after the FUNC_EXIT is past it. It used to be
// dropped as a corrupt time; it is kept, and the FUNC_EXIT clamped to it.
TEST(Damage, ASignalHandlersRecordBeforeTheInterruptedProbesIsKept) {
  const std::string dir = fresh_dir("handler");
  SynthThread t(dir, 1, 11, 1 << 16);
  const uint64_t far = uint64_t{1} << 21;  // past kMaxStep
  t.interval_begin(1000, 1);
  t.fn_enter(1010, 1);
  t.fn_exit(1020, 2);
  t.release(1030 + far, 0x40);  // the handler's
  t.fn_exit(1030, 1);           // the interrupted probe's, read before it
  t.interval_end(1040 + far, 1);
  t.close();
  auto whole = trace::read_trace_dir(dir);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->losses.size(), 1u);
  EXPECT_EQ(whole->losses[0].records, 0u) << "the RELEASE is not dropped";
  EXPECT_EQ(whole->losses[0].clamped, 1u) << "the FUNC_EXIT, up to the RELEASE's time";
  size_t releases = 0;
  for (const auto &e : whole->threads[0].events) releases += e.kind == trace::Kind::Release;
  EXPECT_EQ(releases, 1u);
}

// A FIFO named like a trace file is not opened for reading (that
// waits for a writer forever); it is an error naming it, and the rest of the
// trace is analyzed.
TEST(Damage, FifoTraceFileIsSkippedNotWaitedFor) {
  const std::string dir = fresh_dir("fifo");
  write_trace(dir);
  const std::string fifo = dir + "/t-1-99.vpt";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Run on another thread so that a regression fails here instead of hanging.
  auto done = std::async(std::launch::async, [&] { return analyze(dir); });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "analyzing a trace with a FIFO in it blocked";
  Result r = done.get();
  for (uint32_t tid : kTids) EXPECT_EQ(r.intervals_by_tid[tid], kIntervals);
  ASSERT_EQ(r.json["data_lost"]["files"].size(), 1u);
  EXPECT_EQ(r.json["data_lost"]["files"][0]["file"], fifo);
  EXPECT_EQ(r.json["data_lost"]["files"][0]["unreadable"], true);
  std::string first = r.json["data_lost"]["files"][0]["first_problem"];
  EXPECT_NE(first.find("not a regular file (a FIFO)"), std::string::npos) << first;
  auto whole = std::async(std::launch::async, [&] { return trace::read_trace_dir(dir); });
  ASSERT_EQ(whole.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  auto t = whole.get();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->threads.size(), 4u);
}

// With refinement runs: damage in a later run's trace is in the
// first line too (summed over runs), and in that run's own data_quality.
TEST(Damage, DamageInALaterRunShowsInTheFirstLine) {
  const std::string base = fresh_dir("runs-base");
  write_trace(base);
  const std::string later = fresh_dir("runs-later");
  std::string f = copy_trace(base, later);
  fs::resize_file(f, fs::file_size(f) - 4096);
  analyzer::AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<analyzer::RunAnalysis>> runs;
  for (const std::string &dir : {base, later}) {
    auto stream = trace::TraceStream::open(dir);
    ASSERT_TRUE(stream.ok());
    auto run = analyzer::analyze_run(**stream, analyzer::Names{}, opt, int(runs.size()));
    ASSERT_TRUE(run.ok());
    runs.push_back(std::move(run).value());
  }
  auto a = analyzer::combine(std::move(runs), opt);
  std::ostringstream table;
  ASSERT_TRUE(analyzer::make_terminal_reporter()->write(*a, table).ok());
  std::string headline = table.str().substr(0, table.str().find('\n'));
  EXPECT_NE(headline.find("LOST to damage: 1 of 8 trace files of 2 runs"), std::string::npos)
      << headline;
  nlohmann::json j = analyzer::to_json(*a);
  EXPECT_EQ(j["data_lost"]["damaged_files"], 1);
  EXPECT_EQ(j["runs"][0]["data_quality"]["data_lost"]["damaged_files"], 0);
  EXPECT_EQ(j["runs"][1]["data_quality"]["data_lost"]["damaged_files"], 1);
  EXPECT_EQ(j["data_lost"]["files"][0]["file"], f);
}

namespace {

// Overwrites `n` bytes of `file` at `off` with `v`'s.
template <class T>
void poke(const std::string &file, uint64_t off, T v) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  io.seekp(std::streamoff(off));
  io.write(reinterpret_cast<const char *>(&v), sizeof v);
}

std::string diagnostics(const Result &r) { return r.json["data_quality"]["diagnostics"].dump(); }

}  // namespace

// The header's fields that choose the layout are
// cross-checked. A current file whose version field reads 2 was read with
// version 2's layout (one ring): its chunks from the wrong places, intervals
// lost without a word. Now: a warning naming the file and the field, and the
// file read whole as the version its min_readable says.
TEST(Damage, AVersionBelowMinReadableIsAWarningAndReadAsMinReadable) {
  const std::string pristine = fresh_dir("version-pristine");
  write_trace(pristine);
  const std::string dir = fresh_dir("version");
  for (uint16_t v : {0, 1, 2}) {
    SCOPED_TRACE("version " + std::to_string(v));
    std::string f = copy_trace(pristine, dir);
    poke<uint16_t>(f, 8, v);
    Result r = analyze(dir);
    ASSERT_TRUE(r.readable);
    EXPECT_EQ(r.intervals_by_tid[kDamaged], kIntervals) << "the damaged file read whole";
    expect_others_whole(r, "version " + std::to_string(v));
    EXPECT_NE(diagnostics(r).find("t-1-12.vpt:8: warning: format version " + std::to_string(v) +
                                  " is below its min_readable " +
                                  std::to_string(VPROF_TRACE_MIN_READABLE)),
              std::string::npos)
        << diagnostics(r);
  }
  // Both zero: nothing says which layout; the file is refused, the others read.
  std::string f = copy_trace(pristine, dir);
  poke<uint16_t>(f, 8, 0);
  poke<uint16_t>(f, 10, 0);
  Result r = analyze(dir);
  expect_others_whole(r, "version 0, min_readable 0");
  EXPECT_NE(diagnostics(r).find("format version 0 and min_readable 0"), std::string::npos) << diagnostics(r);
}

// A damaged pending_chunk dropped a whole ring, silently.
// The file is laid out as the runtime leaves a thread killed with a full
// ring pending (its last chunk still in ring 1, not yet appended); then
// pending_chunk is damaged: a warning names the field, and the ring is read.
TEST(Damage, ADamagedPendingChunkIsAWarningAndItsRingIsRead) {
  const std::string pristine = fresh_dir("pending-pristine");
  const std::string file = write_trace(pristine);
  // The last data chunk moves into ring 1, pending.
  vprof_file_header h;
  {
    std::ifstream in(file, std::ios::binary);
    in.read(reinterpret_cast<char *>(&h), sizeof h);
  }
  ASSERT_GE(h.data_chunks, 2u);
  const uint64_t last = VPROF_HEADER_BYTES + (2 + h.data_chunks - 1) * kChunk;
  std::string chunk(kChunk, '\0');
  {
    std::ifstream in(file, std::ios::binary);
    in.seekg(std::streamoff(last));
    in.read(chunk.data(), std::streamsize(kChunk));
  }
  {
    std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(std::streamoff(VPROF_HEADER_BYTES + kChunk));
    io.write(chunk.data(), std::streamsize(kChunk));
  }
  fs::resize_file(file, last);
  poke<uint64_t>(file, offsetof(vprof_file_header, data_chunks), h.data_chunks - 1);
  poke<uint64_t>(file, offsetof(vprof_file_header, pending_chunk), h.data_chunks - 1);
  Result whole = analyze(pristine);
  ASSERT_EQ(whole.intervals_by_tid[kDamaged], kIntervals) << "laid out as the runtime leaves it";
  EXPECT_EQ(diagnostics(whole).find("warning"), std::string::npos) << diagnostics(whole);

  const std::string dir = fresh_dir("pending");
  std::string f = copy_trace(pristine, dir);
  poke<uint64_t>(f, offsetof(vprof_file_header, pending_chunk), 0x1234567ull);
  Result r = analyze(dir);
  EXPECT_EQ(r.intervals_by_tid[kDamaged], kIntervals) << diagnostics(r);
  expect_others_whole(r, "pending_chunk");
  EXPECT_NE(diagnostics(r).find("t-1-12.vpt:216: warning: pending_chunk 19088743 is past data_chunks"),
            std::string::npos)
      << diagnostics(r);
}

// A process file this reader cannot use (another
// version, bad magic, cut short) was ignored silently.
TEST(Damage, AProcessFileOfUnknownVersionIsNamed) {
  const std::string dir = fresh_dir("process");
  vprof_process_header p{};
  std::memcpy(p.magic, VPROF_PROCESS_MAGIC, 8);
  p.header_bytes = VPROF_HEADER_BYTES;
  p.version = 0;
  { std::ofstream(dir + "/p-7.vpp", std::ios::binary).write(reinterpret_cast<const char *>(&p), sizeof p); }
  p.version = 9;
  p.min_readable = 9;
  { std::ofstream(dir + "/p-8.vpp", std::ios::binary).write(reinterpret_cast<const char *>(&p), sizeof p); }
  p.version = VPROF_PROCESS_VERSION;
  p.min_readable = 1;
  p.lost_records = 5;
  { std::ofstream(dir + "/p-9.vpp", std::ios::binary).write(reinterpret_cast<const char *>(&p), sizeof p); }
  { std::ofstream(dir + "/p-10.vpp", std::ios::binary) << "short"; }
  trace::ProcessFiles pf = trace::read_process_files(dir);
  EXPECT_EQ(pf.files, 1u);
  EXPECT_EQ(pf.lost_records, 5u);
  ASSERT_EQ(pf.warnings.size(), 3u);
  std::string all = pf.warnings[0] + pf.warnings[1] + pf.warnings[2];
  EXPECT_NE(all.find("p-7.vpp: process file version 0"), std::string::npos) << all;
  EXPECT_NE(all.find("p-8.vpp: process file version 9 (min_readable 9)"), std::string::npos) << all;
  EXPECT_NE(all.find("p-10.vpp: truncated"), std::string::npos) << all;
}
