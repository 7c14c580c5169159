// vprof run [--trace-dir DIR] [--manifest FILE] -- CMD [ARGS...]
// Runs CMD with the recorder on (VPROF_TRACE_DIR set) and says in one line
// what the run recorded. One directory holds one run, and a run never costs
// the previous trace unless it records:
//   1. check everything that can be checked: CMD is an executable file, the
//      manifest is readable (read into memory now: it may be DIR's own
//      manifest.json), DIR can be created and written: a probe file with a
//      whole page written (an empty file needs no block: it passed on a full
//      file system), which becomes p-0.vpp (below);
//   2. move the old trace (t-*.vpt, p-*.vpp, p-*.maps, manifest.json) into DIR/.old,
//      rename the probe to DIR/p-0.vpp, write the new manifest;
//   3. start CMD (posix_spawnp, analyzer/util/process.h);
//   4. it could not start: put the old trace back, exit 2. Started: wait for CMD and
//      print the summary; then delete DIR/.old if the new trace holds a
//      record, else keep it and say so (and exit 2 if records were lost).
// Whenever DIR's trace holds no record (vprof died between 2 and the end
// before CMD recorded, or the run recorded nothing), DIR/.old is the latest
// trace with data: the next run puts it back before it retires it, and
// deletes it otherwise.
//
// p-0.vpp is a process file (trace_format.h) of no process, its page
// allocated: a process of CMD that cannot make its own (a full file system)
// counts what its threads lose there, so that the summary can report it.
//
// Before any of it, vprof takes an exclusive flock on DIR/.lock: a second run
// into DIR fails at once instead of moving the first's live files away. CMD
// inherits the lock's descriptor on purpose: if vprof is killed, CMD (and what
// it starts) still writes into DIR, and the lock lasts as long as they do.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <vprof/trace_format.h>

#include "analyzer/names/names.h"
#include "analyzer/util/output_file.h"
#include "common/sample.h"
#include "analyzer/util/process.h"
#include "common/trace_dir_rules.h"
#include "command.h"
#include "trace_summary.h"

namespace fs = std::filesystem;

