// Analyzer throughput: records per second through the whole pipeline (merge,
// critical paths, columns, variance tree, heights, factors with bootstrap)
// on traces it generates in memory, at 1x, 4x and 16x the size, with the
// merge's per-thread pass and the critical-path walk on 1 and 2 threads.
// Then the 16x trace written as trace files and analyzed from them, streamed
// and decoded as `vprof analyze` does.
//
// Then the 16x trace with sparse (per-thread ranges), pointer-like and pooled
// (reused) interval ids, each as fast as contiguous ones; and with a wide tree
// (2 000 sites a level down), whose memory must follow the paths.
//
// Last line: records_per_s=<16x, 1 thread> scale_16x_over_1x_time=<t16/t1, 1 thread>
// worst_ids_over_contiguous=<the slowest id scheme's records/s over contiguous ids'>;
// the line before it times a fixed std::sort, before and after, to show how
// fast the (shared, drifting) machine was.
// VPROF_BENCH_PROFILE=memory|files runs only the 16x analysis, in-process, for perf;
// with VPROF_BENCH_FILES=DIR the files mode leaves the 16x trace files in DIR, for
// timing `vprof analyze DIR` itself (docs/performance.md).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <vector>
#include <algorithm>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/util/prefault.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

using namespace vprof;

namespace {

// Each interval: a request thread runs handle() -> parse(), lookup() -> read()
// through wrapped sites, waits for a lock a background thread holds (blame),
// then hands work to a worker through a queue and waits on its signal (a
// created-by edge and a wake-up edge). About 32 records per interval.
// How the generated intervals are numbered: the analysis' cost must not
// depend on it (two threads' ranges 1.. and 100000001.. took 30x
// longer than contiguous ids).
enum class Ids { Contiguous, Sparse, Pointer, Pooled };
const char *ids_name(Ids i) {
  switch (i) {
    case Ids::Contiguous: return "contiguous";
    case Ids::Sparse: return "sparse";
    case Ids::Pointer: return "pointer";
    case Ids::Pooled: return "pooled";
  }
  return "?";
}

struct Gen {
  std::mt19937_64 rng{42};
  trace::Trace t;
  int64_t now = 1000;
  Ids ids = Ids::Contiguous;
  // wide > 0: interval i's parse() goes through one of `wide` sites, each to
  // its own function (ids from 1000), a tree as wide as a large server's
  // (~11 600 nodes on MariaDB) where each path touches few nodes.
  uint32_t wide = 0;

  // Interval i's id: counting up; per request thread, in ranges 10^8 apart;
  // a heap address (malloc's 96-byte objects, a few arenas); or one of 64
  // pooled objects, reused once the last request on it ended.
  uint64_t id_of(size_t i) const {
    switch (ids) {
      case Ids::Contiguous: return i + 1;
      case Ids::Sparse: return (i % 2) * 100000000 + i / 2 + 1;
      case Ids::Pointer: return 0x55d0c0a01000ull + 96 * i + (i % 5) * 0x4000000ull;
      case Ids::Pooled: return 0x7f3a2c001040ull + 96 * (i % 64);
    }
    return i + 1;
  }

  trace::Event ev(int64_t ts, trace::Kind k, uint64_t arg) {
    trace::Event e;
    e.ts = ts;
    e.kind = k;
    e.arg = arg;
    return e;
  }
  int64_t r(int64_t lo, int64_t span) { return lo + int64_t(rng() % uint64_t(span)); }

