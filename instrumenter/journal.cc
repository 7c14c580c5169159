#include "instrumenter/journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/SHA1.h>
#include <nlohmann/json.hpp>

#include "common/schema.h"

namespace vprof::instr {

namespace {

const char kMarkerHead[] = "#include <vprof/probes.h> /* vprof instrument, original sha1 ";
// A file rewritten for a build whose runs may leave probes dormant (forms.h).
const char kDormantMarkerHead[] = "#include <vprof/dormant_probes.h> /* vprof instrument, original sha1 ";
const char kBom[] = "\xEF\xBB\xBF";

std::string state_path(const std::string &dir) { return dir + "/state.json"; }
// Every text vprof wrote into the tree, one "SHA1 PATH" line each, appended
// before the text is written and kept as long as the journal is: what vprof
// may take back without a state.json (adopt_marked_files), and nothing else.
std::string written_path(const std::string &dir) { return dir + "/written"; }
std::string originals_dir(const std::string &dir) { return dir + "/originals"; }
std::string parent_of(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

bool read_all(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

Status fsync_dir(const std::string &dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return Error{dir + ": cannot open to sync: " + std::strerror(errno)};
  int rc = fsync(fd);
  close(fd);
  if (rc != 0) return Error{dir + ": cannot sync: " + std::strerror(errno)};
  return Status::Ok();
}

// Writes through a temporary in the same directory, fsync and rename(), keeping
// the file's mode, and its owner and group where this process may set them:
// a reader, or a crash, never sees half a file. The temporary is this
// process's file, so without the chown root's `vprof restore` left a tree
// that its owner could no longer instrument ("not writable": MariaDB's
// sux_lock.h, a tree built and profiled as another user). A user who may
// not give the file back (not root; the file another's) still writes it.
// The caller syncs the directory.
Status write_durably(const std::string &path, const std::string &data) {
  struct stat st {};
  mode_t mode = 0644;
  const bool existed = stat(path.c_str(), &st) == 0;
  if (existed) mode = st.st_mode & 07777;
  // A file with other hard links is written in place: a rename would leave
  // the other names holding the old text (and restore would cut the link).
  const bool in_place = existed && S_ISREG(st.st_mode) && st.st_nlink > 1;
  std::string tmp = in_place ? path : path + ".vprof-tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Error{path + ": cannot write: " + std::strerror(errno)};
  size_t done = 0;
  auto fail = [&](const char *what) {
    std::string why = std::strerror(errno);
    close(fd);
    if (!in_place) unlink(tmp.c_str());
    return Error{path + ": " + what + ": " + why};
  };
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return fail("cannot write");
    }
    done += static_cast<size_t>(n);
  }
  if (existed && (st.st_uid != geteuid() || st.st_gid != getegid()) && fchown(fd, st.st_uid, st.st_gid) != 0 &&
      errno != EPERM)
    return fail("cannot keep its owner");
  if (fchmod(fd, mode) != 0) return fail("cannot set its mode");
  if (fsync(fd) != 0) return fail("cannot sync");
  if (close(fd) != 0) {
    std::string why = std::strerror(errno);
    if (!in_place) unlink(tmp.c_str());
    return Error{path + ": cannot write: " + why};
  }
  if (!in_place && rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return Error{path + ": cannot replace: " + why};
  }
  return Status::Ok();
}

bool mkdirs(const std::string &dir) {
  for (size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') {
      std::string p = dir.substr(0, i);
      if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  return true;
}

// As root, in a tree another user owns (root instrumented a user's checkout):
// the journal becomes the tree's owner's, so that the owner can restore it.
void give_to_tree_owner(const std::string &dir) {
  if (geteuid() != 0) return;
  struct stat root {};
  if (stat(parent_of(dir).c_str(), &root) != 0 || root.st_uid == 0) return;
  auto give = [&](const std::string &p) { (void)!lchown(p.c_str(), root.st_uid, root.st_gid); };
  give(dir);
  for (const std::string &d : {dir, originals_dir(dir)}) {
    DIR *h = opendir(d.c_str());
    if (!h) continue;
    while (dirent *e = readdir(h))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) give(d + "/" + e->d_name);
    closedir(h);
  }
}

// Appends (path, text's SHA-1) pairs to the written log, durably.
Status record_written(const std::string &dir, const std::map<std::string, std::string> &rewritten) {
  std::string lines;
  for (const auto &[path, text] : rewritten) lines += sha1_hex(text) + " " + path + "\n";
  if (lines.empty()) return Status::Ok();
  const std::string p = written_path(dir);
  int fd = open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Error{p + ": cannot write: " + std::strerror(errno)};
  bool ok = true;
  for (size_t at = 0; ok && at < lines.size();) {
    ssize_t n = write(fd, lines.data() + at, lines.size() - at);
    if (n > 0) at += size_t(n);
    else if (!(n < 0 && errno == EINTR)) ok = false;
  }
  ok = fsync(fd) == 0 && ok;
  const int err = errno;
  close(fd);
  if (!ok) return Error{p + ": cannot write: " + std::strerror(err)};
  return Status::Ok();
}

Status write_state(const Journal &j) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto &f : j.files) files.push_back({{"path", f.path}, {"original_sha1", f.original_sha1}, {"ours", f.ours}});
  nlohmann::json s = {{"schema_version", schema::kJournal.version}, {"pending", j.pending}, {"files", files}};
  if (auto st = write_durably(state_path(j.dir), s.dump(2) + "\n"); !st) return st;
  return fsync_dir(j.dir);
}

}  // namespace