namespace vprof::cli {
namespace {

struct RunOptions {
  std::string trace_dir = "vprof-trace";
  std::string manifest;
  int sample = 0;  // windowed recording: percent of the time (0: in full)
  std::vector<std::string> command;
};

bool is_trace_file(const std::string &name) {
  auto ends = [&](const char *s) {
    size_t n = std::strlen(s);
    return name.size() > n && name.compare(name.size() - n, n, s) == 0;
  };
  // p-<pid>.maps (and the .tmp a killed process left while writing it) go
  // with their process files (trace_format.h); places.json, and a killed
  // analysis's places.json.<pid>.tmp, with the trace it names.
  return (name.rfind("t-", 0) == 0 && ends(".vpt")) ||
         (name.rfind("p-", 0) == 0 && (ends(".vpp") || ends(".maps") || ends(".maps.tmp"))) ||
         name == "manifest.json" || name.rfind("places.json", 0) == 0;
}

std::vector<fs::path> trace_files(const fs::path &dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto &ent : fs::directory_iterator(dir, ec))
    if (is_trace_file(ent.path().filename().string())) out.push_back(ent.path());
  return out;
}

// Moves every trace file of `from` into `to`; on the first failure moves
// back what it moved and returns the error.
std::string move_trace(const fs::path &from, const fs::path &to) {
  std::vector<fs::path> moved;
  for (const fs::path &p : trace_files(from)) {
    std::error_code ec;
    fs::rename(p, to / p.filename(), ec);
    if (ec) {
      for (const fs::path &m : moved) fs::rename(to / m.filename(), m, ec);
      return fmt::format("{}: cannot move it to {}: {}", p.string(), to.string(), ec.message());
    }
    moved.push_back(p);
  }
  return "";
}

// DIR/.old as vprof makes it: a directory of this user's, not a link. "" or why not.
std::string not_ours(const fs::path &old) {
  struct stat st;
  if (lstat(old.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) return fmt::format("{}: is a symbolic link, not a directory vprof made; remove it", old.string());
  if (!S_ISDIR(st.st_mode)) return fmt::format("{}: is not a directory vprof made; remove it", old.string());
  if (st.st_uid != geteuid())
    return fmt::format("{}: belongs to uid {}, not to you: not a directory vprof made; remove it", old.string(),
                       st.st_uid);
  return "";
}

// The old trace into DIR/.old (see the top of this file). "" or the error.
std::string retire_old_trace(const fs::path &dir) {
  fs::path old = dir / ".old";
  std::error_code ec;
  if (std::string e = not_ours(old); !e.empty()) return e;
  if (fs::is_directory(old, ec)) {
    if (summarize_trace(dir).records == 0) {
      // The last run recorded nothing, or vprof died after retiring it and
      // before a record: this is the latest trace with data.
      for (const fs::path &p : trace_files(dir)) fs::remove(p, ec);
      if (std::string err = move_trace(old, dir); !err.empty()) return err;
    }
    fs::remove_all(old, ec);
    if (ec) return fmt::format("{}: cannot remove the previous run's leftovers: {}", old.string(), ec.message());
  }
  if (trace_files(dir).empty()) return "";
  fs::create_directory(old, ec);
  if (ec) return fmt::format("{}: cannot create: {}", old.string(), ec.message());
  return move_trace(dir, old);
}

void restore_old_trace(const fs::path &dir) {
  std::error_code ec;
  for (const fs::path &p : trace_files(dir)) fs::remove(p, ec);  // the failed run's manifest
  if (move_trace(dir / ".old", dir).empty()) fs::remove_all(dir / ".old", ec);
}

// Whether the vprof run that wrote `pid` in the lock still runs: a process of
// that pid that is not a zombie (killed, and its parent not yet waiting: a
// script that ran it in the background). Without /proc, whether the pid
// exists at all.
bool vprof_runs(long pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return true;
  // "pid (comm) S ...": comm may hold spaces and parentheses; the state
  // follows the last ')'.
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

// Takes DIR/.lock (see the top of this file) and writes our pid in it for the
// message of a run that finds it taken. The descriptor (close-on-exec; the
// child clears the flag), or -1 with `why` set: the error line.
int lock_trace_dir(const fs::path &dir, std::string &why) {
  fs::path path = dir / ".lock";
  // Never through a link another user planted there, and only a lock a
  // vprof of this user (or root's) made: another user's file holds no pid
  // of ours to report, and its holder is not a vprof run of ours.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | tracedir::kReopen, 0644);
  if (fd < 0) {
    const int err = errno;
    struct stat ls;
    why = lstat(path.c_str(), &ls) == 0 && S_ISLNK(ls.st_mode)  // ELOOP, or EACCES where the kernel protects links
              ? fmt::format("{}: is a symbolic link, not a lock vprof made; remove it", path.string())
              : fmt::format("{}: cannot write in the trace directory: {}", dir.string(), std::strerror(err));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || tracedir::foreign_file(st)) {
    close(fd);
    const char *what = tracedir::foreign_file(st);
    why = st.st_uid != geteuid() && st.st_uid != 0
              ? fmt::format("{}: belongs to uid {}, not to you: not a lock vprof made here; remove it",
                            path.string(), st.st_uid)
              : fmt::format("{}: {}: not a lock vprof made here; remove it", path.string(),
                            what ? what : "cannot be read");
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char buf[32] = {};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    if (e != EWOULDBLOCK)
      why = fmt::format("{}: cannot lock {}: {}", dir.string(), path.string(), std::strerror(e));
    else if (pid <= 0)
      why = fmt::format("{}: another vprof run is recording here", dir.string());
    else if (vprof_runs(pid))
      why = fmt::format("{}: another vprof run (pid {}) is recording here", dir.string(), pid);
    else  // killed: the lock is its command's (fuser names the holders)
      why = fmt::format("{}: the command of a killed vprof run (pid {}) is still recording here (fuser {})",
                        dir.string(), pid, path.string());
    return -1;
  }
  // The pid, then the length: a reader in between reads the new pid (an
  // older, longer pid's tail follows its newline).
  std::string pid = fmt::format("{}\n", getpid());
  if (pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size()))
    (void)!ftruncate(fd, static_cast<off_t>(pid.size()));
  return fd;
}

// Step 1's probe (see the top of this file): DIR/.vprof-probe-PID, a process
// file of no process (pid 0) with its page written: the only sure test that
// the runtime will be able to write (permissions, read-only mounts,
// immutable flags, root, a full file system). "" or why not.
std::string make_probe(const fs::path &probe) {
  struct rlimit lim;  // a page past ulimit -f would be SIGXFSZ
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < VPROF_HEADER_BYTES)
    return fmt::format("the file size limit (ulimit -f) is {} bytes", lim.rlim_cur);
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST && unlink(probe.c_str()) == 0)  // left by a killed vprof
    fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return std::strerror(errno);
  vprof_process_header h{};
  vprof_process_header_identity(&h);
  h.ppid = static_cast<uint32_t>(getpid());
  std::snprintf(h.comm, sizeof h.comm, "vprof run");
  int err = posix_fallocate(fd, 0, sizeof h);  // the runtime maps it: its page must be allocated
  if (err == 0) {
    ssize_t w = pwrite(fd, &h, sizeof h, 0);
    if (w != static_cast<ssize_t>(sizeof h)) err = w < 0 ? errno : ENOSPC;
  }
  if (close(fd) != 0 && err == 0) err = errno;
  if (err == 0) return "";
  unlink(probe.c_str());
  return std::strerror(err);
}

