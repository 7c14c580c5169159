#include "analyzer/read/process_files.h"

#include <dirent.h>
#include <pwd.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <vprof/trace_format.h>

#include "analyzer/read/trace_dir.h"

namespace vprof::trace {

namespace {

// The oldest process files read: those of the runtimes that write thread
// files of format 8, the oldest the trace reader reads.
constexpr unsigned kOldestRead = 8;

// "" when h was read and can be used, else why not.
std::string read_one(const std::string &path, vprof_process_header &h, uid_t *owner = nullptr) {
  // Never through a link: a process file is one a recording process made.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::string("cannot read: ") + std::strerror(errno);
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) why = "not a regular file";
  else if (pread(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
    why = "truncated: a process file is " + std::to_string(sizeof h) + " bytes";
  else if (std::memcmp(h.magic, VPROF_PROCESS_MAGIC, 8) != 0) why = "not a vprof process file (bad magic)";
  else if (h.version < kOldestRead || h.min_readable > VPROF_PROCESS_VERSION || h.min_readable > h.version)
    why = "process file version " + std::to_string(h.version) + " (min_readable " +
          std::to_string(h.min_readable) + ") is not one this reader knows (it reads " + std::to_string(kOldestRead) +
          " to " + std::to_string(VPROF_PROCESS_VERSION) + ")";
  close(fd);
  if (owner) *owner = st.st_uid;
  return why;
}

// What the thread files in `dir` that dropped records say of it: the largest
// budget among their processes (their headers' pid; p's largest when none is
// known), and how many of the drops were a signal handler's probe that
// interrupted a record (reentered_records).
struct Droppers {
  uint64_t budget_mb = 0;
  uint64_t reentered = 0;
};

Droppers droppers(const ProcessFiles &p, const std::string &dir) {
  Droppers out;
  DIR *d = opendir(dir.c_str());
  if (!d) return {p.budget_mb, 0};
  while (dirent *e = readdir(d)) {
    const std::string name = e->d_name;
    if (!is_thread_file(name)) continue;
    const int fd = open((dir + "/" + name).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    vprof_file_header h;
    struct stat st {};
    const bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) &&
                    std::memcmp(h.magic, VPROF_TRACE_MAGIC, 8) == 0;
    close(fd);
    if (!ok || h.dropped_records == 0) continue;
    out.reentered += std::min<uint64_t>(h.reentered_records, h.dropped_records);
    if (h.reentered_records >= h.dropped_records) continue;  // the budget played no part
    if (auto it = p.budget_mb_by_pid.find(h.pid); it != p.budget_mb_by_pid.end())
      out.budget_mb = std::max(out.budget_mb, it->second);
  }
  closedir(d);
  if (!out.budget_mb) out.budget_mb = p.budget_mb;
  return out;
}

}  // namespace

ProcessFiles read_process_files(const std::string &dir) {
  ProcessFiles out;
  std::set<uint32_t> unchecked;  // pids whose threads used more uids than their files keep
  DIR *d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 7 || name.compare(0, 2, "p-") != 0 || name.compare(name.size() - 4, 4, ".vpp") != 0) continue;
    vprof_process_header h;
    uid_t owner = 0;
    if (std::string why = read_one(dir + "/" + name, h, &owner); !why.empty()) {
      out.warnings.push_back(dir + "/" + name + ": " + why +
                             "; not read (what threads without a trace file lost, and the program's "
                             "manifest, are unknown for its process)");
      continue;
    }
    ++out.files;
    if (h.pid) out.pids.insert(h.pid);
    if (h.pid) {  // a reused pid: its files' union
      std::set<uint32_t> &owners = out.thread_owners[h.pid];
      owners.insert(owner);
      for (uint32_t u : h.thread_euids)
        if (u != ~0u) owners.insert(u);
      if (h.thread_euids_more) unchecked.insert(h.pid);
    }
    out.lost_threads += h.lost_threads;
    out.lost_records += h.lost_records;
    out.ownership_misses += h.ownership_misses;
    h.manifest_path[sizeof h.manifest_path - 1] = '\0';
    const uint32_t n = std::min<uint32_t>(h.manifest_ids_count, VPROF_MANIFEST_IDS);
    for (uint32_t i = 0; i < n; ++i) {
      char id[VPROF_MANIFEST_ID_DIGITS + 1];
      std::snprintf(id, sizeof id, "%0*llx", VPROF_MANIFEST_ID_DIGITS, static_cast<unsigned long long>(h.manifest_ids[i]));
      out.manifests[id] = h.manifest_path;
    }
    if (h.manifest_ids_count > VPROF_MANIFEST_IDS) {
      out.ids_overflow = true;
      out.warnings.push_back(dir + "/" + name + ": the program registered more than " +
                             std::to_string(VPROF_MANIFEST_IDS) +
                             " rewritten files' ids; those past the file's room are not checked against the "
                             "manifest");
    }
    out.preemption |= h.preemption;
    out.budget_mb = std::max<uint64_t>(out.budget_mb, h.budget_mb);
    out.chunk_bytes = std::max<uint64_t>(out.chunk_bytes, h.chunk_bytes);
    if (h.pid) out.budget_mb_by_pid[h.pid] = h.budget_mb;
    if (h.file_errno != 0) {
      auto same = std::find_if(out.refused.begin(), out.refused.end(), [&](const ProcessFiles::Refused &r) {
        return r.euid == h.file_euid && r.err == h.file_errno;
      });
      if (same != out.refused.end()) {
        ++same->processes;
      } else {
        h.comm[sizeof h.comm - 1] = '\0';
        out.refused.push_back({h.pid, h.file_euid, h.file_errno, h.comm, 1});
      }
    }
  }
  closedir(d);
  for (uint32_t pid : unchecked) out.thread_owners.erase(pid);
  return out;
}

