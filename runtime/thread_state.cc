// Per-thread trace files: t-<pid>-<tid>.vpt, a header page and a sequence of
// ring chunk (see trace_format.h). Syscalls happen only here: when a thread
// writes its first record, when it fills its ring, and when it exits.
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

#include "recorder.h"

namespace vprof::rt {

static __thread bool t_finished;  // this thread's file is closed: record nothing more
static __thread bool t_creating;  // re-entry guard while the file is set up

static int open_trace_file(uint32_t tid) {
  char path[4200];
  for (int n = 0; n < 1000; ++n) {
    if (n == 0)
      snprintf(path, sizeof path, "%s/t-%u-%u.vpt", g.dir, g.pid, tid);
    else  // a reused tid in one process: keep both threads' files
      snprintf(path, sizeof path, "%s/t-%u-%u.%d.vpt", g.dir, g.pid, tid, n);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

static void fill_header(vprof_file_header *h, uint32_t tid, uint64_t tsc_base) {
  memcpy(h->magic, VPROF_TRACE_MAGIC, 8);
  h->version = VPROF_TRACE_VERSION;
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
  Anchor now = take_anchor();
  h->anchor1_ticks = now.ticks;
  h->anchor1_ns = now.ns;
  h->flags = g.invariant_tsc ? VPROF_FLAG_INVARIANT_TSC : 0;
  h->probe_pair_ns = g.probe_pair_ns;
  h->empty_interval_ns = g.empty_interval_ns;
  h->start_realtime_ns = g.start_realtime_ns;
  memcpy(h->comm, g.comm, sizeof h->comm);
  pthread_getname_np(pthread_self(), h->thread_name, sizeof h->thread_name);
}

ThreadState *thread_create() {
  if (!g.active.load(std::memory_order_relaxed) || g.exiting.load(std::memory_order_relaxed) ||
      t_finished || t_creating)
    return nullptr;
  t_creating = true;
  void *mem = mmap(nullptr, sizeof(ThreadState), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ThreadState *t = nullptr;
  if (mem != MAP_FAILED) {
    t = new (mem) ThreadState();
    t->hot.tid = (uint32_t)syscall(SYS_gettid);
    t->fd = open_trace_file(t->hot.tid);
    void *h = MAP_FAILED;
    if (t->fd >= 0 && ftruncate(t->fd, VPROF_HEADER_BYTES) == 0)
      h = mmap(nullptr, VPROF_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
    if (h == MAP_FAILED) {
      if (t->fd >= 0) close(t->fd);
      munmap(mem, sizeof(ThreadState));
      t = nullptr;
    } else {
      t->header = static_cast<vprof_file_header *>(h);
      t->hot.tsc_base = vprof_now();
      t->chunk_slots = g.chunk_bytes / VPROF_SLOT_BYTES;
      fill_header(t->header, t->hot.tid, t->hot.tsc_base);
      pthread_mutex_lock(&g.registry_lock);
      t->next = g.threads;
      if (g.threads) g.threads->prev = t;
      g.threads = t;
      pthread_mutex_unlock(&g.registry_lock);
      pthread_setspecific(g.exit_key, t);
      thread_next_chunk(t);  // on failure the thread drops from its first record
      vprof_tls = &t->hot;
    }
  }
  t_creating = false;
  return t;
}

void thread_count_drop(ThreadState *t) {
  __atomic_fetch_add(&t->header->dropped_records, 1, __ATOMIC_RELAXED);
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
  if (t->has_chunk) {
    write_marker(t, VPROF_K_DROP_BEGIN);
    t->hot.end = t->hot.pos;  // every later record takes the slow path and is counted
  }
}

static void update_anchor(ThreadState *t) {
  Anchor a = take_anchor();
  t->header->anchor1_ticks = a.ticks;
  t->header->anchor1_ns = a.ns;
}

static bool reserve_budget(uint64_t bytes) {
  uint64_t before = g.reserved_bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (before + bytes <= g.budget_bytes) return true;
  g.reserved_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  return false;
}

// Maps the thread's ring: the first chunk after the header. Its pages are
// faulted in once and reused for the thread's whole life.
static bool map_ring(ThreadState *t) {
  if (!reserve_budget(g.chunk_bytes)) return false;
  void *p = MAP_FAILED;
  if (ftruncate(t->fd, (off_t)(VPROF_HEADER_BYTES + g.chunk_bytes)) == 0)
    p = mmap(nullptr, g.chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd,
             VPROF_HEADER_BYTES);
  if (p == MAP_FAILED) {
    g.reserved_bytes.fetch_sub(g.chunk_bytes, std::memory_order_relaxed);
    return false;
  }
  t->chunk = static_cast<vprof_slot *>(p);
  t->has_chunk = true;
  t->hot.pos = t->chunk;
  t->hot.end = t->chunk + t->chunk_slots - 2;
  __atomic_store_n(&t->header->ring_valid, 1u, __ATOMIC_RELEASE);
  return true;
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

bool thread_next_chunk(ThreadState *t) {
  if (t->dropping) return false;
  if (!t->has_chunk) {
    if (map_ring(t)) return true;
    start_dropping(t);
    return false;
  }
  // Append the full ring to the data region, then reuse it. The order of the
  // header updates keeps every record readable if the process dies at any
  // point: until data_chunks grows the ring is still valid; from then until
  // the ring is zeroed, ring_valid is 0 and the appended copy is the one read.
  if (!reserve_budget(g.chunk_bytes)) {
    start_dropping(t);
    return false;
  }
  uint64_t n = t->header->data_chunks;
  size_t used = (size_t)(t->hot.pos - t->chunk) * VPROF_SLOT_BYTES;
  off_t off = (off_t)(VPROF_HEADER_BYTES + (1 + n) * g.chunk_bytes);
  if (!write_all(t->fd, t->chunk, used, off)) {
    g.reserved_bytes.fetch_sub(g.chunk_bytes, std::memory_order_relaxed);
    start_dropping(t);
    return false;
  }
  __atomic_store_n(&t->header->data_chunks, n + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&t->header->ring_valid, 0u, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  memset(t->chunk, 0, used);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&t->header->ring_valid, 1u, __ATOMIC_RELEASE);
  t->hot.pos = t->chunk;
  t->hot.end = t->chunk + t->chunk_slots - 2;
  update_anchor(t);
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
  t->hot.busy = 1;  // a signal arriving now records nothing
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  unregister(t);  // first: the exit handler must not mark a header we unmap
  if (t->has_chunk) {
    write_marker(t, VPROF_K_THREAD_EXIT);
    uint64_t used = (uint64_t)(t->hot.pos - t->chunk) * VPROF_SLOT_BYTES;
    g.reserved_bytes.fetch_sub(g.chunk_bytes - used, std::memory_order_relaxed);
    // Give the ring's unused tail back to the file system (it reads as zeros).
    uint64_t keep = (used + 4095) / 4096 * 4096;
    if (keep < g.chunk_bytes)
      fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                (off_t)(VPROF_HEADER_BYTES + keep), (off_t)(g.chunk_bytes - keep));
  }
  update_anchor(t);
  __atomic_fetch_or(&t->header->flags, VPROF_FLAG_CLOSED, __ATOMIC_RELEASE);
  if (t->has_chunk) munmap(t->chunk, g.chunk_bytes);
  munmap(t->header, VPROF_HEADER_BYTES);
  close(t->fd);
  if (vprof_tls == &t->hot) vprof_tls = nullptr;
  t_finished = true;
  pthread_setspecific(g.exit_key, nullptr);
  munmap(t, sizeof(ThreadState));
}

void threads_after_fork_in_child() {
  // The inherited mappings are the parent's files: drop them unwritten. The
  // parent's other threads do not exist here.
  for (ThreadState *t = g.threads; t;) {
    ThreadState *next = t->next;
    if (t->has_chunk) munmap(t->chunk, g.chunk_bytes);
    munmap(t->header, VPROF_HEADER_BYTES);
    close(t->fd);
    munmap(t, sizeof(ThreadState));
    t = next;
  }
  g.threads = nullptr;
  vprof_tls = nullptr;
  t_finished = false;
  t_creating = false;
  pthread_setspecific(g.exit_key, nullptr);
}

void threads_mark_process_exit(ThreadState *self) {
  pthread_mutex_lock(&g.registry_lock);
  for (ThreadState *t = g.threads; t; t = t->next)
    if (t != self) __atomic_fetch_or(&t->header->flags, VPROF_FLAG_PROCESS_EXITED, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g.registry_lock);
}

}  // namespace vprof::rt
