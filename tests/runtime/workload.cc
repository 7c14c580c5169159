// A program the runtime tests run under VPROF_TRACE_DIR, one scenario per
// mode. Each scenario's expected trace is known to the test exactly.
//   workload roundtrip
//   workload threads N M        N threads, M function enter/exit pairs each (ids 0..M-1)
//   workload short N            N short-lived threads, 64 at a time, 5 pairs each
//   workload fork M             parent and child each write M pairs
//   workload kill M             writes pairs forever; prints "ready" after M pairs
//   workload handoff            thread B blocks on a mutex thread A releases
//   workload stalewaker         a release no one waits for, then a 5 ms wait on the same
//                               object that no release ends (runtime_test.cc,
//                               AReleaseNoOneWaitedForIsNotAWaker)
//   workload condmutex          a condition wait that takes its mutex back only after the
//                               signaller's unlock 3 ms later; then 100 that return at once
//                               (runtime_test.cc, AConditionWaitNamesItsMutex...)
//   workload straddle R         windowed recording: a forked child begins a wait between
//                               windows; the parent, in a counted interval of the next
//                               window, releases it and holds the window open until the
//                               wait has ended; R rounds (exits 4 when no wait began off)
//   workload nestedwaits R      windowed recording: a thread begins a wait and a wait inside
//                               it between windows (PostgreSQL's LWLock wait around its
//                               semaphore's) and ends both in the next window, opened by
//                               another thread's intervals; R rounds (exits 4 when none
//                               straddled)
//   workload budget N M         N threads x M pairs into whatever budget the env gives
//   workload preempt MS         two threads pinned to one CPU, busy for MS ms each inside
//                               one interval: the kernel must preempt them
//   workload manyids N          registers N distinct ids, each twice
//   workload manifests ID...    registers each ID as its instrumentation's manifest (as
//                               the constructors of instrumented files do), then one pair
//   workload spans N            call sites (runtime_test.cc, Spans): a call with nothing
//                               recorded inside (site 1), nested (2 around 3), recursive
//                               (4 in 4), around a function (5 around 6), 2 ms long (7),
//                               then N calls of site 8 (across ring switches with a small
//                               VPROF_CHUNK_KB)
//   workload xproc N            two processes (fork, no exec) share a PTHREAD_PROCESS_SHARED
//                               mutex in MAP_SHARED memory: the parent holds it in function 5
//                               for a varying time (0.3-2.3 ms, seeded), the child's N
//                               intervals (function 1) each block on it
//   workload labels N           N intervals whose client labels are not valid UTF-8
//                               ("cli\xff", a cut sequence, an overlong '/') and one that is
//   workload holdrace R         R intervals whose four probes each meet a ring filled to its
//                               end between their look at the flag and the flag
//                               (hold_race.cc); exits 10-14 when one wrote past the end
//   workload pooled T N         T threads x N intervals whose ids are the addresses of
//                               request objects from malloc, freed when each ends (reused)
//   workload sparse N           two threads of N intervals, ids 1..N and 100000001..
//   workload passwindows N US   windowed recording: N intervals of US us, each begun on the
//                               main thread and ended on another
//   workload windows T N US     windowed recording (VPROF_SAMPLE): the parent and a forked
//                               child each run T threads of N intervals, ids unique; each
//                               interval is function 1 > site 2 > function 3 spinning US
//                               microseconds; between intervals, function 4 spins as long
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

// Every probe with the dormant probes' test, as in a build ahead (probes.h):
// the runtime tests leave some dormant.
#define VPROF_DORMANT_PROBES 1
#include <vprof/probes.h>
#include <vprof/vprof.h>

#include "roundtrip_script.h"
#include "runtime/window.h"

static void pairs(uint32_t m) {
  for (uint32_t i = 0; i < m; ++i) {
    vprof_fn_enter(i);
    vprof_fn_exit(i);
  }
}

static void run_threads(int n, uint32_t m) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back(pairs, m);
  for (auto &t : ts) t.join();
}

static uint64_t mono_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

