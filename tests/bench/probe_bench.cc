// Probe cost, measured in one run against the bare cost of two timestamps.
// Re-executes itself with the recorder on (the runtime reads its environment
// at start-up). Prints one line per figure; the last line is the summary:
//   probe_pair_ns=<x> timestamp_pair_ns=<y> ratio=<x/y> bytes_per_event=<b> neighbour_ratio=<z>
//   off_probe_ns=<o> idle_probe_ns=<i> off_sync_ns=<s> call_ns=<c> named_call_ns=<d> dormant_probe_ns=<m>
//   dormant_test_pair_ns=<t>
// off_probe_ns: one function probe between recording windows (VPROF_SAMPLE,
// runtime/window.h: the probe stops at its inline test, probes.h), half
// an enter/exit pair, measured in a child process recording with windows
// that never open.
// idle_probe_ns: the same in a child that does not record at all (no
// VPROF_TRACE_DIR: an instrumented server run without `vprof run`).
// off_sync_ns: a sync triple (wait begin, wait end, release) between windows.
// call_ns: a call site around an instrumented function (site begin, enter,
// exit, site end), recording; named_call_ns: the same with the site naming
// its callee (VPROF_SITE_CALLS), whose enter and end read no clock.
// dormant_probe_ns: one probe whose id the run leaves dormant (VPROF_DORMANT:
// an iterate session's build holds more probes than a run records), recording:
// a quarter of a site around a function call; dormant_test_pair_ns: what the
// dormant test adds to a recorded site pair (a constant id, with the test
// against without: probe_bench_dormant.cc).
// lock_bare_ns, lock_timed_ns, lock_tried_ns (a line of their own): an
// uncontended pthread mutex taken and given back, bare; wrapped as the sync
// pack wrapped it before acquires were tried first (wait begin, lock, wait
// end, release, unlock); and tried first, as it is now (trylock; the
// release; unlock).
// neighbour_ratio: the same ratio measured again while a neighbour process
// writes a file with fsync on the trace's file system and streams through
// 1 GiB of memory (a DBMS does I/O all the time).
// Usage: vprof_bench_probe [pairs_per_batch]   (default 1000000)
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <vprof/probes.h>
#include <vprof/vprof.h>

#include "probe_bench_dormant.h"

namespace fs = std::filesystem;

static uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double ticks_per_ns() {
  uint64_t t0 = vprof_now(), n0 = mono_ns();
  while (mono_ns() - n0 < 100000000) {
  }
  return (double)(vprof_now() - t0) / (double)(mono_ns() - n0);
}

static volatile uint64_t sink;
static int lock_object;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

enum class What {
  Timestamps, Site, Function, Sync, Call, NamedCall, LockBare, LockTimed, LockTried,
  SiteConst, SiteDormantCapable, Dormant
};
constexpr int kWhats = 12;

// ns per pair (or triple) over `n` repetitions.
static double batch(What w, uint32_t n, double tpn) {
  uint64_t t0 = vprof_now(), acc = 0;
  switch (w) {
    case What::Timestamps:
      for (uint32_t i = 0; i < n; ++i) {
        acc += vprof_now();
        acc ^= vprof_now();
      }
      break;
    case What::Site:
      for (uint32_t i = 0; i < n; ++i) {
        vprof_site_begin(i);
        vprof_site_end(i);
      }
      break;
    case What::Function:
      for (uint32_t i = 0; i < n; ++i) {
        vprof_fn_enter(i);
        vprof_fn_exit(i);
      }
      break;
    case What::Sync:
      for (uint32_t i = 0; i < n; ++i) {
        vprof_sync_wait_begin(&lock_object, VPROF_SYNC_MUTEX);
        vprof_sync_wait_end(&lock_object, VPROF_SYNC_MUTEX, 1);
        vprof_sync_release(&lock_object, VPROF_SYNC_MUTEX);
      }
      break;
    case What::Call:  // a site around an instrumented function: four probes, four clock reads
      for (uint32_t i = 0; i < n; ++i) {
        vprof_site_begin(7);
        vprof_fn_enter(3);
        vprof_fn_exit(3);
        vprof_site_end(7);
      }
      break;
    case What::NamedCall:  // the same site naming its callee (VPROF_SITE_CALLS): two clock reads
      for (uint32_t i = 0; i < n; ++i) {
        vprof_site_begin(VPROF_SITE_CALLS(7, 3));
        vprof_fn_enter(3);
        vprof_fn_exit(3);
        vprof_site_end(VPROF_SITE_CALLS(7, 3));
      }
      break;
    case What::LockBare:
      for (uint32_t i = 0; i < n; ++i) {
        pthread_mutex_lock(&mutex);
        pthread_mutex_unlock(&mutex);
      }
      break;
    case What::LockTimed:  // the pthreads pack's text before acquires were tried first
      for (uint32_t i = 0; i < n; ++i) {
        (vprof_sync_wait_begin(&mutex, VPROF_SYNC_MUTEX), pthread_mutex_lock(&mutex),
         vprof_sync_wait_end(&mutex, VPROF_SYNC_MUTEX, 1));
        (vprof_sync_release(&mutex, VPROF_SYNC_MUTEX), pthread_mutex_unlock(&mutex));
      }
      break;
    case What::LockTried:  // and now (instrumenter/forms.cc, tried_first)
      for (uint32_t i = 0; i < n; ++i) {
        ((!vprof_rt_every_wait && (pthread_mutex_trylock(&mutex) == 0))
             ? (void)0
             : (void)(vprof_sync_wait_begin(&mutex, VPROF_SYNC_MUTEX), pthread_mutex_lock(&mutex),
                      vprof_sync_wait_end(&mutex, VPROF_SYNC_MUTEX, 1)));
        (vprof_sync_release(&mutex, VPROF_SYNC_MUTEX), pthread_mutex_unlock(&mutex));
      }
      break;
    case What::SiteConst:  // one site, its id a constant as in rewritten code
      for (uint32_t i = 0; i < n; ++i) {
        vprof_site_begin(kRecordedSite);
        vprof_site_end(kRecordedSite);
      }
      break;
    case What::SiteDormantCapable:  // the same with the dormant probes' test (probe_bench_dormant.cc)
      dormant_capable_sites(n);
      break;
    case What::Dormant:  // a function pair and a site pair left dormant (build once: docs/iterate.md)
      dormant_call(n);
      break;
  }
  sink = acc;
  return (double)(vprof_now() - t0) / tpn / n;
}

