#include "analyzer/read/recording.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <vprof/trace_format.h>

#include "analyzer/names/names.h"
#include "common/output_file.h"
#include "common/sample.h"
#include "common/trace_dir_rules.h"

namespace fs = std::filesystem;

namespace vprof::trace {
namespace {

uint64_t records_in(const fs::path &dir) {
  auto d = TraceDir::open(dir.string());
  return d ? (*d)->count().records : 0;
}

constexpr const char *kRepeatOf = "repeat-of";  // Recording::mark_repeat_of

// What the run's processes wrote: thread files, process files, and
// p-<pid>.maps (and the .tmp a killed process left while writing it), which
// go with their process files (trace_format.h).
bool is_recorded_data(const std::string &name) {
  auto ends = [&](const char *s) {
    size_t n = std::strlen(s);
    return name.size() > n && name.compare(name.size() - n, n, s) == 0;
  };
  return is_thread_file(name) ||
         (name.rfind("p-", 0) == 0 && (ends(".vpp") || ends(".maps") || ends(".maps.tmp")));
}

// A trace: the recorded data, and what names it: the manifest, places.json
// (and a killed analysis's places.json.<pid>.tmp), repeat-of.
bool is_trace_file(const std::string &name) {
  return is_recorded_data(name) || name == "manifest.json" || name.rfind("places.json", 0) == 0 ||
         name == kRepeatOf;
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
    if (records_in(dir) == 0) {
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

// Step 1's probe (see the top of this file): DIR/.vprof-probe-XXXXXX, a
// process file of no process (pid 0) with its page written: the only sure
// test that the runtime will be able to write (permissions, read-only mounts,
// immutable flags, root, a full file system). Its name is new and not
// guessed (mkostemp: O_EXCL, a random suffix), so nothing another user put in
// a shared directory under a name vprof would pick stops the run. `probe`
// gets the name; "" or why not.
std::string make_probe(const fs::path &dir, fs::path &probe) {
  struct rlimit lim;  // a page past ulimit -f would be SIGXFSZ
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < VPROF_HEADER_BYTES)
    return fmt::format("the file size limit (ulimit -f) is {} bytes", lim.rlim_cur);
  std::string name = (dir / ".vprof-probe-XXXXXX").string();
  int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  probe = name;
  const mode_t mask = umask(0);  // 0644 less the umask, as an open() would make it
  umask(mask);
  (void)fchmod(fd, 0644 & ~mask);
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

// The manifest the program's instrumented code registered (trace_format.h,
// process file): copied in when none was given, so `vprof analyze` names the
// ids with no flag; a given one that is not it is said, not silently used.
void keep_registered_manifest(const fs::path &dir, const ProcessFiles &p, const std::string &given,
                              const std::function<void(const std::string &)> &say) {
  if (p.manifests.empty()) return;
  const std::set<std::string> paths = manifest_paths(p);
  if (paths.size() > 1) {
    say(fmt::format("warning: the program registered {} different instrumentations' manifests; names in the "
                    "report may be wrong",
                    paths.size()));
    return;
  }
  const std::string &path = *paths.begin();
  auto ids = [](const std::string &manifest) {
    auto names = analyzer::load_manifest(manifest);
    return names ? names->ids : std::set<std::string>{};
  };
  if (!given.empty()) {
    if (listed(p, ids(given)) != Listed::All)
      say(fmt::format("warning: {} is not the manifest the program was built with (it does not list {}, which the "
                      "program registered; the program's: {})",
                      given, unlisted(p, ids(given)), path));
    return;
  }
  // Read once and checked as copied: an instrument that replaces the file
  // meanwhile cannot slip another instrumentation's names in.
  std::string text, why;
  const fs::path copy = dir / "manifest.json";
  const bool copied = read_file(path, text, why) && write_file(copy, text);
  const std::set<std::string> listed_ids = copied ? ids(copy.string()) : std::set<std::string>{};
  const Listed l = listed(p, listed_ids);
  if (l == Listed::All) return;
  std::error_code ec;
  fs::remove(copy, ec);
  if (!copied && !text.empty())
    say(fmt::format("warning: cannot copy {} into {}", path, dir.string()));
  else if (l == Listed::None)
    say(fmt::format("warning: the program was built from manifest {} ({}), which {}; the trace has no names", path,
                    unlisted(p, listed_ids), text.empty() ? "is gone" : "now holds another instrumentation"));
  else
    say("warning: " + build_mismatch(p, dir.string(), listed_ids));
}

}  // namespace

Expected<std::unique_ptr<Recording>> Recording::start(const std::string &path, const std::string &manifest_path) {
  return prepare(path, manifest_path, false);
}

Expected<std::unique_ptr<Recording>> Recording::add_to(const std::string &path) { return prepare(path, "", true); }

Expected<std::unique_ptr<Recording>> Recording::prepare(const std::string &path, const std::string &manifest_path,
                                                        bool add) {
  std::string manifest, why;
  if (!manifest_path.empty() && !read_file(manifest_path, manifest, why))
    return Error{fmt::format("{}: cannot read the manifest: {}", manifest_path, why)};
  // Checked before anything is recorded: the analysis would refuse it after.
  if (!manifest_path.empty() && !nlohmann::json::accept(manifest))
    return Error{fmt::format("{}: not a manifest: not valid JSON", manifest_path)};
  if (Status made = make_trace_dir(path); !made) return Error{made.message()};
  std::error_code ec;
  const fs::path dir = fs::canonical(path, ec);
  if (ec) return Error{fmt::format("{}: {}", path, ec.message())};
  std::unique_ptr<Recording> r(new Recording);
  r->dir_ = dir.string();
  r->manifest_path_ = manifest_path;
  r->lock_ = lock_trace_dir(dir, why);
  if (r->lock_ < 0) return Error{why};
  struct stat at_start {};
  if (stat(dir.c_str(), &at_start) == 0) {
    r->dev_ = at_start.st_dev;
    r->ino_ = at_start.st_ino;
  }
  fs::path probe;
  if (why = make_probe(dir, probe); !why.empty())
    return Error{fmt::format("{}: cannot write in the trace directory: {}", dir.string(), why)};
  r->added_ = add;
  if (add) {  // the trace there is this run's too; p-0.vpp is there
    unlink(probe.c_str());
    return r;
  }
  if (std::string e = retire_old_trace(dir); !e.empty()) {
    unlink(probe.c_str());
    return Error{e};
  }
  if (rename(probe.c_str(), (dir / "p-0.vpp").c_str()) != 0) unlink(probe.c_str());  // none: counts on stderr
  if (!manifest_path.empty() && !write_file(dir / "manifest.json", manifest)) {
    const int err = errno;
    restore_old_trace(dir);
    return Error{fmt::format("{}: cannot write the manifest: {}", (dir / "manifest.json").string(), std::strerror(err))};
  }
  return r;
}

Recording::~Recording() {
  if (lock_ >= 0) close(lock_);
}

std::vector<std::pair<std::string, std::string>> Recording::env(int sample) const {
  std::vector<std::pair<std::string, std::string>> e{{"VPROF_TRACE_DIR", dir_}};
  add_sample_env(e, sample);
  return e;
}

void Recording::abandon() {
  if (!added_) restore_old_trace(dir_);
}

bool Recording::mark_repeat_of(const std::string &original) const {
  std::error_code ec;
  const fs::path canon = fs::weakly_canonical(original, ec);
  return write_file(fs::path(dir_) / kRepeatOf, (ec ? fs::path(original) : canon).string() + "\n");
}

Deleted delete_recorded_data(const std::string &dir) {
  Deleted out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    if (!is_recorded_data(e.path().filename().string())) continue;
    std::error_code sz;
    const uint64_t size = e.is_regular_file(sz) && !e.is_symlink(sz) ? e.file_size(sz) : 0;
    if (fs::remove(e.path(), sz)) {
      ++out.files;
      out.bytes += size;
    }
  }
  return out;
}

std::string repeat_of(const std::string &dir) {
  const fs::path path = fs::path(dir) / kRepeatOf;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";  // none, or not the one this file writes
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

Recording::Outcome Recording::finish(const std::function<void(const std::string &)> &say) {
  Outcome out;
  const fs::path dir = dir_;
  // The command's processes inherited the lock. Ours let go, a lock still
  // held is theirs: the command started a daemon (a server that forks into
  // the background) that goes on recording here after the command exited.
  if (lock_ >= 0) close(lock_);
  lock_ = -1;
  out.still_recording = [&] {
    int fd = open((dir / ".lock").c_str(), O_RDWR | tracedir::kReopen);
    if (fd < 0) return false;
    const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
  }();
  // The directory renamed or replaced while the command ran: what is there
  // now is not what it wrote.
  struct stat now {};
  if (stat(dir.c_str(), &now) != 0 || now.st_dev != dev_ || now.st_ino != ino_) {
    out.moved = true;
    return out;
  }
  if (auto d = TraceDir::open(dir_)) out.trace = std::move(*d);
  if (added_) return out;  // the trace's manifest and previous trace were settled by its first run
  std::error_code ec;
  if (out.still_recording) {  // the daemon's trace is the one kept
    fs::remove_all(dir / ".old", ec);
    return out;
  }
  keep_registered_manifest(dir, out.trace ? out.trace->processes() : ProcessFiles{}, manifest_path_, say);
  // The previous trace goes once the new one holds a record (a scan of the
  // records only when there is a previous trace to decide on).
  if (fs::is_directory(dir / ".old", ec)) {
    if (out.trace && out.trace->count().records > 0) fs::remove_all(dir / ".old", ec);
    else out.kept_old = (dir / ".old").string();
  }
  return out;
}

}  // namespace vprof::trace