bool read_file(const std::string &path, std::string &out, std::string &why) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    why = "not a regular file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// A file of the trace directory, replaced whole: written to a new name of
// its own (never through a link planted under either name) and renamed over
// the old one, which replaces a link rather than what it points to.
bool write_file(const fs::path &path, const std::string &data) {
  const fs::path tmp = path.parent_path() / fmt::format(".{}.vprof-{}", path.filename().string(), getpid());
  unlink(tmp.c_str());
  int fd = open(tmp.c_str(), O_WRONLY | tracedir::kCreate, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (size_t at = 0; ok && at < data.size();) {
    ssize_t n = write(fd, data.data() + at, data.size() - at);
    if (n > 0) at += size_t(n);
    else if (!(n < 0 && errno == EINTR)) ok = false;
  }
  const int write_err = ok ? 0 : errno;
  ok = close(fd) == 0 && ok && rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    const int err = write_err ? write_err : errno;
    unlink(tmp.c_str());
    errno = err;  // the caller says why
  }
  return ok;
}

// --- signals ----------------------------------------------------------------
// vprof and CMD share a process group, so a terminal's Ctrl-C (or Ctrl-\, or a
// hang-up) reaches CMD by itself: the kernel sends it (SI_KERNEL) to the whole
// foreground group, and forwarding it would deliver it twice. A signal sent to
// vprof alone (kill PID, timeout, a supervisor) is forwarded to CMD. vprof
// itself never dies of them: it waits for CMD to finish writing, then reports.
volatile sig_atomic_t g_child = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void forward(int sig, siginfo_t *si, void *) {
  if (si && si->si_code == SI_KERNEL) return;
  pid_t child = g_child;
  if (child > 0) kill(child, sig);
}

sigset_t forwarded_set() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : kForwarded) sigaddset(&s, sig);
  return s;
}

void install_forwarding() {
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwarded) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);  // nohup stays nohup
  }
}