  trace::Trace make(size_t intervals) {
    using K = trace::Kind;
    t = trace::Trace{};
    t.labels = {""};
    t.threads.resize(4);
    for (uint32_t i = 0; i < 4; ++i) t.threads[i].tid = 100 + i;
    // Two request threads alternate so each thread's timeline stays sorted.
    for (size_t i = 0; i < intervals; ++i) {
      auto &a = t.threads[i % 2].events;
      auto &h = t.threads[2].events;
      auto &w = t.threads[3].events;
      const uint64_t id = id_of(i), task = 0x1000 + i + 1;
      int64_t s = now;
      a.push_back(ev(s, K::IntervalBegin, id));
      a.push_back(ev(s, K::FuncEnter, 1));
      int64_t p = s + 2, pe = p + r(20, 80);
      const uint32_t psite = wide ? 1000 + uint32_t(i % wide) : 1, pfn = wide ? psite : 2;
      a.push_back(ev(p, K::SiteBegin, psite));
      a.push_back(ev(p, K::FuncEnter, pfn));
      a.push_back(ev(pe, K::FuncExit, pfn));
      a.push_back(ev(pe, K::SiteEnd, psite));
      int64_t l = pe + 1, rd = l + 3, rde = rd + r(10, 300), le = rde + 2;
      a.push_back(ev(l, K::SiteBegin, 2));
      a.push_back(ev(l, K::FuncEnter, 3));
      a.push_back(ev(rd, K::SiteBegin, 3));
      a.push_back(ev(rde, K::SiteEnd, 3));
      a.push_back(ev(le, K::FuncExit, 3));
      a.push_back(ev(le, K::SiteEnd, 2));
      // Lock held by the background thread.
      int64_t k = le + 1, rel = k + r(1, 200), ke = rel + 2;
      a.push_back(ev(k, K::SiteBegin, 4));
      a.push_back(ev(k, K::WaitBegin, 0x40));
      trace::Event we = ev(ke, K::WaitEnd, 0x40);
      we.waker_tid = 102;
      we.release_ts = rel;
      a.push_back(we);
      a.push_back(ev(ke, K::SiteEnd, 4));
      h.push_back(ev(k - 1, K::FuncEnter, 9));
      h.push_back(ev(rel, K::Release, 0x40));
      h.push_back(ev(rel + 1, K::FuncExit, 9));
      // Queue hand-off to the worker and a condvar wake-up back.
      int64_t q = ke + 1, dq = q + r(1, 40), wk = dq + 1 + r(5, 200);
      a.push_back(ev(q, K::TaskEnqueue, task));
      a.push_back(ev(q, K::SiteBegin, 5));
      a.push_back(ev(q, K::WaitBegin, 0x50));
      w.push_back(ev(dq, K::TaskDequeue, task));
      w.push_back(ev(dq, K::IntervalJoin, id));
      w.push_back(ev(dq, K::FuncEnter, 4));
      w.push_back(ev(wk, K::Release, 0x50));
      w.push_back(ev(wk, K::FuncExit, 4));
      w.push_back(ev(wk, K::IntervalLeave, 0));
      trace::Event we2 = ev(wk + 3, K::WaitEnd, 0x50);
      we2.waker_tid = 103;
      we2.release_ts = wk;
      a.push_back(we2);
      a.push_back(ev(wk + 3, K::SiteEnd, 5));
      a.push_back(ev(wk + 5, K::FuncExit, 1));
      a.push_back(ev(wk + 5, K::IntervalEnd, id));
      now = wk + 10;
    }
    for (auto &th : t.threads) t.total_records += th.events.size();
    return std::move(t);
  }
};

// The names the instrumenter's manifest gives the generated trace, as
// `vprof analyze` finds them (a run's manifest is registered by the code and
// copied by `vprof run`): sites 1 and 2 call instrumented functions directly,
// which the merge then keeps in the site's node as it reads. VPROF_BENCH_NO_MANIFEST=1
// analyzes without names (a trace whose manifest is lost: every function
// under a site is a child node, folded at the end).
uint32_t names_wide = 0;  // the Gen::wide of the trace being measured: its sites' names
analyzer::Names manifest_names() {
  analyzer::Names n;
  if (std::getenv("VPROF_BENCH_NO_MANIFEST")) return n;
  auto fn = [&](uint32_t id, const char *name) { n.functions[id] = {name, "server.cc", int(id) * 10}; };
  fn(1, "handle");
  fn(2, "parse");
  fn(3, "lookup");
  fn(4, "worker");
  fn(9, "background");
  auto site = [&](uint32_t id, uint32_t caller, const char *callee) {
    n.sites[id] = {caller, callee, "server.cc", int(id) * 10 + 1, 3};
  };
  site(1, 1, "parse");
  site(2, 1, "lookup");
  site(3, 3, "read");
  site(4, 1, "std::mutex::lock");
  site(5, 1, "std::condition_variable::wait");
  for (uint32_t id = 1000; id < 1000 + names_wide; ++id) {
    n.functions[id] = {"parse_" + std::to_string(id), "server.cc", int(id) * 10};
    n.sites[id] = {1, n.functions[id].name, "server.cc", int(id) * 10 + 1, 3};
  }
  return n;
}

// The generated trace as trace files, one per thread, clocked as the runtime
// clocks them on x86: TSC ticks, here 2.4 per ns (decoding converts each).
void write_files(const trace::Trace &t, const std::string &dir) {
  using K = trace::Kind;
  constexpr double kTicksPerNs = 2.4;
  for (const trace::ThreadStream &s : t.threads) {
    testing::SynthThread w(dir, 1, s.tid, 1 << 20);
    w.tsc(kTicksPerNs);
    for (const trace::Event &src : s.events) {
      trace::Event e = src;
      auto tick = [&](int64_t ns) { return int64_t(std::llround(double(ns) * kTicksPerNs)); };
      e.ts = tick(e.ts);
      if (e.kind == K::WaitEnd && e.waker_tid) e.release_ts = tick(e.release_ts);
      uint64_t ts = uint64_t(e.ts);
      switch (e.kind) {
        case K::FuncEnter: w.fn_enter(ts, uint32_t(e.arg)); break;
        case K::FuncExit: w.fn_exit(ts, uint32_t(e.arg)); break;
        case K::SiteBegin: w.site_begin(ts, uint32_t(e.arg)); break;
        case K::SiteEnd: w.site_end(ts, uint32_t(e.arg)); break;
        case K::IntervalBegin: w.interval_begin(ts, e.arg); break;
        case K::IntervalEnd: w.interval_end(ts, e.arg); break;
        case K::IntervalJoin: w.join(ts, e.arg); break;
        case K::IntervalLeave: w.leave(ts); break;
        case K::WaitBegin: w.wait_begin(ts, e.arg); break;
        case K::WaitEnd: w.wait_end(ts, e.waker_tid, uint64_t(e.release_ts)); break;
        case K::Release: w.release(ts, e.arg); break;
        case K::TaskEnqueue: w.enqueue(ts, e.arg); break;
        case K::TaskDequeue: w.dequeue(ts, e.arg); break;
        default: break;
      }
    }
    w.close();
  }
}

// One measurement in a fresh child process, as `vprof analyze` runs: its
// memory is untouched, so page faults are paid at every size. (Repeating in
// one process would let small sizes reuse warm heap pages while large ones,
// above malloc's mmap threshold, fault afresh: a false superlinearity.)
struct Sample {
  double seconds;     // analysis and combination
  double analyze_s;   // analyze_run: (reading,) merge, walk, columns, tree
  double combine_s;   // combine: heights, factors with bootstrap, tail shares
  size_t rows;
  uint64_t window;    // the merge's peak window, entries
  long maxrss_kb;
};

// Times one analysis: `analyze` gives the run (from memory or from files),
// then the factors are combined as `vprof analyze` does.
template <class Analyze>
Sample measure(Analyze analyze, unsigned threads) {
  analyzer::AnalyzeOptions opt;
  opt.threads = threads;
  auto t0 = std::chrono::steady_clock::now();
  analyzer::Workers pool(threads);  // as `vprof analyze` does: one for every stage (timed)
  opt.workers = &pool;
  auto run = analyze(opt);
  if (!run) {
    std::fprintf(stderr, "analyze_run failed: %s\n", run.error().message.c_str());
    std::exit(1);
  }
  auto t1 = std::chrono::steady_clock::now();
  Sample s{};
  s.rows = (*run)->paths.rows.size();
  s.window = (*run)->merge_stats.peak_window_entries;
  std::vector<std::unique_ptr<analyzer::RunAnalysis>> runs;
  runs.push_back(std::move(run).value());
  auto a = analyzer::combine(std::move(runs), opt);
  auto t2 = std::chrono::steady_clock::now();
  if (a->factors.empty()) std::exit(1);  // keeps the work observable
  s.analyze_s = std::chrono::duration<double>(t1 - t0).count();
  s.combine_s = std::chrono::duration<double>(t2 - t1).count();
  s.seconds = s.analyze_s + s.combine_s;
  return s;
}

// The trace in memory, or the directory streamed as `vprof analyze` reads it.
Sample measure_once(const trace::Trace &t, unsigned threads, const std::string &dir) {
  if (dir.empty())
    return measure([&](const analyzer::AnalyzeOptions &o) {
      return analyzer::analyze_run(t, manifest_names(), o, 0);
    }, threads);
  std::unique_ptr<trace::TraceStream> stream;
  Sample s = measure([&](const analyzer::AnalyzeOptions &o) {
    auto opened = trace::TraceStream::open(dir);
    if (!opened) std::exit(1);
    stream = std::move(*opened);
    return analyzer::analyze_run(*stream, manifest_names(), o, 0);
  }, threads);
  if (!stream->first_error().empty()) std::exit(1);
  return s;
}

Sample run_in_child(const trace::Trace &t, unsigned threads, const std::string &dir = "") {
  int fd[2];
  if (pipe(fd) != 0) std::exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    // The child starts with the parent's pages (the generated trace) resident
    // and counted: report the growth over that.
    long start_kb = 0;
    if (FILE *f = std::fopen("/proc/self/statm", "r")) {
      long size = 0, resident = 0;
      if (std::fscanf(f, "%ld %ld", &size, &resident) == 2) start_kb = resident * (sysconf(_SC_PAGESIZE) / 1024);
      std::fclose(f);
    }
    // As vprof's main() does. Only here: in the parent, it would keep the
    // freed 1x and 4x traces resident for the child to reuse uncounted.
    analyzer::keep_freed_memory();
    Sample s = measure_once(t, threads, dir);
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    s.maxrss_kb = ru.ru_maxrss - start_kb;
    if (write(fd[1], &s, sizeof s) != ssize_t(sizeof s)) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  Sample s{};
  ssize_t got = read(fd[0], &s, sizeof s);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != ssize_t(sizeof s) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "measurement child failed\n");
    std::exit(1);
  }
  return s;
}

