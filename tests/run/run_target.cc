// A program `vprof run` tests record, one scenario per mode; each scenario's
// record count is exact, so a test can check records + dropped + lost.
//   run_target threads N M    N threads, started one at a time and all alive
//                             together; then the program opens 20 files of its
//                             own (each must succeed); then each thread writes
//                             M enter/exit pairs, and the main thread M more
//                             after joining them. 2*M*(N+1) records in all.
//   run_target term FILE      writes pairs until SIGTERM; creates FILE once it
//                             records; on SIGTERM prints "signals=<count>" and
//                             exits 0.
//   run_target hello FILE     creates FILE (proof that it ran) and writes 1 pair.
//   run_target dropuid USER M records 1 pair as root, then forks a child that
//                             drops root (setgid, setuid to USER) as a server's
//                             workers do, and writes M pairs there on its main
//                             thread and M on a thread it starts; the parent
//                             waits for it. 2 + 4*M records in all.
//   run_target reenter        a SIGALRM handler, every 50 us, writes a pair while the
//                             main thread writes pairs, until the handler's probe has
//                             interrupted one of the main thread's records (its own
//                             file's header says so); exits 3 after 20 s without.
//   run_target plant MANIFEST LINK TARGET  registers MANIFEST (as instrumented
//                             code does), then, as user nobody in a child (another
//                             user of a shared trace directory), makes LINK a
//                             symbolic link to TARGET; writes 1 pair.
//   run_target labelled N     N intervals, each begun with a type and one of 5 000
//                             client labels, and ended: 2*N records.
//   run_target forkexit M     forks a child that writes M pairs and leaves by
//                             _exit(0), as servers' workers do; the parent
//                             waits and writes 1 pair. 2*M + 2 records.
//   run_target held N         N intervals on the main thread, each waiting for a
//                             mutex a background thread (in no instrumented
//                             function) holds for 1 ms and releases in
//                             background_release: a holder named by where it
//                             released (places.json).
//   run_target exhaust M      opens files until the fd limit, starts a thread
//                             that writes M pairs (no descriptor left for its
//                             trace file), closes them, writes M pairs itself.
#include <fcntl.h>
#include <pthread.h>
#include <grp.h>
#include <pwd.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <vprof/probes.h>
#include <vprof/vprof.h>
#include <vprof/trace_format.h>

static void pairs(uint32_t m) {
  for (uint32_t i = 0; i < m; ++i) {
    vprof_fn_enter(i);
    vprof_fn_exit(i);
  }
}

static int threads(int n, uint32_t m) {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  bool go = false;
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&] {
      pairs(1);  // the thread's file exists from here on
      std::unique_lock<std::mutex> l(mu);
      ++started;
      cv.notify_all();
      cv.wait(l, [&] { return go; });
      l.unlock();
      pairs(m - 1);
    });
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return started == i + 1; });
  }
  // Every thread is alive and has recorded: the program's own files now.
  int failed = 0;
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) ++failed;
    else fds.push_back(fd);
  }
  {
    std::lock_guard<std::mutex> l(mu);
    go = true;
  }
  cv.notify_all();
  for (auto &t : ts) t.join();
  for (int fd : fds) close(fd);
  pairs(m);  // a thread that starts recording last (after a full disk, say)
  if (failed) {
    std::fprintf(stderr, "run_target: %d of the program's own open() calls failed\n", failed);
    return 1;
  }
  return 0;
}

static int exhaust(uint32_t m) {
  std::vector<int> fds;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fds.push_back(fd);
  std::thread(pairs, m).join();
  for (int fd : fds) close(fd);
  pairs(m);
  return 0;
}

static int dropuid(const char *user, uint32_t m) {
  struct passwd *pw = getpwnam(user);
  if (!pw) {
    std::fprintf(stderr, "run_target: no user %s\n", user);
    return 2;
  }
  pairs(1);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
      std::perror("run_target: dropping root");
      _exit(1);
    }
    std::thread(pairs, m).join();
    pairs(m);
    _exit(0);
  }
  int st = 0;
  while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static volatile sig_atomic_t g_signals = 0;

static int term(const char *ready) {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_signals = g_signals + 1; };
  sigaction(SIGTERM, &sa, nullptr);
  pairs(1);
  std::fclose(std::fopen(ready, "w"));
  while (!g_signals) pairs(1);
  usleep(200000);  // a second, duplicated delivery would land here
  std::printf("signals=%d\n", (int)g_signals);
  return 0;
}

// A timed wait on each of n mutexes, uncontended: each claims its object's
// slot in the ownership map (a map too small for them counts them).
static int objects(uint32_t n) {
  std::vector<pthread_mutex_t> ms(n);
  for (auto &m : ms) {
    pthread_mutex_init(&m, nullptr);
    vprof_sync_wait_begin(&m, VPROF_SYNC_MUTEX);
    pthread_mutex_lock(&m);
    vprof_sync_wait_end(&m, VPROF_SYNC_MUTEX, 1);
    vprof_sync_release(&m, VPROF_SYNC_MUTEX);
    pthread_mutex_unlock(&m);
  }
  pairs(1);
  return 0;
}

