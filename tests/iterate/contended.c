/* A server's shapes that made vprof's final answer name the machine, not the
 * code, each with one planted cause: `contended SHAPE SEED`. Four workers
 * serve requests; each request is one interval whose root is `serve`.
 *   same   every worker runs `update_table`, which takes `table_lock`; in 1
 *          call in 20 it rebuilds the index (`rebuild_index`, ~1 ms) while
 *          holding the lock. Holder and waiters run the same function, the
 *          usual shape of a server's lock contention.
 *   barge  the same, and a stats thread takes `table_lock` for a microsecond
 *          every few: it barges in after a release, ahead of the waiters
 *          glibc woke, and releases the lock many times during one wait.
 *   wake   no lock; each reply is handed to a writer thread through a pipe
 *          (`write` wakes it): on a busy machine, where the worker is
 *          preempted. The planted cause: 1 request in 20 compresses its
 *          reply (`compress_reply`, 1.4-2.2 ms unoptimized; at half that a
 *          full suite's run once ranked parse_request's own time above it).
 *   spin   1 request in 10 paces itself (`pace`): a spin loop of 10 000
 *          `clock_gettime` calls. One worker.
 * Busy loops, not sleeps or calls, so the planted functions have no callees
 * but the ones named. The work is counted, not timed, and a seed picks the stalls. */
#define _GNU_SOURCE
#include <vprof/vprof.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kWorkers = 4, kRequests = 250 };

enum shape { SAME, BARGE, WAKE, SPIN };
static enum shape shape = SAME;
static unsigned seed = 1;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int serving = 1;
static int reply_pipe[2];
static long table_rows;

void busy(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

void rebuild_index(void) {
  for (volatile long i = 0; i < 1200000; i = i + 1) {
  }
}

void update_table(unsigned *rng) {
  pthread_mutex_lock(&table_lock);
  busy(2000);
  table_rows++;
  if (rand_r(rng) % 20 == 0) rebuild_index();
  pthread_mutex_unlock(&table_lock);
}

void compress_reply(void) {
  for (volatile long i = 0; i < 2400000; i = i + 1) {
  }
}

void pace(void) {
  struct timespec ts;
  for (int i = 0; i < 10000; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
}

void parse_request(void) { busy(20000); }

void send_reply(unsigned *rng) {
  if (rand_r(rng) % 20 == 0) compress_reply();
  char byte = 'r';
  if (write(reply_pipe[1], &byte, 1) != 1) abort();
}

void serve(unsigned *rng) {
  parse_request();
  switch (shape) {
  case SAME:
  case BARGE:
    update_table(rng);
    break;
  case WAKE:
    send_reply(rng);
    break;
  case SPIN:
    if (rand_r(rng) % 10 == 0) pace();
    break;
  }
  busy(5000);
}

static void *worker(void *arg) {
  uintptr_t w = (uintptr_t)arg;
  unsigned rng = seed * 7919u + (unsigned)w;
  for (uint64_t i = 1; i <= kRequests; ++i) {
    uint64_t id = w * 100000 + i;
    vprof_interval_begin(id);
    serve(&rng);
    vprof_interval_end(id);
  }
  return NULL;
}

void record_stats(void) {
  pthread_mutex_lock(&table_lock);
  busy(300);
  pthread_mutex_unlock(&table_lock);
}

static void *stats(void *arg) {
  (void)arg;
  while (serving) {
    record_stats();
    busy(3000);
  }
  return NULL;
}

void write_out(void) { busy(3000); }

static void *writer(void *arg) {
  (void)arg;
  char byte;
  while (read(reply_pipe[0], &byte, 1) == 1) write_out();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    if (!strcmp(argv[1], "barge")) shape = BARGE;
    else if (!strcmp(argv[1], "wake")) shape = WAKE;
    else if (!strcmp(argv[1], "spin")) shape = SPIN;
    else if (strcmp(argv[1], "same")) {
      fprintf(stderr, "contended: unknown shape %s\n", argv[1]);
      return 2;
    }
  }
  if (argc > 2) seed = (unsigned)atoi(argv[2]);
  if (pipe(reply_pipe) != 0) return 1;
  pthread_t helper = 0, workers[kWorkers];
  if (shape == BARGE) pthread_create(&helper, NULL, stats, NULL);
  if (shape == WAKE) pthread_create(&helper, NULL, writer, NULL);
  /* Spinning: one worker, so that the kernel's time slices (and a busy
   * neighbour's) do not hide the loop's variance. */
  const int n = shape == SPIN ? 1 : kWorkers;
  for (uintptr_t w = 0; w < (uintptr_t)n; ++w) pthread_create(&workers[w], NULL, worker, (void *)(w + 1));
  for (int w = 0; w < n; ++w) pthread_join(workers[w], NULL);
  serving = 0;
  close(reply_pipe[1]);
  if (helper) pthread_join(helper, NULL);
  printf("served %d requests, %ld rows\n", n * kRequests, table_rows);
  return 0;
}