// Median of interleaved batches: every kind sees the same machine noise.
static std::vector<double> measure(uint32_t n, double tpn, int batches) {
  std::vector<std::vector<double>> r(kWhats);
  for (int b = 0; b < batches; ++b)
    for (int w = 0; w < kWhats; ++w) r[w].push_back(batch(static_cast<What>(w), n, tpn));
  std::vector<double> med;
  for (auto &v : r) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

// The child of off_probe_ns(): between windows (or idle), ns per function
// pair and per sync triple (wait begin, wait end, release).
static int off_child(uint32_t n) {
  double tpn = ticks_per_ns();
  std::vector<double> v, w;
  for (int b = 0; b < 5; ++b) {
    v.push_back(batch(What::Function, n, tpn));
    w.push_back(batch(What::Sync, n, tpn));
  }
  std::sort(v.begin(), v.end());
  std::sort(w.begin(), w.end());
  std::printf("%.3f %.3f\n", v[2], w[2]);
  return 0;
}

// sampled: windows that never open; else no trace directory (idle). Sets
// *sync to the ns of a sync triple there.
static double off_probe_ns(const char *self, uint32_t n, bool sampled, double *sync) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    // Windows of an hour, 1% of the time: the first opens at a random point
    // of 100 hours, and only the annotation API could open it: never here.
    if (sampled) {
      setenv("VPROF_SAMPLE", "1", 1);
      setenv("VPROF_SAMPLE_WINDOW_MS", "3600000", 1);
    } else {
      unsetenv("VPROF_TRACE_DIR");
    }
    setenv("VPROF_BENCH_OFF", "1", 1);
    std::string count = std::to_string(n);
    execl(self, self, count.c_str(), (char *)nullptr);
    _exit(127);
  }
  close(fds[1]);
  char buf[64] = {};
  ssize_t got = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  double fn = -2, triple = -1;
  if (got <= 0 || std::sscanf(buf, "%lf %lf", &fn, &triple) != 2) fn = -2, triple = -1;
  *sync = triple;
  return fn / 2;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)std::strtoul(argv[1], nullptr, 10) : 1000000;
  if (getenv("VPROF_BENCH_OFF")) return off_child(n);
  if (!getenv("VPROF_TRACE_DIR")) {
    std::string dir = fs::temp_directory_path() / ("vprof-bench-probe-" + std::to_string(getpid()));
    setenv("VPROF_TRACE_DIR", dir.c_str(), 1);
    setenv("VPROF_BUFFER_MB", "16384", 1);
    const std::string dormant = dir + ".dormant";
    if (FILE *f = std::fopen(dormant.c_str(), "w")) {
      std::fprintf(f, "f %u\ns %u\n", kDormantId, kDormantId);
      std::fclose(f);
      setenv("VPROF_DORMANT", dormant.c_str(), 1);
    }
    execv("/proc/self/exe", argv);
    std::perror("execv");
    return 1;
  }
  std::string dir = getenv("VPROF_TRACE_DIR");
  double tpn = ticks_per_ns();
  std::printf("clock: %.4f ticks/ns, %u pairs per batch, median of 5 interleaved batches\n", tpn, n);

  std::vector<double> one;
  std::thread([&] { one = measure(n, tpn, 5); }).join();
  std::printf("1 thread : timestamp_pair_ns=%.2f site_pair_ns=%.2f fn_pair_ns=%.2f sync_triple_ns=%.2f\n",
              one[0], one[1], one[2], one[3]);
  std::printf("1 thread : call_ns=%.2f named_call_ns=%.2f (a site and its instrumented callee: 4 probes, "
              "4 clock reads; the site naming the callee: 2)\n",
              one[4], one[5]);
  std::printf("uncontended acquire, recording: lock_bare_ns=%.2f lock_timed_ns=%.2f lock_tried_ns=%.2f\n", one[6],
              one[7], one[8]);

  // The same beside a disk- and memory-heavy neighbour: a process writing
  // 4 MiB blocks to a file on the trace's file system, fsync every 64 MiB,
  // and memset over 1 GiB between the writes.
  std::vector<double> busy;
  {
    std::string junk = dir + "-neighbour.dat";
    pid_t child = fork();
    if (child == 0) {
      const size_t block = 4u << 20, mem = 1u << 30;
      char *buf = static_cast<char *>(mmap(nullptr, block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      char *big = static_cast<char *>(mmap(nullptr, mem, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      int fd = open(junk.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (buf == MAP_FAILED || big == MAP_FAILED || fd < 0) _exit(1);
      for (uint64_t i = 0;; ++i) {
        for (size_t k = 0; k < block; k += 4096) buf[k] = char(i + k);
        if (write(fd, buf, block) != ssize_t(block)) _exit(1);
        if (i % 16 == 15) fsync(fd);
        if (i % 256 == 255) {
          if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) _exit(1);
        }
        size_t at = (i * block) % mem;
        for (size_t k = 0; k < block; k += 64) big[at + k] = char(k);
      }
    }
    usleep(300000);  // let it get going
    std::thread([&] { busy = measure(n, tpn, 5); }).join();
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    unlink(junk.c_str());
  }
  std::printf("1 thread beside a neighbour (disk writes with fsync, 1 GiB memset): timestamp_pair_ns=%.2f "
              "site_pair_ns=%.2f ratio=%.3f\n",
              busy[0], busy[1], busy[1] / busy[0]);

  // Two threads at once on two cores: no shared cache line is written on the
  // hot path, so each should run as fast as one alone.
  std::vector<double> a, b;
  std::thread ta([&] { a = measure(n, tpn, 5); }), tb([&] { b = measure(n, tpn, 5); });
  ta.join();
  tb.join();
  double two_site = (a[1] + b[1]) / 2, two_ts = (a[0] + b[0]) / 2;
  std::printf("2 threads: timestamp_pair_ns=%.2f site_pair_ns=%.2f (per thread, mean of the two)\n",
              two_ts, two_site);
  std::printf("two_thread_slowdown=%.3f (site pair ratio over timestamp pair ratio, 2 threads vs 1)\n",
              (two_site / two_ts) / (one[1] / one[0]));

  // Bytes per event from the file a thread leaves after exactly E site
  // probes: the appended data plus the ring's used part, minus THREAD_EXIT.
  const uint32_t E = 1000000;
  uint32_t tid = 0;
  std::thread([&] {
    for (uint32_t i = 0; i < E / 2; ++i) {
      vprof_site_begin(i);
      vprof_site_end(i);
    }
    tid = vprof_tls->tid;
  }).join();
  double bytes = -1;
  std::string file = dir + "/t-" + std::to_string(getpid()) + "-" + std::to_string(tid) + ".vpt";
  if (FILE *f = std::fopen(file.c_str(), "rb")) {
    vprof_file_header h;
    struct stat st{};
    if (std::fread(&h, sizeof h, 1, f) == 1 && stat(file.c_str(), &st) == 0) {
      // The data chunks, then what is left in the current ring (trace_format.h).
      std::vector<vprof_slot> ring(h.chunk_bytes / sizeof(vprof_slot));
      std::fseek(f, long(VPROF_HEADER_BYTES + vprof_current_ring(&h) * h.chunk_bytes), SEEK_SET);
      size_t got = std::fread(ring.data(), sizeof(vprof_slot), ring.size(), f);
      size_t ring_used = 0;
      while (ring_used < got && (ring[ring_used].w0 & VPROF_KIND_MASK) != 0) ++ring_used;
      double data = (double)h.data_chunks * (double)h.chunk_bytes;
      if (vprof_ring_pending(&h)) data += (double)h.chunk_bytes;
      bytes = (data + (double)(ring_used - 1) * VPROF_SLOT_BYTES) / E;
    }
    std::fclose(f);
  }
  double off_sync = -1, idle_sync = -1;
  const double off = off_probe_ns("/proc/self/exe", n, true, &off_sync);
  const double idle = off_probe_ns("/proc/self/exe", n, false, &idle_sync);
  std::printf("between windows: sync_triple_ns=%.2f; not recording: sync_triple_ns=%.2f\n", off_sync, idle_sync);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove(dir + ".dormant", ec);
  std::printf("probe_pair_ns=%.2f timestamp_pair_ns=%.2f ratio=%.3f bytes_per_event=%.1f neighbour_ratio=%.3f "
              "off_probe_ns=%.2f idle_probe_ns=%.2f off_sync_ns=%.2f call_ns=%.2f named_call_ns=%.2f "
              "dormant_probe_ns=%.2f dormant_test_pair_ns=%.2f\n",
              one[1], one[0], one[1] / one[0], bytes, busy[1] / busy[0], off, idle, off_sync, one[4], one[5],
              one[11] / 4, one[10] - one[9]);
  return 0;
}
