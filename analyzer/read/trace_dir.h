// The one owner of a trace directory for whoever reads it (`vprof analyze`,
// the gate, a session, `vprof run`'s summary, `vprof dump`): the directory is
// opened once, its thread files listed once and its process files read once,
// and every file in it is opened relative to the directory, never through a
// link (common/trace_dir_rules.h). TraceStream decodes what it lists; count()
// is the cheap scan `vprof run` prints when a run ends.
//
// The discovery rules live here and in the stream: a thread file is t-*.vpt,
// a process file p-*.vpp; a thread file that is a link, or whose owner is not
// a user its process made files as, is refused; one whose process left no
// process file in a directory where others did is read with a warning.
#ifndef VPROF_ANALYZER_READ_TRACE_DIR_H
#define VPROF_ANALYZER_READ_TRACE_DIR_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"

#include "analyzer/read/process_files.h"

namespace vprof::trace {

// What a run left, from the thread files' headers and a scan of their
// records (not decoded): the line `vprof run` prints at the end.
struct RecordCount {
  uint64_t thread_files = 0;   // t-*.vpt with a valid header
  uint64_t unreadable = 0;     // t-*.vpt that are not (truncated, bad magic, a link)
  uint64_t records = 0;        // records the program wrote: not strings or markers
  uint64_t dropped = 0;        // sum of the headers' dropped_records
  uint64_t late_switches = 0;  // sum of the headers' late_switches (the writer lagged)
};

// A thread file's name (t-PID-TID.vpt, t-PID-TID.N.vpt: trace_format.h).
bool is_thread_file(const std::string &name);
// Whether DIR holds one: a session with keep_traces false deletes them once
// the run's summary is written.
bool has_thread_files(const std::string &dir);

class TraceDir {
 public:
  // Fails when `dir` cannot be opened as a directory. A directory without a
  // thread file opens (`vprof run` counts an empty one); the stream refuses it.
  static Expected<std::unique_ptr<TraceDir>> open(const std::string &dir);
  ~TraceDir();
  TraceDir(const TraceDir &) = delete;
  TraceDir &operator=(const TraceDir &) = delete;

  const std::string &path() const { return path_; }
  int fd() const { return fd_; }  // the directory, for openat
  // The thread files' names (t-*.vpt), sorted.
  const std::vector<std::string> &thread_files() const { return thread_files_; }
  const ProcessFiles &processes() const { return processes_; }
  // Reads every thread file's header and scans its records.
  RecordCount count() const;

 private:
  TraceDir() = default;
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> thread_files_;
  ProcessFiles processes_;
};

// "(3 thread files): 120000 records, 0 dropped[, 2 threads without a file (40 records lost)]
//  [, 5 ring switches appended by their thread (the writer lagged: every core busy)]"
std::string describe(const RecordCount &c, const ProcessFiles &p);

}  // namespace vprof::trace

#endif  // VPROF_ANALYZER_READ_TRACE_DIR_H