// Busy inside interval `iv` for `ms` ms on CPU 0, in function 1.
// n intervals of `ms` each, busy on CPU 0 (two of these preempt each other).
static void busy_pinned_many(uint64_t first, uint32_t n, uint32_t ms) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);
  volatile uint64_t x = 0;
  for (uint32_t k = 0; k < n; ++k) {
    vprof_interval_begin(first + k);
    vprof_fn_enter(1);
    for (uint64_t end = mono_ms() + ms; mono_ms() < end;)
      for (int i = 0; i < 10000; ++i) x += i;
    vprof_fn_exit(1);
    vprof_interval_end(first + k);
  }
}

static void busy_pinned(uint64_t iv, uint32_t ms) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);
  vprof_interval_begin(iv);
  vprof_fn_enter(1);
  volatile uint64_t x = 0;
  for (uint64_t end = mono_ms() + ms; mono_ms() < end;)
    for (int i = 0; i < 10000; ++i) x += i;
  vprof_fn_exit(1);
  vprof_interval_end(iv);
}

// A wake-up edge across processes, as between PostgreSQL backends.
struct SharedRound {
  pthread_mutex_t m;
  std::atomic<int> held;  // round the parent holds the mutex for
  std::atomic<int> done;  // round the child finished
};

static void locked(pthread_mutex_t *m) {
  vprof_sync_wait_begin(m, VPROF_SYNC_MUTEX);
  pthread_mutex_lock(m);
  vprof_sync_wait_end(m, VPROF_SYNC_MUTEX, 1);
}

static void unlocked(pthread_mutex_t *m) {
  vprof_sync_release(m, VPROF_SYNC_MUTEX);
  pthread_mutex_unlock(m);
}

// 1 when thread `tid` sleeps in futex(2) on `word` (blocked on that mutex, as
// the kernel reports it in /proc/self/task/TID/syscall: the call's number,
// then its arguments, the first the futex word's address), 0 when not, -1
// when the kernel does not say.
static int blocked_on(pid_t tid, const void *word) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *f = std::fopen(path, "r");
  if (!f) return -1;
  long nr = -1;
  unsigned long long arg0 = 0;
  int got = std::fscanf(f, "%ld %llx", &nr, &arg0);
  std::fclose(f);
  if (got < 1) return -1;
  return got == 2 && nr == SYS_futex && arg0 == (unsigned long long)(uintptr_t)word;
}

// A mutex handed from thread A to thread B, released only once B is seen
// blocked on it (not after a sleep long enough on an idle machine); A first
// takes and drops it `uncontended` times.
static void handoff(int uncontended) {
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  static std::atomic<int> stage{0};
  static std::atomic<pid_t> b_tid{0};
  std::thread a([uncontended] {
    for (int i = 0; i < uncontended; ++i) {
      locked(&m);
      unlocked(&m);
    }
    locked(&m);
    stage = 1;
    while (stage != 2) std::this_thread::yield();
    int seen;
    while ((seen = blocked_on(b_tid, &m)) == 0) std::this_thread::yield();
    if (seen < 0) usleep(20000);  // the kernel does not say: give B time to block
    unlocked(&m);
  });
  std::thread b([] {
    b_tid = (pid_t)syscall(SYS_gettid);
    while (stage != 1) std::this_thread::yield();
    stage = 2;
    locked(&m);
    unlocked(&m);
  });
  a.join();
  b.join();
}

// What the ownership map holds when no one waits. Thread A takes
// and drops m uncontended; later B times a 5 ms wait on m that no release
// ends (a wait the program ended otherwise). Then C waits on n while A
// releases it (a release someone waited for), and after that B again times a
// 5 ms wait on n that no release ends. Neither of B's waits was ended by A.
static void stale_waker() {
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  static int n;
  std::thread([] {
    locked(&m);
    unlocked(&m);
  }).join();
  auto b = [](const void *obj) {
    std::thread([obj] {
      vprof_sync_wait_begin(obj, VPROF_SYNC_MUTEX);
      usleep(5000);
      vprof_sync_wait_end(obj, VPROF_SYNC_MUTEX, 1);
    }).join();
  };
  b(&m);
  static std::atomic<int> stage{0};
  std::thread c([] {
    vprof_sync_wait_begin(&n, VPROF_SYNC_MUTEX);
    stage = 1;
    while (stage != 2) std::this_thread::yield();
    vprof_sync_wait_end(&n, VPROF_SYNC_MUTEX, 1);
  });
  std::thread a([] {
    while (stage != 1) std::this_thread::yield();
    usleep(2000);
    vprof_sync_release(&n, VPROF_SYNC_MUTEX);
    stage = 2;
  });
  a.join();
  c.join();
  b(&n);
}