// Once the tree is pristine. The lock file goes too: a restored tree keeps
// nothing of vprof's (a lock held by this process stays valid on its open
// file; TreeLock::acquire checks it locked the file that is there).
Status remove_journal(const std::string &dir) {
  // state.json first: a kill after it leaves unreferenced originals (which
  // restore collects), never a state naming originals that are gone.
  if (unlink(state_path(dir).c_str()) != 0 && errno != ENOENT)
    return Error{state_path(dir) + ": the tree is restored, but the journal cannot be removed: " +
                 std::strerror(errno)};
  (void)fsync_dir(dir);
  auto ends_with = [](const std::string &s, const std::string &tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  std::string odir = originals_dir(dir);
  if (DIR *d = opendir(odir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        unlink((odir + "/" + e->d_name).c_str());
    closedir(d);
    rmdir(odir.c_str());
  }
  if (DIR *d = opendir(dir.c_str())) {  // temporaries of writes that were killed
    std::vector<std::string> tmps;
    while (dirent *e = readdir(d))
      if (ends_with(e->d_name, ".vprof-tmp")) tmps.push_back(dir + "/" + e->d_name);
    closedir(d);
    for (const auto &t : tmps) unlink(t.c_str());
  }
  unlink(written_path(dir).c_str());
  unlink((dir + "/.gitignore").c_str());
  unlink((dir + "/lock").c_str());
  rmdir(dir.c_str());  // stays if the user keeps something of theirs there
  return Status::Ok();
}

namespace {

// Drops originals no entry refers to (left by a commit that was interrupted).
void collect_garbage(const Journal &j) {
  std::set<std::string> keep;
  for (const auto &f : j.files) keep.insert(f.original_sha1);
  std::string odir = originals_dir(j.dir);
  DIR *d = opendir(odir.c_str());
  if (!d) return;
  std::vector<std::string> drop;
  while (dirent *e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && !keep.count(n)) drop.push_back(odir + "/" + n);
  }
  closedir(d);
  for (const auto &p : drop) unlink(p.c_str());
}

// SIGINT, SIGTERM, SIGHUP and SIGQUIT wait while the tree is being replaced,
// so Ctrl-C lands after the commit, not half-way through it.
class HoldSignals {
 public:
  HoldSignals() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&s, sig);
    pthread_sigmask(SIG_BLOCK, &s, &old_);
  }
  ~HoldSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

bool is_ours(const JournalEntry &e, const std::string &sum) {
  return std::find(e.ours.begin(), e.ours.end(), sum) != e.ours.end();
}

}  // namespace

