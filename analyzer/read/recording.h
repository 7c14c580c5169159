// The one owner of a trace directory for whoever records into it (`vprof
// run`, `vprof gate --base-cmd/--head-cmd`, an iterate session's runs). One
// directory holds one run, and a run never costs the previous trace unless
// it records:
//   1. start(): the directory made (common/output_file.h,
//      make_trace_dir: a link of another user's on the way, or a directory
//      all may replace files in, is refused), locked (DIR/.lock, an
//      exclusive flock: a second run into DIR fails at once instead of
//      moving the first's live files away), a probe written (a process
//      file of no process with a whole page: the only sure test that the
//      runtime can write there, which becomes DIR/p-0.vpp), the old trace
//      (t-*.vpt, p-*.vpp, p-*.maps, manifest.json, places.json) moved into
//      DIR/.old, the manifest written;
//   2. the caller starts its command with env() set, handing it lock() to
//      keep (if vprof is killed, the command still writes into DIR, and the
//      lock lasts as long as it does); abandon() when it could not start;
//   3. finish(): the summary; DIR/.old deleted when the new trace holds a
//      record, else kept (the next start puts it back before retiring it).
// Every file made here is new (O_EXCL) or replaced by a rename; the lock is
// opened without following a link and refused when another user made it
// (common/trace_dir_rules.h).
#ifndef VPROF_ANALYZER_READ_RECORDING_H
#define VPROF_ANALYZER_READ_RECORDING_H

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"

#include "analyzer/read/process_files.h"
#include "analyzer/read/trace_dir.h"

namespace vprof::trace {

// The run that DIR's run repeats (Recording::mark_repeat_of), canonical, or
// "" when it repeats none.
std::string repeat_of(const std::string &dir);

// Deletes what the run's processes wrote into DIR (thread files, process
// files, their maps), keeping what names and summarizes the run (manifest,
// places, run.summary, repeat-of): an iterate session with keep_traces
// false, once the run's summary is written. Links are removed, never
// followed. How many files and bytes went.
struct Deleted {
  size_t files = 0;
  uint64_t bytes = 0;
};
Deleted delete_recorded_data(const std::string &dir);

class Recording {
 public:
  // `manifest`: the file to keep with the trace ("": none; after the run
  // the one the program registered is copied in). It is read now (it may be
  // DIR's own manifest.json) and must be JSON.
  static Expected<std::unique_ptr<Recording>> start(const std::string &dir, const std::string &manifest = "");
  // Another run into DIR whose processes' files join the trace there (a
  // session's runs, several a level): locked and probed, nothing retired,
  // the manifest already there kept.
  static Expected<std::unique_ptr<Recording>> add_to(const std::string &dir);
  ~Recording();
  Recording(const Recording &) = delete;
  Recording &operator=(const Recording &) = delete;

  const std::string &dir() const { return dir_; }  // canonical
  int lock() const { return lock_; }  // close-on-exec: the command's spawn keeps it
  // VPROF_TRACE_DIR, and VPROF_SAMPLE for windowed recording (0: in full).
  std::vector<std::pair<std::string, std::string>> env(int sample = 0) const;

  // The command could not start: the previous trace is put back.
  void abandon();

  // This run repeats the one recorded in `original` (an iterate session's
  // `again` run: the same build and probes): DIR/repeat-of names it, so an
  // analysis that reads that run before this one grafts nothing of this
  // one's (RunAnalysis::repeat), by hand as in the session. It goes with
  // the trace: the next start() retires it. False, errno set, if not written.
  bool mark_repeat_of(const std::string &original) const;

  struct Outcome {
    bool moved = false;           // DIR was moved or replaced meanwhile: nothing here is what was recorded
    bool still_recording = false;  // processes the command started hold the lock: a daemon
    // DIR as the run left it (null when moved or unreadable): its process
    // files, read once, and count() for whoever wants the records scanned.
    std::unique_ptr<TraceDir> trace;
    std::string kept_old;  // the previous trace's place when it is kept (nothing recorded), else ""
  };
  // After the command. `say` gets the warnings about the manifest the
  // program registered (copied into DIR when none was given).
  Outcome finish(const std::function<void(const std::string &)> &say);

 private:
  Recording() = default;
  static Expected<std::unique_ptr<Recording>> prepare(const std::string &dir, const std::string &manifest, bool add);
  std::string dir_, manifest_path_;
  bool added_ = false;
  int lock_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace vprof::trace

#endif  // VPROF_ANALYZER_READ_RECORDING_H