// A waits on condition cv with mutex m, as a wrapped pthread_cond_wait does
// (the probes' condition form). B takes m once A is in the wait (A set
// `waiting` under m, and the wait gave m up), signals, and holds m 3 ms more:
// A's wait takes m back only after B's unlock, which is recorded because
// A's wait counts m as waited for. Then 100 condition waits on the main
// thread that return at once (a timed wait already past its deadline):
// each is taken back whole, its WAIT_MUTEX with it.
static void cond_mutex() {
  static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  static int waiting, ready;
  std::thread a([] {
    locked(&m);
    waiting = 1;
    while (!ready) {
      vprof_sync_cond_wait_begin(&cv, VPROF_SYNC_CONDVAR, &m);
      pthread_cond_wait(&cv, &m);
      vprof_sync_wait_end(&cv, VPROF_SYNC_CONDVAR, 1);
    }
    unlocked(&m);
  });
  std::thread b([] {
    for (;;) {
      locked(&m);
      if (waiting) break;
      unlocked(&m);
      usleep(200);
    }
    ready = 1;
    vprof_sync_release(&cv, VPROF_SYNC_CONDVAR);
    pthread_cond_signal(&cv);
    usleep(3000);
    unlocked(&m);
  });
  a.join();
  b.join();
  for (int i = 0; i < 100; ++i) {
    vprof_sync_cond_wait_begin(&cv, VPROF_SYNC_CONDVAR_TIMED, &m);
    vprof_sync_wait_end(&cv, VPROF_SYNC_CONDVAR_TIMED, 0);
  }
}

static int cross_process(int n) {
  void *mem = mmap(nullptr, sizeof(SharedRound), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 3;
  auto *r = new (mem) SharedRound;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(&r->m, &a);
  r->held = -1;
  r->done = -1;
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 4;
  if (pid == 0) {  // the waiter: each interval blocks until the holder releases
    for (int i = 0; i < n; ++i) {
      while (r->held.load() != i) std::this_thread::yield();
      vprof_interval_begin((uint64_t)i + 1);
      vprof_fn_enter(1);
      locked(&r->m);
      unlocked(&r->m);
      vprof_fn_exit(1);
      vprof_interval_end((uint64_t)i + 1);
      r->done = i;
    }
    std::exit(0);  // the recorder's atexit closes the child's files
  }
  uint32_t seed = 12345;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    uint32_t hold_us = 300 + (seed >> 8) % 2000;
    locked(&r->m);
    r->held = i;
    vprof_fn_enter(5);
    usleep(hold_us);
    unlocked(&r->m);  // released inside function 5, as a lock holder does
    vprof_fn_exit(5);
    while (r->done.load() != i) std::this_thread::yield();
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static void spin_us(uint32_t us) {
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000l + (b.tv_nsec - a.tv_nsec) < (long)us * 1000);
}

static void window_intervals(uint64_t first_id, uint32_t n, uint32_t us) {
  for (uint32_t i = 0; i < n; ++i) {
    vprof_interval_begin(first_id + i);
    vprof_fn_enter(1);
    vprof_site_begin(2);
    vprof_fn_enter(3);
    spin_us(us);
    vprof_fn_exit(3);
    vprof_site_end(2);
    vprof_fn_exit(1);
    vprof_interval_end(first_id + i);
    vprof_fn_enter(4);
    spin_us(us);
    vprof_fn_exit(4);
  }
}

// Intervals at the bottom of a recursion of `depth` frames (function 20 >
// site 21, again and again) under function 10, entered once before all of
// them: the windows open and close at the intervals' ends, deep in the
// stack, so frames begin (inline, in the shadow) and end (those of the stop)
// while nothing records.
// At the bottom, a wait around each of the interval's begin and end (a
// window opens at one of them: the wait is replayed from the shadow), and a
// release.
static int deep_lock;
static void deep_frames(uint32_t depth, uint64_t id, uint32_t us) {
  if (depth == 0) {
    vprof_sync_wait_begin(&deep_lock, VPROF_SYNC_MUTEX);
    vprof_interval_begin(id);
    vprof_sync_wait_end(&deep_lock, VPROF_SYNC_MUTEX, 1);
    vprof_fn_enter(3);
    spin_us(us);
    vprof_fn_exit(3);
    vprof_sync_wait_begin(&deep_lock, VPROF_SYNC_MUTEX);
    vprof_interval_end(id);
    vprof_sync_wait_end(&deep_lock, VPROF_SYNC_MUTEX, 1);
    vprof_sync_release(&deep_lock, VPROF_SYNC_MUTEX);
    return;
  }
  vprof_fn_enter(20);
  vprof_site_begin(21);
  deep_frames(depth - 1, id, us);
  vprof_site_end(21);
  vprof_fn_exit(20);
}

static void window_process(uint64_t base, uint32_t threads, uint32_t n, uint32_t us) {
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < threads; ++t) ts.emplace_back(window_intervals, base + 1000000ull * (t + 1), n, us);
  for (auto &t : ts) t.join();
}

