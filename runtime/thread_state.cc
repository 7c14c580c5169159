// Per-thread trace files: t-<pid>-<tid>.vpt, a header page, two rings and the
// data chunks appended after them (see trace_format.h). A thread makes system
// calls only when it writes its first record, when it fills its first ring
// (it maps the second and starts the background writer, writer.cc, which
// appends full rings from then on), when the writer lags a whole ring behind
// (it appends the pending ring itself), and when it exits. Each of these but
// the exit is recorded as a RECORDER record (the file's creation, every ring
// switch): the program's thread paid for it, and the analysis must not read
// it as the program's own time.
//
// Failure never reaches the program: space is reserved before each mapping
// (a store into a mapped hole on a full file system is SIGBUS), no file
// grows past RLIMIT_FSIZE (SIGXFSZ: file_may_grow_to), no descriptor stays
// open once a call returns (a program near its fd limit keeps its own open()
// calls), and what cannot be written is dropped and counted: in the thread's
// header when it has a file, else in the process file (process_file.cc).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

#include "common/trace_dir_rules.h"
#include "recorder.h"
#include "switches.h"
#include "window.h"

namespace vprof::rt {

static __thread bool t_finished;  // this thread's file is closed: record nothing more
static __thread bool t_creating;  // re-entry guard while the file is set up
static __thread bool t_lost;      // no memory even for the state: count records only

// A thread without a file points its ring here, empty (pos == end): every
// record takes the slow path and is counted in the process file.
static vprof_slot no_ring[1];

static void path_of(const ThreadState *t, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", g.dir, t->name);
}

// The thread's own file again, by its name: never through a link, and only
// the file it made (a file put in its place is refused, as a lost write).
static int reopen_own(const ThreadState *t, int flags) {
  char path[4200];
  path_of(t, path, sizeof path);
  int fd = open(path, flags | tracedir::kReopen);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != t->file_dev || st.st_ino != t->file_ino)) {
    close(fd);
    errno = ESTALE;
    return -1;
  }
  return fd;
}

