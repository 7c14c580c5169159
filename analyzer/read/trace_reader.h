// Reads and validates a vprof trace directory (format v1, docs/trace-format.md)
// into per-thread event streams on one common nanosecond clock.
//
// Problems in the data are not thrown: each is a Diagnostic with a severity,
// naming the file and byte offset. Severity::Error means a file (or part of
// one) could not be used at all (bad magic, unreadable version, truncated
// header, not a regular file); Warning means data was lost but what remains
// is sound (a torn tail after a kill, dropped records, a file cut short);
// Info is for the record (a process exited while a thread still ran). What
// damage cost each file is also counted (Trace::losses). read_trace_dir
// fails outright only when the directory itself cannot be read or holds no
// trace file. Only regular files are opened: a FIFO named t-*.vpt is an Error
// naming it, never a read that blocks.
//
// Invariants of the result:
//   - every stream's events are in the order the thread wrote them, which is
//     non-decreasing time on that thread (a regression is a Warning and the
//     timestamp is clamped to its predecessor's; a record whose time jumps
//     far ahead of both neighbours is corrupt, dropped and counted, so that
//     it does not clamp the records after it);
//   - timestamps of all streams are on one clock (CLOCK_MONOTONIC ns), so they
//     can be compared across threads and processes;
//   - WAIT_END events carry the waker's release time resolved against the
//     waker's own RELEASE record when it exists.
#ifndef VPROF_ANALYZER_READ_TRACE_READER_H
#define VPROF_ANALYZER_READ_TRACE_READER_H

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"
#include <vprof/trace_format.h>