// passwindows: n intervals, each begun on this thread (function 1 spinning
// `us`) and ended on another, as a request handed from an acceptor to a
// worker; one at a time.
static void pass_windows(uint32_t n, uint32_t us) {
  std::atomic<uint64_t> handed{0}, ended{0};
  std::thread worker([&] {
    for (uint64_t want = 1; want <= n; ++want) {
      while (handed.load() != want) std::this_thread::yield();
      vprof_interval_end(want);
      ended.store(want);
    }
  });
  for (uint64_t id = 1; id <= n; ++id) {
    vprof_interval_begin(id);
    vprof_fn_enter(1);
    spin_us(us);
    vprof_fn_exit(1);
    vprof_interval_leave();
    handed.store(id);
    while (ended.load() != id) std::this_thread::yield();
  }
  worker.join();
}

// The window word as every thread reads it (its layout: runtime/window.h).
static bool window_off() { return vprof::rt::window_state(*vprof_tls->window_word) == VPROF_WINDOW_OFF; }

// nestedwaits: an outer and an inner wait begun between windows, both ended
// in the next one, the inner first.
static int nested_waits(uint32_t rounds) {
  static int outer, inner;
  std::atomic<bool> done{false};
  std::thread annotator([&] {  // moves the windows: the annotation API does
    for (uint64_t id = 1; !done.load(); ++id) {
      vprof_interval_begin(id);
      spin_us(20);
      vprof_interval_end(id);
    }
  });
  vprof_fn_enter(4);  // a thread state: vprof_tls
  vprof_fn_exit(4);
  uint32_t straddled = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    while (!window_off()) usleep(50);
    vprof_sync_wait_begin(&outer, VPROF_SYNC_MUTEX);
    vprof_sync_wait_begin(&inner, VPROF_SYNC_SEMAPHORE);
    const bool off = window_off();
    while (window_off()) usleep(50);
    vprof_sync_wait_end(&inner, VPROF_SYNC_SEMAPHORE, 1);
    spin_us(50);
    vprof_sync_wait_end(&outer, VPROF_SYNC_MUTEX, 1);
    straddled += off;
  }
  done = true;
  annotator.join();
  return straddled > 0 ? 0 : 4;
}

// straddle: a wait begun between windows names its waker in the next one.
struct StraddleRounds {
  std::atomic<int> waiting{-1}, released{-1}, ended{-1}, straddled{0};
  int objs[16] = {};
};


