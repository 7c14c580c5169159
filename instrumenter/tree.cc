#include "instrumenter/tree.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "instrumenter/compile_db.h"
#include "instrumenter/journal.h"

namespace fs = std::filesystem;

namespace vprof::instr {

namespace {

bool has_state(const std::string &dir) { return access((dir + "/.vprof/state.json").c_str(), F_OK) == 0; }

std::string parent(const std::string &d) {
  size_t slash = d.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : d.substr(0, slash);
}

bool lists_a_file_below(const std::string &journal_dir, const std::string &root) {
  auto j = read_journal(journal_dir);
  if (!j) return true;  // damaged: let the caller's read say so
  for (const auto &f : j->files)
    if (f.path.compare(0, root.size() + 1, root + "/") == 0) return true;
  return false;
}

// Directories strictly below `root` holding a journal, among the compile db's
// sources' directories and their parents up to the root.
std::set<std::string> journals_below(const CompileDb &db, const std::string &root) {
  std::set<std::string> seen, found;
  for (const auto &e : db.entries) {
    for (std::string d = parent(e.file); d.size() > root.size() && d.compare(0, root.size() + 1, root + "/") == 0;
         d = parent(d)) {
      if (!seen.insert(d).second) break;
      if (has_state(d)) found.insert(d);
    }
  }
  return found;
}

struct Held {
  int fd;
  int count;
};
std::mutex g_mu;
std::map<std::string, Held> g_held;

}  // namespace

Expected<TreePlace> locate_tree(const std::string &build_dir, const std::string &source_root) {
  std::error_code ec;
  if (fs::exists(build_dir, ec) && !fs::is_directory(build_dir, ec))
    return Error{build_dir + ": not a directory: -p names the build directory (where compile_commands.json is), "
                             "or any directory of the source tree"};
  if (!fs::is_directory(build_dir, ec))
    return Error{build_dir + ": no such build directory (if it was removed, run `vprof restore` in the source "
                             "tree: its journal is SOURCE_ROOT/.vprof)"};
  std::string build = fs::canonical(build_dir, ec).string();
  if (ec) return Error{build_dir + ": " + ec.message()};
  // An older vprof kept the journal in the build directory.
  if (access((build + "/.vprof/state.json").c_str(), F_OK) == 0) return TreePlace{build + "/.vprof", ""};

  std::string root;
  std::optional<CompileDb> db;
  if (!source_root.empty()) {
    root = fs::weakly_canonical(fs::absolute(source_root, ec), ec).string();
  } else if (access((build + "/compile_commands.json").c_str(), F_OK) == 0) {
    auto loaded = load_compile_db(build);
    if (!loaded) return loaded.error();
    db = std::move(*loaded);
    root = db->common_root;
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (!root.empty()) {
    // A journal above the root (a build directory that sees only part of the
    // tree) counts only when it lists files of this tree.
    for (std::string d = root;; d = parent(d)) {
      if (has_state(d) && (d == root || lists_a_file_below(d + "/.vprof", root)))
        return TreePlace{d + "/.vprof", d};
      if (d == "/") break;
    }
    // A journal below the compile db's root: the tree was instrumented with
    // a narrower --source-root (MariaDB's db lists generated sources in the
    // build directory, so its common root is above src/, where the session's
    // journal is). Looked for in the sources' own directories only.
    if (db) {
      auto below = journals_below(*db, root);
      if (below.size() == 1) return TreePlace{*below.begin() + "/.vprof", *below.begin()};
      if (below.size() > 1) {
        std::string list;
        for (const auto &d : below) list += (list.empty() ? "" : ", ") + d + "/.vprof";
        return Error{build_dir + ": " + std::to_string(below.size()) +
                     " vprof journals below the compile db's root " + root + " (" + list +
                     "): pass --source-root to say which tree"};
      }
    }
    return TreePlace{root + "/.vprof", root};
  }
  for (std::string d = build;; d = parent(d)) {
    if (has_state(d)) return TreePlace{d + "/.vprof", d};
    if (d == "/") break;
  }
  return Error{build_dir + ": not a build directory (no compile_commands.json) and no vprof journal "
                           "(.vprof/state.json) in it or above it: nothing vprof made is here"};
}

Expected<TreeLock> TreeLock::acquire(const std::string &dir) {
  std::lock_guard<std::mutex> l(g_mu);
  auto it = g_held.find(dir);
  if (it != g_held.end()) {
    ++it->second.count;
    return TreeLock(dir);
  }
  if (mkdir(dir.c_str(), 0755) == 0) {
    // Whatever a kill leaves here (this lock, saved originals) stays out of
    // the user's `git status`.
    int fd = open((dir + "/.gitignore").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    const char text[] = "# vprof's journal (docs/instrument.md)\n*\n";
    if (fd >= 0) (void)!write(fd, text, sizeof text - 1), close(fd);
  } else if (errno != EEXIST) {
    return Error{dir + ": cannot create: " + std::strerror(errno)};
  }
  std::string path = dir + "/lock";
  for (int attempt = 0; attempt < 5; ++attempt) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Error{path + ": cannot open: " + std::strerror(errno)};
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      char pid[32] = {};
      (void)!pread(fd, pid, sizeof pid - 1, 0);
      pid[std::strcspn(pid, "\n")] = '\0';
      close(fd);
      if (err == EWOULDBLOCK)
        return Error{path + ": another vprof (pid " + std::string(pid[0] ? pid : "?") +
                     ") is instrumenting or restoring this tree; wait for it to finish"};
      return Error{path + ": cannot lock: " + std::strerror(err)};
    }
    // The holder before us may have removed the file (a restored tree keeps no
    // journal): a lock on an unlinked file guards nothing, so take it again.
    struct stat a {}, b {};
    if (fstat(fd, &a) != 0 || stat(path.c_str(), &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
      close(fd);
      continue;
    }
    std::string me = std::to_string(getpid()) + "\n";
    if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, me.data(), me.size(), 0);
    g_held[dir] = {fd, 1};
    return TreeLock(dir);
  }
  return Error{path + ": cannot lock: the file keeps being replaced"};
}

TreeLock::~TreeLock() {
  if (!live_) return;
  std::lock_guard<std::mutex> l(g_mu);
  auto it = g_held.find(dir_);
  if (it == g_held.end() || --it->second.count > 0) return;
  // A tree with no journal keeps nothing of vprof's: not even the lock.
  // A tree with no journal keeps nothing of vprof's, not even the lock. Saved
  // originals with no state.json stay: a file's marker may still name one (a
  // state.json removed by hand); the next commit collects them.
  if (access((dir_ + "/state.json").c_str(), F_OK) != 0) {
    rmdir((dir_ + "/originals").c_str());
    if (access((dir_ + "/originals").c_str(), F_OK) != 0) (void)remove_journal(dir_);
  }
  close(it->second.fd);
  g_held.erase(it);
}

}  // namespace vprof::instr