std::string lost_records_cause(uint64_t dropped, const ProcessFiles &p, const std::string &dir) {
  if (dropped + p.lost_records == 0) return "";
  struct statvfs fs{};
  if (statvfs(dir.c_str(), &fs) != 0) return "";
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  const double free_mib = static_cast<double>(free_bytes) / (1024.0 * 1024.0);
  if (free_bytes < 2 * p.chunk_bytes)
    return fmt::format("{} has {:.1f} MiB free: its file system filled up (a --trace-dir on a larger one, or "
                       "--sample to record in windows)",
                       dir, free_mib);
  // A file size limit (ulimit -f, inherited by the command from this
  // process): the runtime stops a file from growing past it, and its
  // records are dropped as on a full disk; neither the budget nor the disk.
  struct rlimit fsize {};
  if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
      (dropped || p.lost_records))
    return fmt::format("the file size limit (ulimit -f) is {} bytes here: trace files stopped growing there "
                       "(ulimit -f unlimited, then run again)",
                       static_cast<unsigned long long>(fsize.rlim_cur));
  // Records dropped in files that exist: a signal handler's probe that
  // interrupted a record (PostgreSQL's latch handler: 1-3 a run), the
  // budget, or a write that failed.
  if (dropped) {
    const Droppers dr = droppers(p, dir);
    const std::string reentered =
        fmt::format("{} of a signal handler's probe{} that ran while {} thread was writing a record (such a "
                    "record is dropped; nothing to raise)",
                    dr.reentered, dr.reentered == 1 ? "" : "s", dr.reentered == 1 ? "its" : "their");
    if (dr.reentered >= dropped) return reentered;
    return fmt::format("{}a process reached its budget (VPROF_BUFFER_MB{}), or {}'s file system was full for a "
                       "while ({:.0f} MiB free now): raise VPROF_BUFFER_MB, or --sample to record in windows",
                       dr.reentered ? reentered + "; the rest: " : "",
                       dr.budget_mb ? fmt::format(", {} MiB", dr.budget_mb) : "", dir, free_mib);
  }
  // Only threads without a file: the refusals' lines name their errno.
  if (!p.refused.empty()) return "";
  return fmt::format("threads got no trace file (file descriptors exhausted: ulimit -n; or {}'s file system full "
                     "for a while, {:.0f} MiB free now)",
                     dir, free_mib);
}