static int straddle(uint32_t rounds) {
  void *mem = mmap(nullptr, sizeof(StraddleRounds), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 3;
  auto *s = new (mem) StraddleRounds;
  rounds = std::min<uint32_t>(rounds, 16);
  pid_t pid = fork();
  if (pid == 0) {  // the waiter
    vprof_fn_enter(4);  // a thread state: vprof_tls
    vprof_fn_exit(4);
    for (int r = 0; r < (int)rounds; ++r) {
      while (!window_off()) usleep(100);
      vprof_sync_wait_begin(&s->objs[r], VPROF_SYNC_MUTEX);
      const bool off = window_off();
      s->waiting = r;
      while (s->released != r) sched_yield();
      vprof_sync_wait_end(&s->objs[r], VPROF_SYNC_MUTEX, 1);
      if (off && !window_off()) ++s->straddled;
      s->ended = r;
    }
    std::exit(0);
  }
  vprof_fn_enter(4);
  vprof_fn_exit(4);
  uint64_t id = 0;
  for (int r = 0; r < (int)rounds;) {
    const uint64_t w0 = *vprof_tls->window_word;
    vprof_interval_begin(++id);
    // Counted: the window was on, the same one, before and after its begin.
    const bool counted = vprof::rt::window_state(w0) == VPROF_WINDOW_ON && *vprof_tls->window_word == w0;
    spin_us(50);
    if (counted && s->waiting == r) {
      vprof_sync_release(&s->objs[r], VPROF_SYNC_MUTEX);
      s->released = r;
      while (s->ended != r) sched_yield();  // the wait ends in this window: it holds it open
      ++r;
    }
    vprof_interval_end(id);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  return s->straddled > 0 ? 0 : 4;
}

int hold_race(uint32_t rounds);  // hold_race.cc

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  std::string mode = argv[1];
  auto arg = [&](int i) { return (uint32_t)std::strtoul(argv[i], nullptr, 10); };
  if (mode == "preempt") {
    std::thread a(busy_pinned, 1, arg(2)), b(busy_pinned, 2, arg(2));
    a.join();
    b.join();
  } else if (mode == "preemptmany") {
    std::thread a(busy_pinned_many, 1, arg(2), arg(3)), b(busy_pinned_many, 1000001, arg(2), arg(3));
    a.join();
    b.join();
  } else if (mode == "perfmaps") {
    // The context-switch events this process has mapped after one interval
    // (their rings show in /proc/self/maps): the exit status, at most 100.
    vprof_interval_begin(1);
    pairs(10);
    vprof_interval_end(1);
    int n = 0;
    if (FILE *f = std::fopen("/proc/self/maps", "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, f)) n += std::strstr(line, "perf_event") != nullptr;
      std::fclose(f);
    }
    return n < 100 ? n : 100;
  } else if (mode == "roundtrip") {
    // Main thread plays its half; a second thread plays the other, after.
    vprof::testing::play_roundtrip(0);
    std::thread t(vprof::testing::play_roundtrip, 1);
    t.join();
  } else if (mode == "threads") {
    run_threads((int)arg(2), arg(3));
  } else if (mode == "short") {
    uint32_t n = arg(2);
    for (uint32_t done = 0; done < n;) {
      std::vector<std::thread> ts;
      for (int i = 0; i < 64 && done < n; ++i, ++done) ts.emplace_back(pairs, 5);
      for (auto &t : ts) t.join();
    }
  } else if (mode == "fork") {
    pairs(arg(2));
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      pairs(arg(2));
      std::thread t(pairs, arg(2));  // a thread of the child, too
      t.join();
      std::exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    pairs(arg(2));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
  } else if (mode == "windows") {
    pid_t pid = fork();
    if (pid == 0) {
      window_process(100000000ull, arg(2), arg(3), arg(4));
      std::exit(0);
    }
    window_process(0, arg(2), arg(3), arg(4));
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
  } else if (mode == "signalwindows") {
    // n intervals of `us` while a SIGALRM every 20 us runs a probe pair in
    // its handler (PostgreSQL's SIGUSR1 and SIGALRM handlers run
    // instrumented code), under windows that open and close often: the
    // handler's probes look at the window while the thread opens, drains
    // and closes its context-switch ring.
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      vprof_site_begin(7);
      vprof_site_end(7);
    };
    sigaction(SIGALRM, &sa, nullptr);
    itimerval every{{0, 20}, {0, 20}}, off{};
    setitimer(ITIMER_REAL, &every, nullptr);
    // With a third argument, the thread's own probes meanwhile: a function
    // and a call site around each clock read of the spin, where a handler's
    // probe can land between a probe's clock read and its record.
    const bool probes = argc > 4 && std::string(argv[4]) == "probes";
    for (uint32_t i = 1; i <= arg(2); ++i) {
      vprof_interval_begin(i);
      if (!probes) {
        spin_us(arg(3));
      } else {
        timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        do {
          vprof_fn_enter(3);
          vprof_site_begin(VPROF_SITE_CALLS(9, 0));
          clock_gettime(CLOCK_MONOTONIC, &b);
          vprof_site_end(VPROF_SITE_CALLS(9, 0));
          vprof_fn_exit(3);
        } while ((b.tv_sec - a.tv_sec) * 1000000000l + (b.tv_nsec - a.tv_nsec) < (long)arg(3) * 1000);
      }
      vprof_interval_end(i);
    }
    setitimer(ITIMER_REAL, &off, nullptr);
  } else if (mode == "passwindows") {
    pass_windows(arg(2), arg(3));
  } else if (mode == "straddle") {
    return straddle(arg(2));
  } else if (mode == "nestedwaits") {
    return nested_waits(arg(2));
  } else if (mode == "deepwindows") {
    // n intervals of `us` at depths min, min+1, ... max, again and again
    // (each level two frames).
    vprof_fn_enter(10);
    for (uint32_t i = 0; i < arg(2); ++i) deep_frames(arg(3) + i % (arg(4) - arg(3) + 1), i + 1, arg(5));
    vprof_fn_exit(10);
  } else if (mode == "holdrace") {
    return hold_race(arg(2));
  } else if (mode == "idle") {
    // Not recording (no trace directory): the probes stop inline, no
    // thread gets a state.
    pairs(1000);
    vprof_site_begin(1);
    vprof_site_end(1);
    return vprof_rt_idle == 1 && vprof_tls == &vprof_rt_none ? 0 : 1;
  } else if (mode == "kill") {
    pairs(arg(2));
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) pairs(1000);
  } else if (mode == "handoff") {
    // Thread A holds the mutex until B is surely blocked on it, then releases:
    // B's wait must end naming A and A's release.
    handoff(0);
  } else if (mode == "manyobjects") {
    // A timed wait on each of N mutexes (N = argv[2]), uncontended: each
    // claims its object's slot in the ownership map; then the handoff's
    // contended wait, on one more object.
    static pthread_mutex_t ms[4096];
    const uint32_t n = std::min<uint32_t>(arg(2), 4096);
    for (uint32_t i = 0; i < n; ++i) {
      pthread_mutex_init(&ms[i], nullptr);
      locked(&ms[i]);
      unlocked(&ms[i]);
    }
    handoff(0);
  } else if (mode == "condmutex") {
    cond_mutex();
  } else if (mode == "stalewaker") {
    stale_waker();
  } else if (mode == "shortwaits") {
    // 1000 uncontended acquires of one mutex, then the handoff's contended
    // one: with the default VPROF_MIN_WAIT_NS only the contended wait is
    // kept (runtime_test.cc).
    handoff(1000);
  } else if (mode == "manifests") {
    for (int i = 2; i < argc; ++i) vprof_register_manifest(argv[i], "/nonexistent/manifest.json");
    pairs(1);
  } else if (mode == "manyids") {
    // N distinct ids, each registered twice (a header's from two units).
    const int n = argc > 2 ? atoi(argv[2]) : 300;
    for (int round = 0; round < 2; ++round)
      for (int i = 1; i <= n; ++i) {
        char id[17];
        snprintf(id, sizeof id, "%016x", i);
        vprof_register_manifest(id, "/nonexistent/manifest.json");
      }
    pairs(1);
  } else if (mode == "spans") {
    vprof_site_begin(1);
    vprof_site_end(1);
    vprof_site_begin(2);
    vprof_site_begin(3);
    vprof_site_end(3);
    vprof_site_end(2);
    vprof_site_begin(4);
    vprof_site_begin(4);
    vprof_site_end(4);
    vprof_site_end(4);
    vprof_site_begin(5);
    vprof_fn_enter(6);
    vprof_fn_exit(6);
    vprof_site_end(5);
    vprof_site_begin(7);
    usleep(2000);  // longer than the reader's step check (2^20 ticks)
    vprof_site_end(7);
    // n calls of one site in a row (one run), then n calls of two sites in
    // turn (a span each).
    for (uint32_t i = 0, n = arg(2); i < n; ++i) {
      vprof_site_begin(8);
      vprof_site_end(8);
    }
    for (uint32_t i = 0, n = arg(2); i < n; i += 2) {
      vprof_site_begin(9);
      vprof_site_end(9);
      vprof_site_begin(10);
      vprof_site_end(10);
    }
  } else if (mode == "sharedclock") {
    // A site naming its callee (VPROF_SITE_CALLS) and the
    // callee's enter and exit, each call 200 us long; then the cases that
    // must read the clock anyway.
    const vprof_u64 calls3 = VPROF_SITE_CALLS(2, 3);
    vprof_fn_enter(1);
    vprof_site_begin(calls3);  // shared: enter 3 right after its site
    vprof_fn_enter(3);
    spin_us(200);
    vprof_fn_exit(3);
    vprof_site_end(calls3);
    vprof_site_begin(VPROF_SITE_CALLS(4, 9));  // names 9, calls 5: not shared
    spin_us(200);
    vprof_fn_enter(5);
    vprof_fn_exit(5);
    spin_us(200);
    vprof_site_end(VPROF_SITE_CALLS(4, 9));
    vprof_site_begin(VPROF_SITE_CALLS(6, 7));  // an argument's site between: not shared
    vprof_site_begin(8);
    spin_us(200);
    vprof_site_end(8);
    vprof_fn_enter(7);
    spin_us(200);
    vprof_fn_exit(7);
    spin_us(200);
    vprof_fn_enter(3);  // 3 again, no site before it: its own clock
    vprof_fn_exit(3);
    spin_us(200);
    vprof_site_end(VPROF_SITE_CALLS(6, 7));  // 3's exit is newest, not 7's: its own clock
    vprof_site_begin(VPROF_SITE_CALLS(10, 11));  // the callee recorded nothing: one span
    spin_us(200);
    vprof_site_end(VPROF_SITE_CALLS(10, 11));
    vprof_fn_exit(1);
  } else if (mode == "xproc") {
    return cross_process((int)arg(2));
  } else if (mode == "labels") {
    const char *clients[] = {"cli\xff", "cut\xe2\x82", "slash\xc0\xaf", "ok-\xc3\xbc"};
    for (uint32_t i = 0, n = arg(2); i < n; ++i) {
      vprof_interval_begin_labeled(i + 1, "t\xfe", clients[i % 4]);
      vprof_fn_enter(1);
      vprof_fn_exit(1);
      vprof_interval_end(i + 1);
    }
  } else if (mode == "pooled") {
    uint32_t n = arg(3);
    std::vector<std::thread> ts;
    for (uint32_t t = 0; t < arg(2); ++t)
      ts.emplace_back([n] {
        for (uint32_t i = 0; i < n; ++i) {
          void *req = std::malloc(96);
          vprof_interval_begin((uint64_t)(uintptr_t)req);
          vprof_fn_enter(1);
          vprof_fn_exit(1);
          vprof_interval_end((uint64_t)(uintptr_t)req);
          std::free(req);
        }
      });
    for (auto &t : ts) t.join();
  } else if (mode == "sparse") {
    uint32_t n = arg(2);
    auto serve = [n](uint64_t first) {
      for (uint64_t i = 0; i < n; ++i) {
        vprof_interval_begin(first + i);
        vprof_fn_enter(1);
        vprof_fn_exit(1);
        vprof_interval_end(first + i);
      }
    };
    std::thread a(serve, 1), b(serve, 100000001);
    a.join();
    b.join();
  } else if (mode == "budget") {
    run_threads((int)arg(2), arg(3));
  } else {
    return 2;
  }
  return 0;
}