std::string sha1_hex(const std::string &data) {
  auto digest = llvm::SHA1::hash(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::string marker_line(const std::string &original_sha1, bool dormant) {
  return (dormant ? kDormantMarkerHead : kMarkerHead) + original_sha1 + ": `vprof restore` removes this */\n";
}

std::optional<std::string> marker_sha1(const std::string &text) {
  size_t at = text.compare(0, 3, kBom) == 0 ? 3 : 0;
  size_t n = sizeof kMarkerHead - 1;
  if (text.compare(at, sizeof kDormantMarkerHead - 1, kDormantMarkerHead) == 0) n = sizeof kDormantMarkerHead - 1;
  else if (text.compare(at, n, kMarkerHead) != 0) return std::nullopt;
  if (text.size() < at + n + 40) return std::nullopt;
  std::string sum = text.substr(at + n, 40);
  if (sum.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return sum;
}

Expected<Journal> read_journal(const std::string &dir) {
  Journal j;
  j.dir = dir;
  std::string text;
  if (!read_all(state_path(dir), text)) return j;  // nothing instrumented
  j.exists = true;
  try {
    auto s = nlohmann::json::parse(text);
    if (auto v = schema::check(s, state_path(dir), schema::kJournal); !v) return v.error();
    j.pending = s.value("pending", false);
    for (const auto &f : s.at("files")) {
      JournalEntry e{f.at("path").get<std::string>(), f.at("original_sha1").get<std::string>(), {}};
      if (f.contains("ours")) e.ours = f.at("ours").get<std::vector<std::string>>();
      if (f.contains("instrumented_sha1")) e.ours.push_back(f.at("instrumented_sha1").get<std::string>());  // v1
      j.files.push_back(std::move(e));
    }
  } catch (const std::exception &e) {
    return Error{state_path(dir) + ": damaged: " + e.what() + "; nothing was changed. Move it aside (mv " +
                 state_path(dir) + " " + state_path(dir) + ".damaged) and run restore again: without it, restore "
                 "takes back the files whose text vprof wrote (its written log), from their markers"};
  }
  return j;
}

bool vprof_wrote(const std::string &journal_dir, const std::string &path, const std::string &text) {
  std::ifstream in(written_path(journal_dir));
  const std::string want = sha1_hex(text) + " " + path;
  std::string line;
  while (std::getline(in, line))
    if (line == want) return true;
  return false;
}

Expected<std::string> read_original(const std::string &journal_dir, const JournalEntry &e) {
  std::string text;
  std::string p = originals_dir(journal_dir) + "/" + e.original_sha1;
  if (!read_all(p, text)) return Error{p + ": the saved original of " + e.path + " is missing"};
  if (sha1_hex(text) != e.original_sha1) return Error{p + ": the saved original of " + e.path + " is damaged"};
  return text;
}

Expected<std::map<std::string, std::string>> read_originals(const Journal &j) {
  std::map<std::string, std::string> out;
  for (const auto &f : j.files) {
    auto text = read_original(j.dir, f);
    if (!text) return text.error();
    out[f.path] = std::move(*text);
  }
  return out;
}

Expected<CommitResult> commit(Journal &j, const std::map<std::string, std::string> &originals,
                              const std::map<std::string, std::string> &rewritten, const CommitOptions &o) {
  CommitResult res;
  // 0. What an interrupted commit may have left beside the files.
  for (const auto &f : j.files) unlink((f.path + ".vprof-tmp").c_str());

  // 1. Check everything before changing anything.
  std::map<std::string, std::string> want;     // path -> contents after the commit
  std::map<std::string, std::string> current;  // path -> contents now
  std::vector<JournalEntry> kept;              // left alone (force): stay in the journal
  std::vector<JournalEntry> returned;  // back to their originals without vprof (keep_returned)
  for (const auto &f : j.files) {
    std::string now;
    bool readable = read_all(f.path, now);
    std::string sum = readable ? sha1_hex(now) : "";
    // (A pending journal's file may hold its original because vprof's own
    // interrupted commit put it back.)
    if (readable && sum == f.original_sha1 && o.keep_returned && !j.pending && !rewritten.count(f.path)) {
      returned.push_back(f);
      res.returned.push_back(f.path);
      continue;
    }
    // Gone since vprof wrote it: a restore never makes a file the user
    // removed (one deleted file failed restore,
    // --force, --forget and instrument alike, and the tree stayed stuck).
    struct stat gone_st;
    if (!readable && lstat(f.path.c_str(), &gone_st) != 0 && errno == ENOENT && !rewritten.count(f.path)) {
      if (o.keep_returned && !j.pending) returned.push_back(f);
      res.gone.push_back(f.path);
      continue;
    }
    // vprof writes regular files: a link in a file's place was put there
    // since (a checkout's, the user's), and a restore through it would
    // replace the link with a file, or write where it points.
    struct stat link_st;
    const bool link = lstat(f.path.c_str(), &link_st) == 0 && S_ISLNK(link_st.st_mode);
    if (readable && !link && (sum == f.original_sha1 || is_ours(f, sum))) {
      current[f.path] = now;
      want[f.path] = originals.at(f.path);
      continue;
    }
    std::string why = link       ? "a symbolic link now, not the file vprof rewrote"
                      : readable ? "changed since vprof rewrote it"
                                 : "cannot be read";
    if (!o.force)
      return Error{f.path + ": " + why + "; nothing was changed (`vprof restore --force` restores the other files and leaves this one)"};
    res.left_alone.push_back(f.path + ": " + why + "; left as it is (its original: " + originals_dir(j.dir) + "/" +
                             f.original_sha1 + ")");
    kept.push_back(f);
  }
  for (const auto &[path, text] : rewritten) {
    if (!current.count(path)) {
      std::string now;
      if (!read_all(path, now)) return Error{path + ": cannot read"};
      if (marker_sha1(now))
        return Error{path + ": already instrumented by vprof (its first line says so) but not listed in " +
                     state_path(j.dir) + "; run `vprof restore` first"};
      current[path] = now;
    }
    if (access(path.c_str(), W_OK) != 0) return Error{path + ": not writable"};
    want[path] = text;
  }

  // The journal after this commit.
  Journal after = j;
  after.pending = false;
  after.files = kept;
  after.files.insert(after.files.end(), returned.begin(), returned.end());
  for (const auto &[path, text] : rewritten)
    after.files.push_back({path, sha1_hex(originals.at(path)), {sha1_hex(text)}});
  bool changes = false;
  for (const auto &[path, text] : want) changes |= current[path] != text;

  if (changes) {
    // 2. Originals first: every later state must be able to name them.
    std::string odir = originals_dir(j.dir);
    if (!mkdirs(odir)) return Error{odir + ": cannot create: " + std::strerror(errno) + " (nothing was changed)"};
    for (const auto &[path, text] : rewritten) {
      std::string p = odir + "/" + sha1_hex(originals.at(path));
      if (access(p.c_str(), F_OK) == 0) continue;
      if (auto s = write_durably(p, originals.at(path)); !s) return Error{s.message() + " (nothing was changed)"};
    }
    if (auto s = fsync_dir(odir); !s) return Error{s.message() + " (nothing was changed)"};
  }

  HoldSignals hold;
  if (changes) {
    // 3. The pending union: each file holds its original, an old text of ours or a new one.
    Journal pending = j;
    pending.pending = true;
    for (const auto &e : after.files) {
      auto it = std::find_if(pending.files.begin(), pending.files.end(),
                             [&](const JournalEntry &p) { return p.path == e.path; });
      if (it == pending.files.end()) pending.files.push_back(e);
      else
        for (const auto &s : e.ours)
          if (!is_ours(*it, s)) it->ours.push_back(s);
    }
    if (auto s = write_state(pending); !s) return Error{s.message() + " (nothing was changed)"};
    if (auto s = record_written(j.dir, rewritten); !s) return Error{s.message() + " (nothing was changed)"};
    j = pending;

    // 4. The tree; on failure put back what was written.
    std::vector<std::string> written;
    std::set<std::string> dirs;
    for (const auto &[path, text] : want) {
      if (current[path] == text) continue;
      if (auto s = write_durably(path, text); !s) {
        bool back = true;
        for (const auto &w : written) back &= write_durably(w, current[w]).ok();
        if (!back)
          return Error{s.message() + "; some files could not be put back: `vprof restore` restores them from " +
                       state_path(j.dir)};
        return Error{s.message() + " (nothing was changed)"};
      }
      written.push_back(path);
      dirs.insert(parent_of(path));
    }
    for (const auto &d : dirs)
      if (auto s = fsync_dir(d); !s) return Error{s.message()};
    res.files_written = written.size();
  }

  // 5. The final state.
  if (after.files.empty()) {
    if (j.exists || j.pending || changes)
      if (auto s = remove_journal(j.dir); !s) return Error{s.message()};
    after.exists = false;
  } else {
    if (auto s = write_state(after); !s)
      return Error{s.message() + " (the files are as asked; the journal still lists the earlier ones too)"};
    after.exists = true;
    collect_garbage(after);
    give_to_tree_owner(j.dir);
  }
  j = after;
  return res;
}

std::string contents(const std::string &path, const std::map<std::string, std::string> &overlay) {
  auto it = overlay.find(path);
  if (it != overlay.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace vprof::instr