// The least disturbed of `reps` measurements (the machine is shared).
Sample best_of(int reps, const trace::Trace &t, unsigned threads, const std::string &dir = "") {
  Sample best{};
  best.seconds = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    Sample s = run_in_child(t, threads, dir);
    if (s.seconds < best.seconds) best = s;
  }
  return best;
}

// How fast the machine is right now, for comparing figures across runs on
// a shared host whose speed drifts (docs/performance.md saw 1.6x between
// days): std::sort of 256 Ki pseudo-random 64-bit keys, branchy integer work
// on 2 MiB, like the analyzer's. Best of 5, in ms.
double reference_sort_ms() {
  std::vector<uint64_t> keys(size_t{1} << 18);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    std::mt19937_64 rng(7);
    for (uint64_t &k : keys) k = rng();
    auto t0 = std::chrono::steady_clock::now();
    std::sort(keys.begin(), keys.end());
    auto t1 = std::chrono::steady_clock::now();
    if (!std::is_sorted(keys.begin(), keys.end())) std::exit(1);
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

}  // namespace

// VPROF_BENCH_PROFILE=memory|files: only the 16x analysis, ten times in this
// process, for a profiler (perf record); prints nothing else. VPROF_BENCH_FILES:
// where the files go, kept afterwards. VPROF_BENCH_WIDE=W: the wide tree's trace.
int profile(const std::string &what, size_t intervals) {
  analyzer::keep_freed_memory();  // as vprof's main() does
  Gen g;
  if (const char *w = std::getenv("VPROF_BENCH_WIDE")) names_wide = g.wide = uint32_t(std::atoi(w));
  trace::Trace t = g.make(intervals);
  std::string dir;
  const char *keep = std::getenv("VPROF_BENCH_FILES");
  if (what == "files") {
    dir = keep ? std::string(keep) : testing::fresh_dir("vprof-bench", "profile");
    std::filesystem::create_directories(dir);
    write_files(t, dir);
  }
  double best = 1e30;
  for (int i = 0; i < 10; ++i) best = std::min(best, measure_once(t, 1, dir).seconds);
  std::printf("profile=%s records=%llu best_s=%.4f\n", what.c_str(),
              (unsigned long long)t.total_records, best);
  if (!dir.empty() && !keep) std::filesystem::remove_all(dir);
  return 0;
}