std::vector<std::string> refused_lines(const ProcessFiles &p, const std::string &dir) {
  std::vector<std::string> lines;
  for (const auto &r : p.refused) {
    std::string out;
    std::string user = std::to_string(r.euid);
    struct passwd pw, *found = nullptr;
    char buf[4096];
    if (getpwuid_r(r.euid, &pw, buf, sizeof buf, &found) == 0 && found)
      user = std::string(found->pw_name) + " (uid " + std::to_string(r.euid) + ")";
    out += "process " + std::to_string(r.pid) + " (" + r.comm + ")";
    if (r.processes > 1) out += " and " + std::to_string(r.processes - 1) + " more";
    out += ", running as " + user + ", could not create thread files in " + dir + ": " + std::strerror((int)r.err);
    if (r.err == EACCES || r.err == EPERM) {
      out += "; its threads recorded nothing. A server that drops root writes as its new user: make the "
             "directory writable, and every directory above it searchable, by " + user +
             " (chmod 1777, as `vprof run` and `vprof iterate` do to a trace directory they make as root) "
             "and run again";
      // The directory's own mode may be right and one above it shut (mktemp -d's 0700).
      std::string up = dir;
      while (up.size() > 1 && up.find('/') != std::string::npos) {
        up = up.substr(0, up.rfind('/'));
        if (up.empty()) break;
        struct stat st;
        if (stat(up.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) {
          char mode[8];
          std::snprintf(mode, sizeof mode, "%o", (unsigned)(st.st_mode & 07777));
          out += "; " + up + " above it is not searchable by other users (mode " + mode + ")";
          break;
        }
      }
    }
    lines.push_back(std::move(out));
  }
  return lines;
}

namespace {

std::vector<std::string> unlisted_ids(const ProcessFiles &p, const std::set<std::string> &accepted) {
  std::vector<std::string> out;
  for (const auto &[id, path] : p.manifests)
    if (!accepted.count(id)) out.push_back(id);
  return out;
}

}  // namespace

Listed listed(const ProcessFiles &p, const std::set<std::string> &accepted) {
  const size_t n = unlisted_ids(p, accepted).size();
  return n == 0 ? Listed::All : n == p.manifests.size() ? Listed::None : Listed::Some;
}

std::string unlisted(const ProcessFiles &p, const std::set<std::string> &accepted) {
  const std::vector<std::string> ids = unlisted_ids(p, accepted);
  if (ids.empty()) return "";
  return "id " + ids.front() + (ids.size() > 1 ? " and " + std::to_string(ids.size() - 1) + " more" : "");
}

std::set<std::string> manifest_paths(const ProcessFiles &p) {
  std::set<std::string> out;
  for (const auto &[id, path] : p.manifests) out.insert(path);
  return out;
}

std::string build_mismatch(const ProcessFiles &p, const std::string &dir, const std::set<std::string> &accepted) {
  const char *advice =
      "the build did not recompile every file vprof rewrote (does it track header dependencies? "
      "PostgreSQL: ./configure --enable-depend); rebuild it from clean and run again";
  if (accepted.empty()) return "";
  switch (listed(p, accepted)) {
    case Listed::All: return "";
    case Listed::None:
      return dir + ": the traced program was built from another instrumentation (" + unlisted(p, accepted) +
             ") than this one, whose manifest lists none of its ids: " + advice;
    case Listed::Some: break;
  }
  return dir + ": the traced program holds code of two or more instrumentations (" + unlisted(p, accepted) +
         " registered by its rewritten files is not this manifest's): " + advice;
}

}  // namespace vprof::trace
