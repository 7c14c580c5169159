// Probe cost, measured in one run against the bare cost of two timestamps.
// Re-executes itself with the recorder on (the runtime reads its environment
// at start-up). Prints one line per figure; the last line is the summary:
//   probe_pair_ns=<x> timestamp_pair_ns=<y> ratio=<x/y> bytes_per_event=<b>
// Usage: vprof_bench_probe [pairs_per_batch]   (default 1000000)
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <vprof/probes.h>
#include <vprof/vprof.h>

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

enum class What { Timestamps, Site, Function, Sync };

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
  }
  sink = acc;
  return (double)(vprof_now() - t0) / tpn / n;
}

// Median of interleaved batches: every kind sees the same machine noise.
static std::vector<double> measure(uint32_t n, double tpn, int batches) {
  std::vector<std::vector<double>> r(4);
  for (int b = 0; b < batches; ++b)
    for (int w = 0; w < 4; ++w) r[w].push_back(batch(static_cast<What>(w), n, tpn));
  std::vector<double> med;
  for (auto &v : r) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)std::strtoul(argv[1], nullptr, 10) : 1000000;
  if (!getenv("VPROF_TRACE_DIR")) {
    std::string dir = fs::temp_directory_path() / ("vprof-bench-probe-" + std::to_string(getpid()));
    setenv("VPROF_TRACE_DIR", dir.c_str(), 1);
    setenv("VPROF_BUFFER_MB", "16384", 1);
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
    tid = vprof_tls ? vprof_tls->tid : 0;
  }).join();
  double bytes = -1;
  std::string file = dir + "/t-" + std::to_string(getpid()) + "-" + std::to_string(tid) + ".vpt";
  if (FILE *f = std::fopen(file.c_str(), "rb")) {
    vprof_file_header h;
    struct stat st{};
    if (std::fread(&h, sizeof h, 1, f) == 1 && stat(file.c_str(), &st) == 0) {
      std::vector<vprof_slot> ring(h.chunk_bytes / sizeof(vprof_slot));
      size_t got = std::fread(ring.data(), sizeof(vprof_slot), ring.size(), f);
      size_t ring_used = 0;
      while (ring_used < got && (ring[ring_used].w0 & VPROF_KIND_MASK) != 0) ++ring_used;
      double data = (double)st.st_size - VPROF_HEADER_BYTES - (double)h.chunk_bytes;
      if (h.data_chunks == 0) data = 0;
      bytes = (data + (double)(ring_used - 1) * VPROF_SLOT_BYTES) / E;
    }
    std::fclose(f);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  std::printf("probe_pair_ns=%.2f timestamp_pair_ns=%.2f ratio=%.3f bytes_per_event=%.1f\n", one[1],
              one[0], one[1] / one[0], bytes);
  return 0;
}