namespace vprof::trace {

enum class Kind : uint8_t {
  FuncEnter = VPROF_K_FUNC_ENTER,
  FuncExit = VPROF_K_FUNC_EXIT,
  SiteBegin = VPROF_K_SITE_BEGIN,
  SiteEnd = VPROF_K_SITE_END,
  IntervalBegin = VPROF_K_IV_BEGIN,  // labeled begins decode to this too
  IntervalEnd = VPROF_K_IV_END,
  IntervalJoin = VPROF_K_IV_JOIN,
  IntervalLeave = VPROF_K_IV_LEAVE,
  WaitBegin = VPROF_K_WAIT_BEGIN,
  WaitEnd = VPROF_K_WAIT_END,
  Release = VPROF_K_RELEASE,
  TaskEnqueue = VPROF_K_TASK_ENQUEUE,
  TaskDequeue = VPROF_K_TASK_DEQUEUE,
  DropBegin = VPROF_K_DROP_BEGIN,
  ThreadExit = VPROF_K_THREAD_EXIT,
  Preempted = VPROF_K_PREEMPTED,  // arg: switch-in ns; release_ts: switch-out ns (same clock as ts)
  Recorder = VPROF_K_RECORDER,    // the recorder's pause: release_ts its start (= ts), arg its end ns
  Window = VPROF_K_WINDOW,        // windowed recording: arg as written (VPROF_WINDOW_* fields)
  WakerAt = VPROF_K_WAKER_AT,     // arg: where the preceding WaitEnd's waker released (an address)
  WaitMutex = VPROF_K_WAIT_MUTEX, // arg as written: the preceding WaitBegin's mutex (role << 56 | address)
};

const char *kind_name(Kind k);

// One decoded record. 40 bytes; the fields used depend on the kind.
struct Event {
  int64_t ts = 0;          // ns, CLOCK_MONOTONIC domain, common to all streams
  uint64_t arg = 0;        // Func*/Site*: id; Interval*: interval id (0 for Leave);
                           // Wait*/Release: object address; Task*: task pointer
  int64_t release_ts = -1; // WaitEnd: when the waker released the object; -1 = no waker
  uint32_t waker_tid = 0;  // WaitEnd: the releasing thread (0 = none)
  uint32_t type_label = 0; // IntervalBegin: index into Trace::labels (0 = none);
                           // SiteEnd of a run (SITE_RUN): the calls it ends (else 0)
  uint32_t client_label = 0;
  Kind kind = Kind::FuncEnter;
  uint8_t role = 0;        // Wait*/Release: VPROF_SYNC_*; Preempted: 1 when the thread slept
                           // (blocked), not preempted: it ran again at arg
  uint8_t acquired = 0;    // WaitEnd: 1 when the wait got the object (waker_tid may still be 0)
};

enum class Severity : uint8_t { Info, Warning, Error };
const char *severity_name(Severity s);

struct Diagnostic {
  Severity severity;
  std::string file;     // path of the trace file
  uint64_t offset;      // byte offset in that file
  std::string message;  // what was wrong
  std::string str() const;  // "<file>:<offset>: <severity>: <message>"
};

// What damage cost one trace file: the reader's part of the report's "what
// was lost". A damaged file is read up to its damage: a bad header costs the
// file, damage inside a chunk the rest of that chunk, a cut the bytes cut
// off, a timestamp far out of order its record.
struct FileLoss {
  std::string file;
  bool unreadable = false;     // nothing of it was used (not a regular file, unopenable, bad header)
  uint64_t bytes = 0;          // bytes in the file that were not decoded (all of it when unreadable)
  uint64_t missing_bytes = 0;  // bytes cut off the file: at least this many (the header's counts)
  uint64_t records = 0;        // records lost that were counted (in undecoded bytes, out-of-order
                               // timestamps); missing bytes held up to missing_bytes / 16 more
  uint64_t clamped = 0;        // records kept with their time clamped to the previous record's
  std::string first;           // the first problem found, as Diagnostic::str()
  bool lost_anything() const { return unreadable || bytes || missing_bytes || records; }
};

struct ThreadStream {
  uint32_t pid = 0, tid = 0, ppid = 0;
  std::string file;
  std::string comm, thread_name;
  std::vector<Event> events;
  bool clean_exit = false;       // THREAD_EXIT seen (or the process exited normally)
  bool torn = false;             // ended without THREAD_EXIT or process exit: killed
  uint64_t dropped_records = 0;  // from the header
  uint64_t late_switches = 0;    // from the header (v3): switches the thread appended itself
  uint64_t off_intervals = 0;    // from the header (v6): intervals begun between recording windows
  int64_t drop_begin_ts = -1;    // DROP_BEGIN time; events after it are missing
};

struct Overhead {
  double probe_pair_ns = 0;      // median over processes of the start-up measurement
  double empty_interval_ns = 0;
};

struct Trace {
  std::string dir;
  std::vector<ThreadStream> threads;  // sorted by (pid, tid)
  std::vector<std::string> labels;    // labels[0] == "" (none)
  std::vector<Diagnostic> diagnostics;
  Overhead overhead;
  double ticks_per_ns = 1.0;          // the clock rate used for conversion
  uint64_t total_records = 0;
  uint64_t dropped_records = 0;       // sum over threads
  uint64_t late_switches = 0;         // sum over threads
  uint64_t off_intervals = 0;         // sum over threads
  size_t files = 0;                   // trace files found (readable or not)
  std::vector<FileLoss> losses;       // the files that lost data to damage, by name
  size_t count(Severity s) const;
  const Diagnostic *first_error() const;
};

// Reads every t-*.vpt file in `dir`. Fails only when the directory cannot be
// listed or holds no trace file.
Expected<Trace> read_trace_dir(const std::string &dir);

// Reads one file into `out` (diagnostics appended to `diags`), for the fuzzer:
// its wake-ups keep the runtime's release delta unresolved (no other file).
// read_trace_dir decodes every file through TraceStream's sources.
bool read_trace_file(const std::string &path, ThreadStream &out,
                     std::vector<Diagnostic> &diags);

}  // namespace vprof::trace

#endif  // VPROF_ANALYZER_READ_TRACE_READER_H