// The manifest the program's instrumented code registered (trace_format.h,
// process file): copied in when none was given, so `vprof analyze` names the
// ids with no flag; a given one that is not it is said, not silently used.
void keep_registered_manifest(const fs::path &dir, const TraceSummary &sum, const std::string &given) {
  const trace::ProcessFiles &p = sum.processes;
  if (p.manifests.empty()) return;
  const std::set<std::string> paths = trace::manifest_paths(p);
  if (p.mixed || paths.size() > 1) {
    std::fprintf(stderr, "vprof: warning: the program registered %zu different instrumentations' manifests; "
                         "names in the report may be wrong\n", p.mixed ? size_t(2) : paths.size());
    return;
  }
  const std::string &path = *paths.begin();
  auto ids = [](const std::string &manifest) {
    auto names = analyzer::load_manifest(manifest);
    return names ? names->ids : std::set<std::string>{};
  };
  if (!given.empty()) {
    if (trace::listed(p, ids(given)) != trace::Listed::All)
      std::fprintf(stderr, "vprof: warning: %s is not the manifest the program was built with (it does not list %s, "
                           "which the program registered; the program's: %s)\n",
                   given.c_str(), trace::unlisted(p, ids(given)).c_str(), path.c_str());
    return;
  }
  // Read once and checked as copied: an instrument that replaces the file
  // meanwhile cannot slip another instrumentation's names in.
  std::string text, why;
  const fs::path copy = dir / "manifest.json";
  const bool copied = read_file(path, text, why) && write_file(copy, text);
  const std::set<std::string> listed_ids = copied ? ids(copy.string()) : std::set<std::string>{};
  const trace::Listed l = trace::listed(p, listed_ids);
  if (l == trace::Listed::All) return;
  std::error_code ec;
  fs::remove(copy, ec);
  if (!copied && !text.empty())
    std::fprintf(stderr, "vprof: warning: cannot copy %s into %s\n", path.c_str(), dir.c_str());
  else if (l == trace::Listed::None)
    std::fprintf(stderr, "vprof: warning: the program was built from manifest %s (%s), which %s; the trace has "
                         "no names\n", path.c_str(), trace::unlisted(p, listed_ids).c_str(),
                 text.empty() ? "is gone" : "now holds another instrumentation");
  else
    std::fprintf(stderr, "vprof: warning: %s\n", trace::build_mismatch(p, dir.string(), listed_ids).c_str());
}

