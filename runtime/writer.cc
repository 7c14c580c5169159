// The background writer: one thread per process, started when a thread first
// fills a ring. It appends each thread's pending ring to the thread's file
// and zeroes it for the thread's next switch (thread_state.cc), so that a
// ring switch on the probe path stores a few words and makes no system call:
// beside a busy disk the kernel's dirty-page throttling waits here, not in the
// program's threads (docs/performance.md measured 2.3 ms a switch there, in
// the thread, before).
//
// It sleeps on a futex; a thread wakes it after each switch (FUTEX_WAKE only
// when it sleeps: never a blocking call). It records nothing and takes no
// signal of the program's.
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"

namespace vprof::rt {
namespace {

long futex(std::atomic<uint32_t> *word, int op, uint32_t val, const timespec *timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), op, val, timeout, nullptr, 0);
}

void *writer_main(void *) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  thread_never_records();
  uint64_t pass = 0;
  for (;;) {
    const uint32_t seen = g.writer_seq.load();
    ++pass;
    // Every thread with a pending ring, once a pass. A thread's lock is
    // taken before the registry's is let go, so thread_finish (which
    // unregisters first, then takes it) waits for us rather than unmapping
    // under us. A busy lock: the thread appends it itself, or is exiting.
    for (;;) {
      ThreadState *pick = nullptr;
      pthread_mutex_lock(&g.registry_lock);
      for (ThreadState *t = g.threads; t; t = t->next) {
        if (!t->wants_writer.load(std::memory_order_acquire) || t->served_pass == pass ||
            !t->pending.load(std::memory_order_acquire))
          continue;
        if (pthread_mutex_trylock(&t->ring_lock) != 0) continue;
        t->served_pass = pass;
        pick = t;
        break;
      }
      pthread_mutex_unlock(&g.registry_lock);
      if (!pick) break;
      // A failed write leaves the ring pending (read in place); the thread
      // meets it at its next switch and stops recording there.
      if (pick->pending.load(std::memory_order_acquire)) append_pending(pick);
      pthread_mutex_unlock(&pick->ring_lock);
    }
    g.writer_waiting.store(1);
    if (g.writer_seq.load() == seen) {
      timespec ts{1, 0};  // and a look now and then
      futex(&g.writer_seq, FUTEX_WAIT_PRIVATE, seen, &ts);
    }
    g.writer_waiting.store(0);
  }
  return nullptr;
}

}  // namespace

void writer_start() {
  if (!g.opt.writer) return;  // VPROF_WRITER=0: every thread appends its own rings
  bool expected = false;
  if (!g.writer_started.compare_exchange_strong(expected, true)) return;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 256 * 1024);
  pthread_t th;
  // The program's signals stay off the new thread from its first instant.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int err = pthread_create(&th, &a, writer_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&a);
  if (err != 0) {
    g.writer_started.store(false);  // threads drop at their next switch; the next first switch retries
    return;
  }
  pthread_setname_np(th, "vprof-writer");
}

void writer_wake() {
  g.writer_seq.fetch_add(1);
  if (g.writer_waiting.load()) {
    ErrnoKeeper keep_errno;
    futex(&g.writer_seq, FUTEX_WAKE_PRIVATE, 1, nullptr);
  }
}

void writer_forget_after_fork() {
  g.writer_started.store(false);
  g.writer_waiting.store(0);
}

}  // namespace vprof::rt
