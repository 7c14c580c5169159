// The rules every writer of a trace directory keeps, the runtime's and the
// CLI's alike: a directory that root shares with a server's unprivileged
// users (1777, docs/run.md) must not let one of them steer vprof's writes.
//   - The directory is refused when it is a symbolic link, when its owner is
//     neither this user nor root, or when all may write in it and it is not
//     sticky (anyone could replace its files): refuse_trace_dir. (A group
//     that may write is trusted: a user's private group, a team's.)
//   - Every file vprof makes there is new (O_CREAT | O_EXCL, which never
//     follows a link), and every file it opens again is opened with
//     O_NOFOLLOW: a link another user planted is never written through.
//   - A file that replaces another is written to a new temporary name and
//     renamed over it (rename replaces a link, never its target).
// POSIX and libc only, no allocation: the runtime includes it too.
#ifndef VPROF_COMMON_TRACE_DIR_RULES_H
#define VPROF_COMMON_TRACE_DIR_RULES_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vprof::tracedir {

// Flags for a file vprof makes in a trace directory, and for one it opens again.
constexpr int kCreate = O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
constexpr int kReopen = O_NOFOLLOW | O_CLOEXEC;

// Whether a directory on the way to `path` (not path itself) is a symbolic
// link another user (not this one, not root) owns: its owner chooses where
// the trace goes (--trace-dir /tmp/pub/link/T, the
// link -> a root directory, made T there, 1777). The kernel's
// protected_symlinks stops following such a link in a sticky directory;
// containers often turn it off. Checked before a trace directory is made.
inline bool foreign_link_above(const char *path, char *why, size_t cap) {
  char p[4096];
  snprintf(p, sizeof p, "%s", path);
  const uid_t me = geteuid();
  for (size_t n = p[0] == '/' ? 1 : 0; p[n]; ++n) {
    if (p[n] != '/') continue;
    p[n] = '\0';
    struct stat up;
    const bool foreign = lstat(p, &up) == 0 && S_ISLNK(up.st_mode) && up.st_uid != me && up.st_uid != 0;
    if (foreign)
      snprintf(why, cap, "goes through %s, a symbolic link of uid %u, not yours nor root's: its owner chooses where "
                         "the trace goes (name the real path)",
               p, (unsigned)up.st_uid);
    p[n] = '/';
    if (foreign) return true;
  }
  return false;
}

// Whether `path` (an existing directory) may hold a trace written by this
// process: true, with `why` ("is a symbolic link ..."), when it is a link,
// another user's (not root's), or writable by all without the sticky bit.
inline bool refuse_trace_dir(const char *path, char *why, size_t cap) {
  char p[4096];
  snprintf(p, sizeof p, "%s", path);
  for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; --n) p[n - 1] = '\0';  // "dir/" names dir itself
  struct stat st;
  if (lstat(p, &st) != 0) {
    snprintf(why, cap, "%s", strerror(errno));
    return true;
  }
  const uid_t me = geteuid();
  if (foreign_link_above(p, why, cap)) return true;
  if (S_ISLNK(st.st_mode))
    snprintf(why, cap, "is a symbolic link; vprof records only into the directory itself (name its target)");
  else if (!S_ISDIR(st.st_mode))
    snprintf(why, cap, "is not a directory");
  else if (st.st_uid != me && st.st_uid != 0)
    snprintf(why, cap, "belongs to uid %u, not to uid %u nor to root: its owner could replace the trace's files",
             (unsigned)st.st_uid, (unsigned)me);
  else if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
    snprintf(why, cap, "is writable by all and not sticky (chmod +t; vprof makes it 1777 as root): any user "
                       "could replace the trace's files");
  else
    return false;
  return true;
}

// Why a file found in a trace directory under a name vprof writes is not one
// a vprof of this user (or root's) made there, or nullptr when it may be: not
// a regular file (a FIFO would hang its reader), another user's, or one with
// other hard links (another name of some file elsewhere, which writing it
// would change: a root file another user linked in where protected_hardlinks
// is off).
inline const char *foreign_file(const struct stat &st) {
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_uid != geteuid() && st.st_uid != 0) return "belongs to another user";
  if (st.st_nlink != 1) return "has other hard links (it is another name of some file elsewhere)";
  return nullptr;
}

}  // namespace vprof::tracedir

#endif