// Creates the thread's file (O_EXCL: never another thread's or run's file)
// and fills t->name. The descriptor, or -1 with errno set.
static int open_trace_file(ThreadState *t) {
  char path[4200];
  uint32_t tid = t->hot.tid;
  for (int n = 0; n < 1000; ++n) {
    if (n == 0)
      snprintf(t->name, sizeof t->name, "t-%u-%u.vpt", g.pid, tid);
    else  // a reused tid in one process: keep both threads' files
      snprintf(t->name, sizeof t->name, "t-%u-%u.%d.vpt", g.pid, tid, n);
    path_of(t, path, sizeof path);
    int fd = open(path, O_RDWR | tracedir::kCreate, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

bool file_may_grow_to(uint64_t end) {
  struct rlimit r;
  return getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur == RLIM_INFINITY || end <= r.rlim_cur;
}

// Space for [off, off + len), reserved before it is mapped. EFBIG (a file
// size limit) fails like ENOSPC.
static bool reserve_space(int fd, off_t off, off_t len) {
  return file_may_grow_to((uint64_t)(off + len)) && posix_fallocate(fd, off, len) == 0;
}

static void fill_header(vprof_file_header *h, uint32_t tid, uint64_t tsc_base) {
  memcpy(h->magic, VPROF_TRACE_MAGIC, 8);
  h->version = VPROF_TRACE_VERSION;
  h->pending_chunk = UINT64_MAX;  // no ring pending
  h->min_readable = VPROF_TRACE_MIN_READABLE;
  h->header_bytes = VPROF_HEADER_BYTES;
  h->pid = g.pid;
  h->tid = tid;
  h->ppid = g.ppid;
  h->clock_source = clock_source();
  h->chunk_bytes = g.chunk_bytes;
  h->tsc_base = tsc_base;
  h->ticks_per_ns = g.ticks_per_ns;
  h->anchor0_ticks = g.anchor0.ticks;
  h->anchor0_ns = g.anchor0.ns;
  Anchor now = take_anchor_narrow();
  h->anchor1_ticks = now.ticks;
  h->anchor1_ns = now.ns;
  h->flags = g.invariant_tsc ? VPROF_FLAG_INVARIANT_TSC : 0;
  h->probe_pair_ns = g.probe_pair_ns;
  h->empty_interval_ns = g.empty_interval_ns;
  h->start_realtime_ns = g.start_realtime_ns;
  memcpy(h->comm, g.comm, sizeof h->comm);
  pthread_getname_np(pthread_self(), h->thread_name, sizeof h->thread_name);
}

static bool reserve_budget(uint64_t bytes) {
  uint64_t before = g.reserved_bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (before + bytes <= g.budget_bytes) return true;
  g.reserved_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  return false;
}

// Ring r of the file through fd: space reserved before it is mapped.
static vprof_slot *map_ring_fd(int fd, uint32_t r) {
  off_t off = (off_t)(VPROF_HEADER_BYTES + r * g.chunk_bytes);
  void *p = MAP_FAILED;
  if (reserve_space(fd, off, (off_t)g.chunk_bytes))
    p = mmap(nullptr, g.chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
  return p == MAP_FAILED ? nullptr : static_cast<vprof_slot *>(p);
}

// Maps the thread's first ring, right after the header. Its pages are
// faulted in once and reused for the thread's whole life.
static bool map_ring(ThreadState *t, int fd) {
  if (!reserve_budget(g.chunk_bytes)) return false;
  vprof_slot *m = map_ring_fd(fd, 0);
  if (!m) {
    g.reserved_bytes.fetch_sub(g.chunk_bytes, std::memory_order_relaxed);
    return false;
  }
  t->rings[0] = m;
  t->cur = 0;
  t->hot.start = t->hot.pos = m;
  t->hot.end = m + t->chunk_slots - 2;
  __atomic_store_n(&t->header->ring_valid, 1u, __ATOMIC_RELEASE);
  return true;
}

// The first thread file this process could not make: why (errno), and as
// whom, in the process file for the reader, and one line on stderr. A
// server that drops root (httpd, PostgreSQL, MySQL, nginx) makes its
// threads after setuid: a directory only root may write refuses them all.
static void note_refused(int err) {
  vprof_process_header *h = g.proc;
  if (!h || err == 0) return;
  uint32_t none = 0;
  const uint32_t euid = (uint32_t)geteuid();
  __atomic_store_n(&h->file_euid, euid, __ATOMIC_RELAXED);
  if (!__atomic_compare_exchange_n(&h->file_errno, &none, (uint32_t)err, false, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED))
    return;
  char line[4600];
  int n = snprintf(line, sizeof line,
                   "vprof: process %u (%s) running as uid %u cannot create its thread files in %s: %s; "
                   "their records are lost%s\n",
                   g.pid, g.comm, euid, g.dir, strerror(err),
                   err == EACCES || err == EPERM
                       ? " (make the directory writable, and every directory above it searchable, by "
                         "that user: `vprof run` and `vprof iterate` make theirs writable when they run as root)"
                       : "");
  if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

// The thread's header page and ring, mapped from a new file whose descriptor
// is closed before this returns. False: no usable file, and none left behind
// (an empty file would read as a truncated trace).
static bool make_file(ThreadState *t, uint64_t tsc_base) {
  int fd = open_trace_file(t);
  if (fd < 0) {
    note_refused(errno);
    return false;
  }
  void *h = MAP_FAILED;
  int err = ENOSPC;
  if (reserve_space(fd, 0, VPROF_HEADER_BYTES)) {
    h = mmap(nullptr, VPROF_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    err = errno;
  }
  if (h == MAP_FAILED) {
    char path[4200];
    path_of(t, path, sizeof path);
    unlink(path);
    close(fd);
    note_refused(err);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) == 0) {
    t->file_dev = st.st_dev;
    t->file_ino = st.st_ino;
  }
  process_file_thread_file_made();
  t->header = static_cast<vprof_file_header *>(h);
  t->hot.tsc_base = tsc_base;
  t->chunk_slots = g.chunk_bytes / VPROF_SLOT_BYTES;
  fill_header(t->header, t->hot.tid, t->hot.tsc_base);
  if (!map_ring(t, fd)) {  // drops, counted in the header, from the first record
    t->dropping = true;
    t->hot.start = t->hot.pos = t->hot.end = no_ring;
  }
  close(fd);
  return true;
}

void count_lost_record() { __atomic_fetch_add(g.loss.records, 1, __ATOMIC_RELAXED); }

ThreadState *thread_create() {
  if (!g.active.load(std::memory_order_relaxed) || g.exiting.load(std::memory_order_relaxed) ||
      t_finished || t_creating)
    return nullptr;
  if (t_lost) {
    count_lost_record();
    return nullptr;
  }
  t_creating = true;
  ErrnoKeeper keep_errno;
  const uint64_t began = vprof_now();  // the file's times count from here: the pause's start fits
  void *mem = mmap(nullptr, sizeof(ThreadState), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ThreadState *t = nullptr;
  if (mem == MAP_FAILED) {
    t_lost = true;
    process_file_thread_lost();
    count_lost_record();
  } else {
    t = new (mem) ThreadState();
    t->hot.tid = (uint32_t)syscall(SYS_gettid);
    if (!make_file(t, began)) {
      // No file (fd limit, no space, refused): a state without one, so that
      // each record is counted once, in the process file, without retrying.
      t->dropping = true;
      t->hot.start = t->hot.pos = t->hot.end = no_ring;
      process_file_thread_lost();
    } else if (!window_sampled()) {
      switches_open(t);  // sampled: only while it records (window_observe)
    }
    pthread_mutex_lock(&g.registry_lock);
    t->next = g.threads;
    if (g.threads) g.threads->prev = t;
    g.threads = t;
    pthread_mutex_unlock(&g.registry_lock);
    pthread_setspecific(g.exit_key, t);
    // Flagged before a signal handler's probe can see the state: its records
    // would come before the first one, at earlier times (emit_slots drops them).
    t->hot.busy = !t->dropping;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    vprof_tls = &t->hot;
    // The first record: what making the file, its ring and the switch ring
    // cost this thread (a file system under load can make it milliseconds).
    if (!t->dropping) {
      write_recorder(t, began, vprof_now() - began);
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      t->hot.busy = 0;
      // Windowed: the state the thread begins in (a window may be open), as
      // it is now: making the file took time, the window may have moved on.
      // Recording, its stack is unknown: a forked child's thread is in the
      // frames its parent was in (the reader finds them by their exits).
      if (window_sampled()) {
        const uint64_t w = *window_word_ptr;
        t->resumed_tick = vprof_now();
        emit_slots(t, VPROF_K_WINDOW,
                   VPROF_WINDOW_ARG(window_state(w), 0, 0, 0, 0, window_seq(w)) |
                       (window_recording(w) ? VPROF_WINDOW_UNKNOWN_BIT : 0),
                   t->resumed_tick, nullptr, 0);
        window_set_seen(t, w);
        if (window_recording(w)) switches_open(t);
      }
    }
  }
  t_creating = false;
  return t;
}

void write_recorder(ThreadState *t, uint64_t began, uint64_t ticks) {
  vprof_slot *s = t->hot.pos;
  if (s >= t->hot.end) return;  // no room: the pause goes unmarked, as before version 5
  s->arg = ticks;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  s->w0 = ((began - t->hot.tsc_base) << VPROF_TS_SHIFT) | VPROF_K_RECORDER;
  t->hot.pos = s + 1;
}

void thread_count_drop(ThreadState *t) {
  if (t->header) __atomic_fetch_add(&t->header->dropped_records, 1, __ATOMIC_RELAXED);
  else count_lost_record();
}

void thread_count_reentry(ThreadState *t) {
  if (t->header) __atomic_fetch_add(&t->header->reentered_records, 1u, __ATOMIC_RELAXED);
  thread_count_drop(t);
}

static void write_marker(ThreadState *t, uint32_t kind) {
  // The two slots past hot.end are reserved for DROP_BEGIN and THREAD_EXIT.
  vprof_slot *s = t->hot.pos;
  s->arg = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  s->w0 = ((vprof_now() - t->hot.tsc_base) << VPROF_TS_SHIFT) | kind;
  t->hot.pos = s + 1;
}

static void start_dropping(ThreadState *t) {
  t->dropping = true;
  if (t->has_ring()) {
    write_marker(t, VPROF_K_DROP_BEGIN);
    t->hot.end = t->hot.pos;  // every later record takes the slow path and is counted
  }
}

static void update_anchor(ThreadState *t) {
  Anchor a = take_anchor_narrow();
  t->header->anchor1_ticks = a.ticks;
  t->header->anchor1_ns = a.ns;
}


static bool write_all(int fd, const void *buf, size_t n, off_t off) {
  const char *p = static_cast<const char *>(buf);
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
    off += w;
  }
  return true;
}

bool append_pending(ThreadState *t) {
  // The order keeps every record readable if the process dies at any point:
  // until data_chunks passes pending_chunk the ring is read in place; from
  // then on the appended copy is, and the ring may be zeroed.
  ErrnoKeeper keep_errno;
  vprof_slot *ring = t->rings[1 - t->cur];
  const uint64_t n = t->header->pending_chunk;
  const off_t off = (off_t)(VPROF_HEADER_BYTES + (2 + n) * g.chunk_bytes);
  if (!file_may_grow_to((uint64_t)off + t->pending_used)) return false;  // as if no space
  int fd = reopen_own(t, O_WRONLY);  // no descriptor kept open
  if (fd < 0) return false;
  bool ok = write_all(fd, ring, t->pending_used, off);
  close(fd);
  if (!ok) return false;  // a short write (no space): data_chunks not bumped
  __atomic_store_n(&t->header->data_chunks, n + 1, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  memset(ring, 0, t->pending_used);
  t->pending.store(0, std::memory_order_release);
  return true;
}

bool thread_next_chunk(ThreadState *t) {
  if (t->dropping || !t->has_ring()) return false;
  const uint64_t began = vprof_now();
  // The full ring becomes a data chunk: budget for it first.
  if (!reserve_budget(g.chunk_bytes)) {
    start_dropping(t);
    return false;
  }
  if (!t->rings[1]) {
    // The first ring is full: this thread writes a lot. Map the second here
    // (once per thread); from now on the writer appends full rings.
    ErrnoKeeper keep_errno;
    int fd = reopen_own(t, O_RDWR);
    if (fd >= 0) {
      t->rings[1] = map_ring_fd(fd, 1);
      close(fd);
    }
    if (!t->rings[1]) {
      g.reserved_bytes.fetch_sub(g.chunk_bytes, std::memory_order_relaxed);
      start_dropping(t);
      return false;
    }
    t->wants_writer.store(true, std::memory_order_release);
    writer_start();
  } else if (t->pending.load(std::memory_order_acquire)) {
    // The writer lags a whole ring behind (the machine's cores are busy):
    // append the pending ring here, as every switch did before version 3.
    pthread_mutex_lock(&t->ring_lock);
    bool ok = !t->pending.load(std::memory_order_acquire) || append_pending(t);
    pthread_mutex_unlock(&t->ring_lock);
    if (!ok) {
      g.reserved_bytes.fetch_sub(g.chunk_bytes, std::memory_order_relaxed);
      start_dropping(t);
      return false;
    }
    if (g.opt.writer) {
      __atomic_fetch_add(&t->header->late_switches, 1u, __ATOMIC_RELAXED);
      if (!g.writer_started.load(std::memory_order_relaxed)) writer_start();  // it failed to start
    }
  }
  // Switch: the full ring is pending (it becomes data chunk data_chunks),
  // then the other one is current. A reader between the two stores reads the
  // empty other ring as pending and the full one as current: the same records.
  const uint32_t other = 1 - t->cur;
  t->pending_used = (size_t)(t->hot.pos - t->ring()) * VPROF_SLOT_BYTES;
  __atomic_store_n(&t->header->pending_chunk, __atomic_load_n(&t->header->data_chunks, __ATOMIC_ACQUIRE),
                   __ATOMIC_RELEASE);
  __atomic_store_n(&t->header->cur_ring, other, __ATOMIC_RELEASE);
  t->cur = other;
  ++t->ring_switches;
  t->pending.store(1, std::memory_order_release);
  t->hot.start = t->hot.pos = t->ring();
  t->hot.end = t->ring() + t->chunk_slots - 2;
  t->multi_end = nullptr;  // of the ring's last pass: not where its next record ends
  update_anchor(t);
  writer_wake();
  t->pause_ticks = vprof_now() - began;  // written after the record that paid for it
  if (t->pause_ticks == 0) t->pause_ticks = 1;
  return true;
}

static void unregister(ThreadState *t) {
  pthread_mutex_lock(&g.registry_lock);
  if (t->prev) t->prev->next = t->next;
  else if (g.threads == t) g.threads = t->next;
  if (t->next) t->next->prev = t->prev;
  pthread_mutex_unlock(&g.registry_lock);
}

void thread_finish(ThreadState *t) {
  ErrnoKeeper keep_errno;
  if (t->has_ring() && !t->hot.busy) switches_drain(t, vprof_now());
  switches_close(t);
  t->hot.busy = 1;  // a signal arriving now records nothing
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  unregister(t);  // first: the exit handler must not mark a header we unmap
  // The writer may be appending for this thread: wait for it. A ring still
  // pending stays where it is, read in place (trace_format.h).
  pthread_mutex_lock(&t->ring_lock);
  const bool other_free = t->rings[1] && !t->pending.load(std::memory_order_acquire);
  pthread_mutex_unlock(&t->ring_lock);
  if (t->has_ring()) {
    write_marker(t, VPROF_K_THREAD_EXIT);
    uint64_t used = (uint64_t)(t->hot.pos - t->ring()) * VPROF_SLOT_BYTES;
    g.reserved_bytes.fetch_sub(g.chunk_bytes - used, std::memory_order_relaxed);
    // Give the ring's unused tail back to the file system (it reads as zeros).
    // MADV_REMOVE punches the hole through the mapping: no descriptor needed.
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t keep = (used + page - 1) / page * page;
    if (keep < g.chunk_bytes)
      madvise(reinterpret_cast<char *>(t->ring()) + keep, g.chunk_bytes - keep, MADV_REMOVE);
    if (other_free) madvise(t->rings[1 - t->cur], g.chunk_bytes, MADV_REMOVE);  // all zeros
  }
  if (t->header) {
    update_anchor(t);
    __atomic_fetch_or(&t->header->flags, VPROF_FLAG_CLOSED, __ATOMIC_RELEASE);
    for (vprof_slot *r : t->rings)
      if (r) munmap(r, g.chunk_bytes);
    munmap(t->header, VPROF_HEADER_BYTES);
  }
  if (vprof_tls == &t->hot) vprof_tls = &vprof_rt_none;
  t_finished = true;
  pthread_setspecific(g.exit_key, nullptr);
  munmap(t, sizeof(ThreadState));
}

void threads_after_fork_in_child() {
  // The inherited mappings are the parent's files: drop them unwritten. The
  // parent's other threads do not exist here.
  for (ThreadState *t = g.threads; t;) {
    ThreadState *next = t->next;
    for (vprof_slot *r : t->rings)
      if (r) munmap(r, g.chunk_bytes);
    if (t->header) munmap(t->header, VPROF_HEADER_BYTES);
    // No switches_close: perf's ring is never copied into a child
    // (VM_DONTCOPY), and its address may hold something else by now.
    munmap(t, sizeof(ThreadState));
    t = next;
  }
  g.threads = nullptr;
  writer_forget_after_fork();  // the parent's writer does not exist here
  vprof_tls = &vprof_rt_none;
  t_finished = false;
  t_creating = false;
  t_lost = false;
  pthread_setspecific(g.exit_key, nullptr);
}

void thread_never_records() { t_finished = true; }

void threads_mark_process_exit(ThreadState *self) {
  pthread_mutex_lock(&g.registry_lock);
  for (ThreadState *t = g.threads; t; t = t->next)
    if (t != self && t->header)
      __atomic_fetch_or(&t->header->flags, VPROF_FLAG_PROCESS_EXITED, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g.registry_lock);
}

}  // namespace vprof::rt