int run(const RunOptions &o) {
  std::string why;
  if (find_program(o.command[0], why).empty()) return fail(fmt::format("{}: {}", o.command[0], why));
  std::string manifest_path = o.manifest;
  if (manifest_path.empty() && getenv("VPROF_MANIFEST")) manifest_path = getenv("VPROF_MANIFEST");
  std::string manifest;
  if (!manifest_path.empty() && !read_file(manifest_path, manifest, why))
    return fail(fmt::format("{}: cannot read the manifest: {}", manifest_path, why));
  // Checked before anything is recorded: the analysis would refuse it after.
  if (!manifest_path.empty() && !nlohmann::json::accept(manifest))
    return fail(fmt::format("{}: not a manifest: not valid JSON", manifest_path));
  std::error_code ec;
  if (Status made = make_trace_dir(o.trace_dir); !made) return fail(made.message());
  fs::path dir = fs::canonical(o.trace_dir, ec);
  if (ec) return fail(fmt::format("{}: {}", o.trace_dir, ec.message()));
  int lock = lock_trace_dir(dir, why);
  if (lock < 0) return fail(why);
  struct stat dir_at_start {};
  (void)stat(dir.c_str(), &dir_at_start);
  fs::path probe = dir / fmt::format(".vprof-probe-{}", getpid());
  if (why = make_probe(probe); !why.empty())
    return fail(fmt::format("{}: cannot write in the trace directory: {}", dir.string(), why));

  if (std::string e = retire_old_trace(dir); !e.empty()) {
    unlink(probe.c_str());
    return fail(e);
  }
  if (rename(probe.c_str(), (dir / "p-0.vpp").c_str()) != 0) unlink(probe.c_str());  // none: counts on stderr
  if (!manifest_path.empty() && !write_file(dir / "manifest.json", manifest)) {
    const int err = errno;
    restore_old_trace(dir);
    return fail(fmt::format("{}: cannot write the manifest: {}", (dir / "manifest.json").string(),
                            std::strerror(err)));
  }
  sigset_t forwarded = forwarded_set(), mask;
  sigprocmask(SIG_BLOCK, &forwarded, &mask);  // none is lost between the start and the handlers
  SpawnOptions so;
  so.search_path = true;
  so.env = {{"VPROF_TRACE_DIR", dir.string()}};
  add_sample_env(so.env, o.sample);
  so.mask = &mask;
  so.inherit_fd = lock;  // CMD holds the lock too (the top of this file)
  auto pid = spawn(o.command, so);
  if (!pid) {
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    restore_old_trace(dir);
    return fail(pid.error().message);
  }
  g_child = *pid;
  install_forwarding();
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  int rc = wait_exit(*pid);
  g_child = 0;
  // CMD's processes inherited the lock. Ours let go, a lock still held is
  // theirs: CMD started a daemon (a server that forks into the background)
  // that goes on recording here after CMD itself exited.
  close(lock);
  const bool still_recording = [&] {
    int fd = open((dir / ".lock").c_str(), O_RDWR | tracedir::kReopen);
    if (fd < 0) return false;
    const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
  }();
  // The directory renamed or replaced while CMD ran (the second hostile
  // walk: "0 thread files", exit 0, while the trace went on under the new
  // name): what is there now is not what CMD wrote, and it is said.
  struct stat dir_now {};
  if (stat(dir.c_str(), &dir_now) != 0 || dir_now.st_dev != dir_at_start.st_dev ||
      dir_now.st_ino != dir_at_start.st_ino) {
    std::fprintf(stderr,
                 "vprof: warning: %s was moved or replaced while the command ran: what was recorded before is in "
                 "the directory under its new name, files made after it could not be (that path was gone); "
                 "nothing here is summarized\n",
                 dir.c_str());
    return rc;
  }
  TraceSummary sum = summarize_trace(dir);
  std::fprintf(stderr, "vprof: trace in %s %s\n", dir.c_str(), describe(sum).c_str());
  if (still_recording) {
    std::fprintf(stderr,
                 "vprof: warning: %s exited, but processes it started still record in %s (a daemon): the "
                 "figures above are only what was written so far; stop them (the server's own stop command), "
                 "then `vprof analyze %s`. The previous trace is not kept\n",
                 o.command[0].c_str(), dir.c_str(), dir.c_str());
    fs::remove_all(dir / ".old", ec);
    return rc;
  }
  for (const std::string &line : trace::refused_lines(sum.processes, dir.string()))
    std::fprintf(stderr, "vprof: warning: %s\n", line.c_str());
  if (const std::string cause = trace::lost_records_cause(sum.dropped, sum.processes, dir.string()); !cause.empty())
    std::fprintf(stderr, "vprof: warning: records were lost: %s\n", cause.c_str());
  keep_registered_manifest(dir, sum, manifest_path);
  if (sum.records > 0) {
    fs::remove_all(dir / ".old", ec);  // the new run holds data: the old one goes
    return rc;
  }
  // Nothing recorded: the previous trace stays in DIR/.old (the next run
  // puts it back first). Records lost are a failed run, whatever CMD did;
  // CMD's own failure is the status then, else 2.
  std::string kept;
  if (fs::is_directory(dir / ".old", ec))
    kept = fmt::format("; the previous trace is kept in {}", (dir / ".old").string());
  const uint64_t lost = sum.dropped + sum.processes.lost_records;
  if (lost) {
    std::fprintf(stderr, "vprof: error: %s: nothing recorded: %llu records lost%s\n", dir.c_str(),
                 static_cast<unsigned long long>(lost), kept.c_str());
    return rc != 0 ? rc : kExitBadInput;
  }
  if (!kept.empty()) std::fprintf(stderr, "vprof: warning: %s: nothing recorded%s\n", dir.c_str(), kept.c_str());
  return rc;
}

Registrar reg("run", "run a command with the recorder on", [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<RunOptions>();
  sub.add_option("--trace-dir", o->trace_dir,
                 "directory for the trace (the previous trace in it is replaced once CMD records)");
  sub.add_option("--manifest", o->manifest,
                 "instrumenter manifest to keep with the trace (default: $VPROF_MANIFEST)");
  sub.add_option("--sample", o->sample,
                 "windowed recording: record in windows covering about PCT percent of the time, nothing "
                 "in between (sets VPROF_SAMPLE; 100: in full)")
      ->check(whole_between(1, 100))
      ->type_name("PCT");
  sub.add_option("command", o->command, "the command and its arguments, after --")->required();
  std::string env_help = "\nRuntime settings (environment):\n";
#define VPROF_OPTION_STR(field, env, def, help) env_help += fmt::format("  {:<22} {}\n", env, help);
#define VPROF_OPTION_U64(field, env, def, min, max, step, help) \
  env_help += fmt::format("  {:<22} {} (default {}, {}..{})\n", env, help, def, min, max);
#include "../runtime/options.def"
#undef VPROF_OPTION_STR
#undef VPROF_OPTION_U64
  sub.footer(env_help);
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
