// minidb_bench: drives minidb with a TPC-C-like mix and prints a latency
// summary. Each transaction is one vprof interval, labelled with its type and
// client.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <vprof/vprof.h>

#include "clock.h"
#include "database.h"
#include "executor.h"
#include "fault.h"
#include "options.h"
#include "stats.h"
#include "workload.h"

using namespace minidb;

namespace {

struct Sample {
  int64_t latency_ns;
  int64_t lock_wait_ns;
  TxnType type;
};

struct ClientResult {
  std::vector<Sample> samples;
  uint64_t retries = 0;
  uint64_t failed = 0;
};

std::atomic<uint64_t> g_next_interval{1};

bool prepare_dir(const std::string &dir, std::string *err) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *err = "cannot create --dir " + dir + ": " + std::strerror(errno);
    return false;
  }
  // A fresh database each run, so repeated runs are comparable.
  for (const char *f : {"/minidb.data", "/minidb.wal"}) {
    std::string path = dir + f;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      *err = "cannot remove " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

void run_client(const BenchOptions &opt, Database &db, ThreadPool *pool, uint32_t client,
                const char *client_name, int64_t t0, std::atomic<uint64_t> &claimed,
                ClientResult &result) {
  WorkloadGenerator gen(opt.workload, opt.seed * 1000003u + client);
  int64_t deadline = opt.duration_s > 0 ? t0 + static_cast<int64_t>(opt.duration_s * 1e9) : 0;
  for (uint64_t k = 0;; ++k) {
    if (opt.txns > 0 && claimed.fetch_add(1) >= opt.txns) break;
    int64_t start = now_ns();
    if (opt.rate > 0) {
      // Open loop: this client's k-th arrival is due at a fixed time whether
      // or not the previous one finished; latency counts from that time.
      int64_t intended =
          t0 + static_cast<int64_t>(static_cast<double>(k * opt.threads + client) * 1e9 / opt.rate);
      if (intended > start) std::this_thread::sleep_for(std::chrono::nanoseconds(intended - start));
      start = intended;
    }
    if (deadline && start >= deadline) break;
    TxnSpec spec = gen.next(client);
    uint64_t interval = g_next_interval.fetch_add(1);
    vprof_interval_begin_labeled(interval, txn_type_name(spec.type), client_name);
    TxnOutcome out = pool ? run_transaction_pooled(*pool, db, spec, start, interval)
                          : run_transaction(db, spec, start);
    vprof_interval_end(interval);
    int64_t end = now_ns();
    result.retries += static_cast<uint64_t>(out.attempts - 1);
    if (!out.committed) {
      ++result.failed;
      continue;
    }
    result.samples.push_back(Sample{end - start, out.lock_wait_ns, spec.type});
  }
}

void print_summary_line(FILE *f, const char *label, const LatencySummary &s) {
  std::fprintf(f,
               "%-12s count=%" PRIu64 " mean_us=%.1f var_us2=%.1f p50_us=%.1f p99_us=%.1f "
               "p999_us=%.1f max_us=%.1f\n",
               label, s.count, s.mean_ns / 1e3, s.variance_ns2 / 1e6, s.p50_ns / 1e3,
               s.p99_ns / 1e3, s.p999_ns / 1e3, s.max_ns / 1e3);
}

void json_summary(FILE *f, const LatencySummary &s) {
  std::fprintf(f,
               "{\"count\": %" PRIu64 ", \"mean_ns\": %.1f, \"variance_ns2\": %.1f, "
               "\"p50_ns\": %" PRId64 ", \"p99_ns\": %" PRId64 ", \"p999_ns\": %" PRId64
               ", \"max_ns\": %" PRId64 "}",
               s.count, s.mean_ns, s.variance_ns2, s.p50_ns, s.p99_ns, s.p999_ns, s.max_ns);
}

}  // namespace