int main(int argc, char **argv) {
  size_t base = argc > 1 ? size_t(std::atoll(argv[1])) : 5000;  // intervals at 1x
  if (const char *p = std::getenv("VPROF_BENCH_PROFILE")) return profile(p, base * 16);
  double t1x = 0, t16x = 0, r16x = 0;
  const double ref_before = reference_sort_ms();
  for (int scale : {1, 4, 16}) {
    Gen g;
    trace::Trace t = g.make(base * size_t(scale));
    for (unsigned threads : {1u, 2u}) {
      const Sample best = best_of(5, t, threads);
      double rps = double(t.total_records) / best.seconds;
      std::printf("scale=%dx threads=%u records=%llu intervals=%zu time_s=%.4f (analyze %.4f, "
                  "combine %.4f) records_per_s=%.3e window=%llu own_peak_rss_mb=%.0f\n",
                  scale, threads, (unsigned long long)t.total_records, best.rows, best.seconds,
                  best.analyze_s, best.combine_s, rps, (unsigned long long)best.window,
                  double(best.maxrss_kb) / 1024.0);
      std::fflush(stdout);
      if (threads == 1 && scale == 1) t1x = best.seconds;
      if (threads == 1 && scale == 16) {
        t16x = best.seconds;
        r16x = rps;
      }
    }
    if (scale != 16) continue;
    // The same trace from files: the reader's decoding and its memory count.
    std::string dir = testing::fresh_dir("vprof-bench", "analyze");
    write_files(t, dir);
    for (unsigned threads : {1u, 2u}) {
      const Sample best = best_of(5, t, threads, dir);
      std::printf("scale=16x from_files threads=%u records=%llu intervals=%zu time_s=%.4f "
                  "(analyze %.4f, combine %.4f) records_per_s=%.3e window=%llu "
                  "own_peak_rss_mb=%.0f\n",
                  threads, (unsigned long long)t.total_records, best.rows, best.seconds,
                  best.analyze_s, best.combine_s, double(t.total_records) / best.seconds,
                  (unsigned long long)best.window, double(best.maxrss_kb) / 1024.0);
      std::fflush(stdout);
    }
    std::filesystem::remove_all(dir);
  }
  // The 16x trace again with other interval ids, 1 thread, in memory: the
  // worst of them over contiguous ids is part of the bar.
  double worst_ids = 1e30;
  for (Ids ids : {Ids::Sparse, Ids::Pointer, Ids::Pooled}) {
    Gen g;
    g.ids = ids;
    trace::Trace t = g.make(base * 16);
    const Sample best = best_of(5, t, 1);
    double rps = double(t.total_records) / best.seconds;
    worst_ids = std::min(worst_ids, rps / r16x);
    std::printf("scale=16x ids=%s threads=1 intervals=%zu time_s=%.4f records_per_s=%.3e over_contiguous=%.2f\n",
                ids_name(ids), best.rows, best.seconds, rps, rps / r16x);
    std::fflush(stdout);
    if (best.rows != base * 16) {
      std::fprintf(stderr, "ids=%s: %zu intervals analyzed, %zu generated\n", ids_name(ids), best.rows, base * 16);
      return 1;
    }
  }
  // The 16x trace with a wide tree (Gen::wide): memory must follow the paths,
  // not intervals × nodes (dense, this was 80 000 × 4 000 doubles, 2.6 GB).
  {
    Gen g;
    names_wide = g.wide = 2000;
    trace::Trace t = g.make(base * 16);
    const Sample best = best_of(3, t, 1);
    std::printf("scale=16x wide=%u threads=1 intervals=%zu time_s=%.4f records_per_s=%.3e "
                "over_narrow=%.2f own_peak_rss_mb=%.0f\n",
                g.wide, best.rows, best.seconds, double(t.total_records) / best.seconds,
                double(t.total_records) / best.seconds / r16x, double(best.maxrss_kb) / 1024.0);
    std::fflush(stdout);
  }
  std::printf("machine: reference_sort_256k_ms=%.2f before, %.2f after (lower is faster)\n",
              ref_before, reference_sort_ms());
  std::printf("records_per_s=%.3e scale_16x_over_1x_time=%.2f worst_ids_over_contiguous=%.2f\n", r16x,
              t16x / t1x, worst_ids);
  return 0;
}