static void on_alarm(int) {
  vprof_fn_enter(900);
  vprof_fn_exit(900);
}

static int reenter() {
  pairs(1);  // the thread's file exists from here on
  char path[512];
  std::snprintf(path, sizeof path, "%s/t-%d-%d.vpt", std::getenv("VPROF_TRACE_DIR"), (int)getpid(), (int)gettid());
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return 4;
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  itimerval every{{0, 50}, {0, 50}};
  setitimer(ITIMER_REAL, &every, nullptr);
  for (int round = 0; round < 2000; ++round) {  // ~10 ms each
    pairs(100000);
    uint32_t reentered = 0;
    if (pread(fd, &reentered, sizeof reentered, offsetof(vprof_file_header, reentered_records)) == sizeof reentered && reentered > 0) {
      itimerval stop{};
      setitimer(ITIMER_REAL, &stop, nullptr);
      return 0;
    }
  }
  return 3;
}

static int plant(const char *manifest, const char *link, const char *target) {
  vprof_register_manifest("00000000000000ab", manifest);
  pid_t child = fork();
  if (child == 0) {
    struct passwd *pw = getpwnam("nobody");
    if (!pw || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(3);
    _exit(symlink(target, link) == 0 ? 0 : 4);
  }
  int status = 0;
  waitpid(child, &status, 0);
  pairs(1);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static std::atomic<int> held_turn{0};
__attribute__((noinline)) void background_release() {
  vprof_sync_release(&held_mu, VPROF_SYNC_MUTEX);
  pthread_mutex_unlock(&held_mu);
}
static int held(int n) {
  std::thread bg([n] {
    for (int i = 0; i < n; ++i) {
      pthread_mutex_lock(&held_mu);
      held_turn.store(i + 1);
      usleep(1000);
      background_release();
      while (held_turn.load() != -(i + 1)) usleep(50);  // the interval took it
    }
  });
  for (int i = 0; i < n; ++i) {
    while (held_turn.load() != i + 1) usleep(20);
    vprof_interval_begin(uint64_t(i) + 1);
    vprof_fn_enter(1);
    vprof_sync_wait_begin(&held_mu, VPROF_SYNC_MUTEX);
    pthread_mutex_lock(&held_mu);
    vprof_sync_wait_end(&held_mu, VPROF_SYNC_MUTEX, 1);
    vprof_sync_release(&held_mu, VPROF_SYNC_MUTEX);
    pthread_mutex_unlock(&held_mu);
    vprof_fn_exit(1);
    vprof_interval_end(uint64_t(i) + 1);
    held_turn.store(-(i + 1));
  }
  bg.join();
  return 0;
}

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "labelled" && argc == 3) {
    // More clients than a thread's string table keeps: their names are
    // written again and again, as a server's per-connection names are.
    const uint64_t n = std::strtoull(argv[2], nullptr, 10);
    std::vector<std::string> clients;
    for (int c = 0; c < 5000; ++c) clients.push_back("client-" + std::to_string(c));
    for (uint64_t id = 1; id <= n; ++id) {
      vprof_interval_begin_labeled(id, "NewOrder", clients[id % clients.size()].c_str());
      vprof_interval_end(id);
    }
    return 0;
  }
  if (mode == "forkexit" && argc == 3) {
    pid_t child = fork();
    if (child == 0) {
      pairs((uint32_t)std::strtoul(argv[2], nullptr, 10));
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    pairs(1);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
  }
  if (mode == "plant" && argc == 5) return plant(argv[2], argv[3], argv[4]);
  if (mode == "objects" && argc == 3) return objects((uint32_t)std::strtoul(argv[2], nullptr, 10));
  if (mode == "threads" && argc == 4)
    return threads(std::atoi(argv[2]), (uint32_t)std::strtoul(argv[3], nullptr, 10));
  if (mode == "term" && argc == 3) return term(argv[2]);
  if (mode == "dropuid" && argc == 4) return dropuid(argv[2], (uint32_t)std::strtoul(argv[3], nullptr, 10));
  if (mode == "reenter" && argc == 2) return reenter();
  if (mode == "held" && argc == 3) return held(std::atoi(argv[2]));
  if (mode == "exhaust" && argc == 3) return exhaust((uint32_t)std::strtoul(argv[2], nullptr, 10));
  if (mode == "hello" && argc == 3) {
    std::fclose(std::fopen(argv[2], "w"));
    pairs(1);
    return 0;
  }
  std::fprintf(stderr, "usage: run_target threads N M | term FILE | hello FILE | dropuid USER M | reenter | exhaust M | objects N | "
               "plant MANIFEST LINK TARGET | forkexit M | labelled N | held N\n");
  return 2;
}