int main(int argc, char **argv) {
  BenchOptions opt;
  std::string err;
  if (!parse_bench_options(argc, argv, &opt, &err)) {
    std::fprintf(stderr, "minidb_bench: %s\n", err.c_str());
    return 2;
  }
  if (opt.help) {
    std::fputs(bench_usage().c_str(), stdout);
    return 0;
  }
  if (opt.list_injectable) {
    for (const std::string &n : injectable_functions()) std::printf("%s\n", n.c_str());
    return 0;
  }
  set_delay_seed(opt.seed);
  for (const std::string &spec : opt.inject) {
    if (!configure_delay(spec, &err)) {
      std::fprintf(stderr, "minidb_bench: %s\n", err.c_str());
      return 2;
    }
  }
  if (!prepare_dir(opt.dir, &err)) {
    std::fprintf(stderr, "minidb_bench: %s\n", err.c_str());
    return 2;
  }

  DatabaseOptions dbo;
  dbo.dir = opt.dir;
  dbo.rows = WorkloadGenerator::rows_needed(opt.workload);
  dbo.lock.policy = opt.lock_policy;
  dbo.lock.wait_timeout = std::chrono::milliseconds(opt.lock_timeout_ms);
  dbo.pool.frames = opt.frames;
  dbo.pool.page_size = opt.page_size;
  dbo.pool.lru = opt.lru;
  dbo.log.policy = opt.flush;
  dbo.log.lazy_interval = std::chrono::microseconds(opt.lazy_flush_us);
  std::unique_ptr<Database> db = Database::open(dbo, &err);
  if (!db) {
    std::fprintf(stderr, "minidb_bench: %s\n", err.c_str());
    return 1;
  }

  std::vector<std::string> client_names;
  for (uint32_t c = 0; c < opt.threads; ++c) client_names.push_back("client-" + std::to_string(c));
  std::vector<ClientResult> results(opt.threads);
  std::atomic<uint64_t> claimed{0};
  std::unique_ptr<ThreadPool> pool;
  if (opt.mode == WorkerMode::Pool) pool = std::make_unique<ThreadPool>(opt.workers);

  int64_t t0 = now_ns();
  {
    std::vector<std::thread> clients;
    for (uint32_t c = 0; c < opt.threads; ++c)
      clients.emplace_back(run_client, std::cref(opt), std::ref(*db), pool.get(), c,
                           client_names[c].c_str(), t0, std::ref(claimed), std::ref(results[c]));
    for (auto &t : clients) t.join();
  }
  double elapsed_s = static_cast<double>(now_ns() - t0) / 1e9;
  pool.reset();

  std::vector<int64_t> all, lock_waits;
  std::vector<std::vector<int64_t>> by_type(static_cast<size_t>(TxnType::Count));
  uint64_t retries = 0, failed = 0;
  for (const ClientResult &r : results) {
    retries += r.retries;
    failed += r.failed;
    for (const Sample &s : r.samples) {
      all.push_back(s.latency_ns);
      lock_waits.push_back(s.lock_wait_ns);
      by_type[static_cast<size_t>(s.type)].push_back(s.latency_ns);
    }
  }
  LatencySummary total = summarize(all);
  LatencySummary waits = summarize(lock_waits);
  // Measured here, independently of vprof: how much of Var(latency) the
  // time blocked on row locks accounts for.
  double wait_share = variance_share(lock_waits, all);
  LockStats ls = db->locks().stats();
  BufferPoolStats ps = db->pool().stats();
  LogStats lg = db->log().stats();

  std::printf("minidb_bench preset=%s mode=%s threads=%u workers=%u lock=%s lru=%s flush=%s "
              "loop=%s seed=%" PRIu64 "\n",
              opt.preset.c_str(), opt.mode == WorkerMode::Pool ? "pool" : "thread", opt.threads,
              opt.mode == WorkerMode::Pool ? opt.workers : 0, grant_policy_name(opt.lock_policy),
              lru_policy_name(opt.lru), flush_policy_name(opt.flush),
              opt.rate > 0 ? "open" : "closed", opt.seed);
  std::printf("committed=%" PRIu64 " failed=%" PRIu64 " retries=%" PRIu64 " elapsed_s=%.2f tps=%.0f\n",
              total.count, failed, retries, elapsed_s, static_cast<double>(total.count) / elapsed_s);
  print_summary_line(stdout, "all", total);
  for (size_t t = 0; t < by_type.size(); ++t)
    if (!by_type[t].empty())
      print_summary_line(stdout, txn_type_name(static_cast<TxnType>(t)), summarize(by_type[t]));
  std::printf("lock_wait:   mean_us=%.1f var_us2=%.1f p99_us=%.1f share_of_latency_var=%.3f\n",
              waits.mean_ns / 1e3, waits.variance_ns2 / 1e6, waits.p99_ns / 1e3, wait_share);
  std::printf("locks: requests=%" PRIu64 " waits=%" PRIu64 " deadlocks=%" PRIu64
              " timeouts=%" PRIu64 "\n",
              ls.requests, ls.waits, ls.deadlocks, ls.timeouts);
  std::printf("pool: hits=%" PRIu64 " misses=%" PRIu64 " writebacks=%" PRIu64
              " lazy_deferred=%" PRIu64 " lazy_replayed=%" PRIu64 " lazy_stale=%" PRIu64 "\n",
              ps.hits, ps.misses, ps.writebacks, ps.lazy_deferred, ps.lazy_replayed, ps.lazy_stale);
  std::printf("log: records=%" PRIu64 " commits=%" PRIu64 " fsyncs=%" PRIu64
              " max_commits_per_fsync=%" PRIu64 "\n",
              lg.records, lg.commits, lg.fsyncs, lg.max_commits_per_fsync);
  for (size_t i = 0; i < injectable_functions().size(); ++i) {
    uint64_t n = injected_count(static_cast<InjectPoint>(i));
    if (n) std::printf("injected: %s delays=%" PRIu64 "\n", injectable_functions()[i].c_str(), n);
  }

  if (!opt.json.empty()) {
    FILE *f = std::fopen(opt.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "minidb_bench: cannot write --json %s: %s\n", opt.json.c_str(),
                   std::strerror(errno));
      return 1;
    }
    std::fprintf(f, "{\"schema_version\": 1, \"preset\": \"%s\", \"mode\": \"%s\", "
                    "\"lock_policy\": \"%s\", \"lru\": \"%s\", \"flush\": \"%s\", \"loop\": \"%s\", "
                    "\"threads\": %u, \"seed\": %" PRIu64 ", \"elapsed_s\": %.3f, "
                    "\"failed\": %" PRIu64 ", \"retries\": %" PRIu64 ", \"deadlocks\": %" PRIu64
                    ", \"lock_timeouts\": %" PRIu64 ", \"fsyncs\": %" PRIu64 ",\n \"latency\": ",
                 opt.preset.c_str(), opt.mode == WorkerMode::Pool ? "pool" : "thread",
                 grant_policy_name(opt.lock_policy), lru_policy_name(opt.lru),
                 flush_policy_name(opt.flush), opt.rate > 0 ? "open" : "closed", opt.threads,
                 opt.seed, elapsed_s, failed, retries, ls.deadlocks, ls.timeouts, lg.fsyncs);
    json_summary(f, total);
    std::fprintf(f, ",\n \"lock_wait\": ");
    json_summary(f, waits);
    std::fprintf(f, ",\n \"lock_wait_share_of_variance\": %.4f", wait_share);
    std::fprintf(f, ",\n \"by_type\": {");
    bool first = true;
    for (size_t t = 0; t < by_type.size(); ++t) {
      if (by_type[t].empty()) continue;
      std::fprintf(f, "%s\"%s\": ", first ? "" : ", ", txn_type_name(static_cast<TxnType>(t)));
      json_summary(f, summarize(by_type[t]));
      first = false;
    }
    std::fprintf(f, "}}\n");
    std::fclose(f);
  }
  return 0;
}
