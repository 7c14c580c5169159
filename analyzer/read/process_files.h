// The per-process files of a trace directory, p-<pid>.vpp (trace_format.h):
// what threads without a trace file of their own lost, and which
// instrumentation's manifest the program registered. One reader for `vprof
// run`'s summary and `vprof analyze`; pread only (never a mapping: a hole in a
// file on a full tmpfs would SIGBUS a reader that maps it).
#ifndef VPROF_ANALYZER_READ_PROCESS_FILES_H
#define VPROF_ANALYZER_READ_PROCESS_FILES_H

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace vprof::trace {

struct ProcessFiles {
  uint64_t files = 0;
  uint64_t lost_threads = 0;  // threads that recorded but got no trace file
  uint64_t lost_records = 0;  // their records
  uint64_t ownership_misses = 0;  // waits and signals on objects the ownership map had no slot for
  // The largest budget of a thread's file (VPROF_BUFFER_MB) and ring
  // (VPROF_CHUNK_KB, in bytes) the processes read (0: not known),
  // and each process's budget: a command may give its processes different
  // ones (PostgreSQL's `pg_ctl start` and `pg_ctl stop`).
  uint64_t budget_mb = 0, chunk_bytes = 0;
  std::map<uint32_t, uint64_t> budget_mb_by_pid;
  // id -> manifest path of every id the processes' instrumented code
  // registered: one per rewritten file (its entry in the manifest's
  // "files"); a program built by a vprof before those registered the
  // manifest's own id from every file.
  std::map<std::string, std::string> manifests;
  bool ids_overflow = false;  // a process registered more ids than its file holds (not all are checked)
  // VPROF_PREEMPT_* bits of all processes (0: no process recorded switches,
  // or no process file was read). Measured only when some process
  // measured: a thread refused may still leave others measured.
  uint32_t preemption = 0;
  bool preemption_measured() const { return preemption & 1u; }
  // Processes whose thread files were refused:
  // a server that dropped root, a full disk. The first of each (uid, errno).
  struct Refused {
    uint32_t pid = 0, euid = 0, err = 0;
    std::string comm;
    uint64_t processes = 0;  // how many processes this one stands for
  };
  std::vector<Refused> refused;
  // One line per p-*.vpp file that could not be used, or not all of it
  // ("FILE: why"): not read, of a version this reader does not know, or
  // holding fewer ids than its program registered.
  std::vector<std::string> warnings;
  // The owners a thread file of each process may have, from process files of
  // version 8: the process file's own owner and the effective uids its
  // threads made their files as (a server that drops root makes them as its
  // new user). A pid that is missing has no such file, or one whose threads
  // used more uids than it keeps: its thread files are not checked.
  std::map<uint32_t, std::set<uint32_t>> thread_owners;
  // Every pid a process file was read for.
  std::set<uint32_t> pids;
};

ProcessFiles read_process_files(const std::string &dir);

// One line per refusal in p: which process, which user, which directory,
// why, and what to do.
std::vector<std::string> refused_lines(const ProcessFiles &p, const std::string &dir);

// Why a run lost records, as far as its directory tells after it: ""
// when none was lost (`dropped`, the thread files' count, and p's), or when
// the refusals' own lines say it. Else one reason, with what to do: the
// directory's file system has less free than two rings (it filled up);
// records dropped in files (a process reached its budget, the largest that
// the processes whose thread files dropped records read, or the disk was full
// for a while); threads without a file
// (descriptors exhausted). `vprof run` and `vprof iterate` both say it.
std::string lost_records_cause(uint64_t dropped, const ProcessFiles &p, const std::string &dir);

// One line (naming `dir`) when the traced program's instrumented code is not
// all of one instrumentation: with `accepted` (a manifest's ids: analyzer::Names::ids), an id registered that
// the manifest does not list; "" when it is, or cannot be told. Its build
// then did not recompile every file vprof rewrote: on PostgreSQL without
// --enable-depend, make did not rebuild the files that include a header
// vprof had instrumented, and an iterate session analysed probes under
// another instrumentation's names.
std::string build_mismatch(const ProcessFiles &p, const std::string &dir, const std::set<std::string> &accepted = {});

// Which of the ids p registered a manifest's ids (analyzer::Names::ids)
// list: all of them (also when p registered none), some (a build that did
// not recompile every file vprof rewrote), or none (another instrumentation).
enum class Listed { All, Some, None };
Listed listed(const ProcessFiles &p, const std::set<std::string> &accepted);
// "id X" or "id X and N more": the registered ids `accepted` does not list.
std::string unlisted(const ProcessFiles &p, const std::set<std::string> &accepted);
// The manifest paths the processes registered (one, for one instrumentation).
std::set<std::string> manifest_paths(const ProcessFiles &p);

}  // namespace vprof::trace

#endif
