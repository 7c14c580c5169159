// p-<pid>.vpp: one page per process counting what threads without a trace
// file of their own lost (trace_format.h). Made at start-up and in each
// forked child, before any thread file, so that a later failure (fd limit,
// full file system) still has a place to be counted that survives a kill.
// A process that cannot make its own counts in p-0.vpp, when `vprof run`
// made one.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/trace_dir_rules.h"
#include "recorder.h"

namespace vprof::rt {

// No process file of our own (a full file system, no descriptor): count in
// DIR/p-0.vpp, the page `vprof run` wrote for such processes, if there is
// one (its page allocated: a store is no SIGBUS); else in memory.
static void use_spare() {
  char path[4200];
  snprintf(path, sizeof path, "%s/p-0.vpp", g.dir);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= VPROF_HEADER_BYTES &&
      st.st_blocks * 512 >= VPROF_HEADER_BYTES)
    p = mmap(nullptr, VPROF_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return;
  auto *h = static_cast<vprof_process_header *>(p);
  if (memcmp(h->magic, VPROF_PROCESS_MAGIC, 8) != 0 || h->pid != 0) {
    munmap(p, VPROF_HEADER_BYTES);
    return;
  }
  g.spare = h;
  g.loss = {&h->lost_threads, &h->lost_records};
}

void process_file_thread_file_made() {
  vprof_process_header *h = g.proc;
  if (!h) return;
  const vprof_u32 me = (vprof_u32)geteuid();
  for (vprof_u32 &slot : h->thread_euids) {
    vprof_u32 seen = __atomic_load_n(&slot, __ATOMIC_RELAXED);
    // A free slot taken, or (the exchange failed: `seen` is the winner's)
    // this uid already there.
    if (seen == ~0u && __atomic_compare_exchange_n(&slot, &seen, me, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return;
    if (seen == me) return;
  }
  __atomic_fetch_add(&h->thread_euids_more, 1, __ATOMIC_RELAXED);
}

void process_file_thread_lost() {
  __atomic_fetch_add(g.loss.threads, 1, __ATOMIC_RELAXED);
  // p-0.vpp, as `vprof run` made it, knows no budget: a process that counts
  // a thread there leaves the largest it read (a race only loses a smaller
  // one). Not before: a process that never counts leaves the file as it was
  // (an old trace in a directory that refuses this run).
  if (vprof_process_header *h = g.spare) {
    if (h->budget_mb < g.opt.buffer_mb) h->budget_mb = (uint32_t)g.opt.buffer_mb;
    if (h->chunk_bytes < g.chunk_bytes) h->chunk_bytes = g.chunk_bytes;
  }
}

static int create_own() {
  char path[4200];
  int fd = -1;
  for (int n = 0; n < 1000 && fd < 0; ++n) {
    if (n == 0) snprintf(path, sizeof path, "%s/p-%u.vpp", g.dir, g.pid);
    else snprintf(path, sizeof path, "%s/p-%u.%d.vpp", g.dir, g.pid, n);  // a reused pid
    fd = open(path, O_RDWR | tracedir::kCreate, 0644);
    if (fd < 0 && errno != EEXIST) return errno;
  }
  if (fd < 0) return EEXIST;
  void *p = MAP_FAILED;
  // Space reserved before the mapping (no SIGBUS on a full disk), never past
  // ulimit -f (no SIGXFSZ).
  int err = file_may_grow_to(VPROF_HEADER_BYTES) ? posix_fallocate(fd, 0, VPROF_HEADER_BYTES) : EFBIG;
  if (err == 0) {
    p = mmap(nullptr, VPROF_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) err = errno;
  }
  close(fd);
  if (p == MAP_FAILED) {
    unlink(path);
    return err;
  }
  auto *h = static_cast<vprof_process_header *>(p);
  vprof_process_header_identity(h);
  h->pid = g.pid;
  h->ppid = g.ppid;
  h->start_realtime_ns = g.start_realtime_ns;
  memcpy(h->comm, g.comm, sizeof h->comm);
  memcpy(h->manifest_ids, g.manifest_ids, sizeof h->manifest_ids);
  h->manifest_ids_count = g.manifest_ids_count;
  h->budget_mb = (uint32_t)g.opt.buffer_mb;
  h->chunk_bytes = g.chunk_bytes;
  for (vprof_u32 &u : h->thread_euids) u = ~0u;
  memcpy(h->manifest_path, g.manifest_path, sizeof h->manifest_path);
  g.proc = h;
  g.loss = {&h->lost_threads, &h->lost_records};
  size_t stem = strlen(path) - strlen(".vpp");
  snprintf(g.maps_path, sizeof g.maps_path, "%.*s.maps", (int)stem, path);
  maps_file_write();
  return 0;
}

// Whether a /proc/self/maps line maps a file executable: its permissions
// (the second field) hold 'x' and it names a path.
static bool executable_file_line(const char *line, size_t n) {
  const char *sp = (const char *)memchr(line, ' ', n);
  if (!sp || sp + 5 > line + n || sp[3] != 'x') return false;
  return memchr(line, '/', n) != nullptr;
}

void maps_file_write() {
  if (!g.maps_path[0]) return;
  ErrnoKeeper keep_errno;
  int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp", g.maps_path);
  // A new file (one a killed process left is removed first): a link planted
  // under that name is neither followed nor written through.
  unlink(tmp);
  int out = open(tmp, O_WRONLY | tracedir::kCreate, 0644);
  if (out < 0) {
    close(in);
    return;
  }
  // Line by line, without the heap (start-up, a forked child, exit).
  char buf[8192];
  size_t have = 0;
  bool ok = true;
  for (;;) {
    ssize_t r = read(in, buf + have, sizeof buf - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += (size_t)r;
    size_t at = 0;
    while (char *nl = (char *)memchr(buf + at, '\n', have - at)) {
      size_t len = (size_t)(nl - (buf + at)) + 1;
      if (executable_file_line(buf + at, len) && write(out, buf + at, len) != (ssize_t)len) ok = false;
      at += len;
    }
    memmove(buf, buf + at, have - at);
    have -= at;
    if (have == sizeof buf) have = 0;  // a line longer than the buffer: not one we can name
  }
  close(in);
  if (close(out) != 0) ok = false;
  if (!ok || rename(tmp, g.maps_path) != 0) unlink(tmp);
}

int process_file_create() {
  ErrnoKeeper keep_errno;
  int err = create_own();
  if (err != 0) use_spare();
  return err;
}

void process_file_drop() {
  if (g.proc) munmap(g.proc, VPROF_HEADER_BYTES);
  if (g.spare) munmap(g.spare, VPROF_HEADER_BYTES);
  g.proc = g.spare = nullptr;
  g.fallback_lost[0] = g.fallback_lost[1] = 0;
  g.loss = {&g.fallback_lost[0], &g.fallback_lost[1]};
}

}  // namespace vprof::rt

// Runs from constructors, before main() (or at dlopen), once per rewritten
// file in each translation unit: each registers its own id, the signature
// the manifest lists for it. The distinct ids go to the process file, where
// a reader checks that the manifest lists every one (a file the build did
// not recompile registers an id the manifest no longer has). The first path
// is kept: one instrumentation writes one manifest.
extern "C" void vprof_register_manifest(const char *id, const char *path) {
  using vprof::rt::g;
  if (!id || !path) return;
  char *end = nullptr;
  const uint64_t v = strtoull(id, &end, 16);
  if (end != id + VPROF_MANIFEST_ID_DIGITS || *end != '\0') return;  // not an id of ours
  if (g.manifest_path[0] == '\0') snprintf(g.manifest_path, sizeof g.manifest_path, "%s", path);
  const uint32_t kept = g.manifest_ids_count < VPROF_MANIFEST_IDS ? g.manifest_ids_count : VPROF_MANIFEST_IDS;
  for (uint32_t i = 0; i < kept; ++i)
    if (g.manifest_ids[i] == v) return;
  if (kept < VPROF_MANIFEST_IDS) g.manifest_ids[kept] = v;
  g.manifest_ids_count = kept + 1;  // VPROF_MANIFEST_IDS + 1: more than a file holds, not all checked
  if (g.proc) {  // made before this constructor ran (a library opened later): the new id only
    if (kept < VPROF_MANIFEST_IDS) g.proc->manifest_ids[kept] = v;
    g.proc->manifest_ids_count = g.manifest_ids_count;
    if (g.proc->manifest_path[0] == '\0') memcpy(g.proc->manifest_path, g.manifest_path, sizeof g.manifest_path);
  }
}
