#include "options.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <sstream>

namespace minidb {
namespace {

using Setter = std::function<bool(const std::string &, BenchOptions *)>;

struct Flag {
  const char *name;
  const char *arg;  // null for a switch
  const char *help;
  Setter set;
};

bool to_u64(const std::string &s, uint64_t *out) {
  if (s.empty() || s[0] == '-') return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return false;
  *out = v;
  return true;
}

bool to_double(const std::string &s, double *out) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || v < 0) return false;
  *out = v;
  return true;
}

template <typename T>
Setter unsigned_flag(T BenchOptions::*field, uint64_t min) {
  return [field, min](const std::string &v, BenchOptions *o) {
    uint64_t x;
    if (!to_u64(v, &x) || x < min) return false;
    o->*field = static_cast<T>(x);
    return true;
  };
}

bool apply_preset(const std::string &name, BenchOptions *o) {
  BenchOptions fresh;
  if (name == "default") {
    // Small and quick: ~2 s on 2 cores, little contention.
    fresh.preset = name;
    *o = fresh;
    return true;
  }
  if (name == "contended") {
    // One warehouse, hot stock rows, and one fsync per commit while the
    // committer still holds its row locks: lock waits dominate the variance.
    fresh.preset = name;
    fresh.threads = 8;
    fresh.txns = 1000;
    fresh.workload.warehouses = 1;
    fresh.workload.skew = 0.9;
    fresh.workload.hot_rows = 8;
    fresh.flush = FlushPolicy::Eager;
    fresh.lock_policy = GrantPolicy::FCFS;
    *o = fresh;
    return true;
  }
  return false;
}

const std::vector<Flag> &flags() {
  static const std::vector<Flag> table = {
      {"--preset", "NAME", "default | contended (applied first; other flags override it)",
       [](const std::string &v, BenchOptions *o) { return apply_preset(v, o); }},
      {"--mode", "MODE", "thread (thread per connection) | pool (steps are tasks on a queue)",
       [](const std::string &v, BenchOptions *o) {
         if (v == "thread") o->mode = WorkerMode::Thread;
         else if (v == "pool") o->mode = WorkerMode::Pool;
         else return false;
         return true;
       }},
      {"--threads", "N", "client connections (default 4)", unsigned_flag(&BenchOptions::threads, 1)},
      {"--workers", "N", "pool workers in --mode pool (default: --threads)",
       unsigned_flag(&BenchOptions::workers, 0)},
      {"--duration", "SECONDS", "run for this long (0: until --txns; alone, it lifts the --txns budget)",
       [](const std::string &v, BenchOptions *o) { return to_double(v, &o->duration_s); }},
      {"--txns", "N", "total transactions to commit (default 2000; 0: until --duration)",
       unsigned_flag(&BenchOptions::txns, 0)},
      {"--rate", "TPS", "open loop: total arrivals per second, latency from the intended start "
                        "(default 0: closed loop)",
       [](const std::string &v, BenchOptions *o) { return to_double(v, &o->rate); }},
      {"--lock-policy", "POLICY", "fcfs | vats",
       [](const std::string &v, BenchOptions *o) {
         if (v == "fcfs") o->lock_policy = GrantPolicy::FCFS;
         else if (v == "vats") o->lock_policy = GrantPolicy::VATS;
         else return false;
         return true;
       }},
      {"--lru", "POLICY", "eager | lazy (bounded try-lock, per-thread backlog)",
       [](const std::string &v, BenchOptions *o) {
         if (v == "eager") o->lru = LruPolicy::Eager;
         else if (v == "lazy") o->lru = LruPolicy::Lazy;
         else return false;
         return true;
       }},
      {"--flush", "POLICY", "eager (fsync per commit) | lazy (flusher thread) | group",
       [](const std::string &v, BenchOptions *o) {
         if (v == "eager") o->flush = FlushPolicy::Eager;
         else if (v == "lazy") o->flush = FlushPolicy::Lazy;
         else if (v == "group") o->flush = FlushPolicy::Group;
         else return false;
         return true;
       }},
      {"--seed", "N", "workload and delay seed (default 1)", unsigned_flag(&BenchOptions::seed, 0)},
      {"--warehouses", "N", "warehouses; fewer = more contention (default 4)",
       [](const std::string &v, BenchOptions *o) {
         uint64_t x;
         if (!to_u64(v, &x) || x < 1) return false;
         o->workload.warehouses = static_cast<uint32_t>(x);
         return true;
       }},
      {"--skew", "P", "probability that a customer/item/stock pick hits the hot rows (default 0.2)",
       [](const std::string &v, BenchOptions *o) {
         return to_double(v, &o->workload.skew) && o->workload.skew <= 1.0;
       }},
      {"--hot-rows", "N", "hot rows per range (default 16)",
       [](const std::string &v, BenchOptions *o) {
         uint64_t x;
         if (!to_u64(v, &x) || x < 1) return false;
         o->workload.hot_rows = static_cast<uint32_t>(x);
         return true;
       }},
      {"--frames", "N", "buffer pool frames (default 24; must exceed the worker count)",
       unsigned_flag(&BenchOptions::frames, 2)},
      {"--page-size", "BYTES", "page size (default 1024)", unsigned_flag(&BenchOptions::page_size, 64)},
      {"--lock-timeout-ms", "MS", "lock wait safety timeout (default 5000; deadlocks are detected)",
       unsigned_flag(&BenchOptions::lock_timeout_ms, 1)},
      {"--lazy-flush-us", "US", "flusher period for --flush lazy (default 1000)",
       unsigned_flag(&BenchOptions::lazy_flush_us, 1)},
      {"--dir", "DIR", "folder for minidb.data and minidb.wal (recreated each run; default "
                       "./minidb-data)",
       [](const std::string &v, BenchOptions *o) {
         o->dir = v;
         return !v.empty();
       }},
      {"--json", "FILE", "also write the summary as JSON",
       [](const std::string &v, BenchOptions *o) {
         o->json = v;
         return !v.empty();
       }},
      {"--inject-delay", "FUNC=DIST", "sleep inside FUNC: fixed:100us | uniform:0:500us | exp:200us "
                                      "(repeatable; see --list-injectable)",
       [](const std::string &v, BenchOptions *o) {
         o->inject.push_back(v);
         return true;
       }},
      {"--list-injectable", nullptr, "print the functions --inject-delay accepts and exit",
       [](const std::string &, BenchOptions *o) {
         o->list_injectable = true;
         return true;
       }},
      {"--help", nullptr, "this text",
       [](const std::string &, BenchOptions *o) {
         o->help = true;
         return true;
       }},
  };
  return table;
}

}  // namespace

std::string bench_usage() {
  std::ostringstream os;
  os << "usage: minidb_bench [flags]\n\n"
        "Runs a TPC-C-like mix on minidb and prints a latency summary.\n\n";
  for (const Flag &f : flags()) {
    std::string lhs = std::string(f.name) + (f.arg ? std::string(" ") + f.arg : "");
    os << "  " << lhs;
    for (size_t i = lhs.size(); i < 26; ++i) os << ' ';
    os << ' ' << f.help << '\n';
  }
  return os.str();
}

bool parse_bench_options(int argc, char **argv, BenchOptions *out, std::string *err) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Accept "--flag=value" as well as "--flag value".
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    bool inline_value = false;
    size_t eq = name.find('=');
    if (name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const Flag *flag = nullptr;
    for (const Flag &f : flags())
      if (name == f.name) flag = &f;
    if (!flag) {
      *err = "unknown flag '" + args[i] + "' (see --help)";
      return false;
    }
    if (flag->arg && !inline_value) {
      if (i + 1 >= args.size()) {
        *err = std::string(flag->name) + " needs a value (" + flag->arg + ")";
        return false;
      }
      value = args[++i];
    }
    pairs.emplace_back(flag->name, value);
  }
  BenchOptions o;
  for (const auto &p : pairs)  // the preset first, so every other flag overrides it
    if (p.first == "--preset" && !apply_preset(p.second, &o)) {
      *err = "unknown --preset '" + p.second + "' (default | contended)";
      return false;
    }
  for (const auto &p : pairs) {
    if (p.first == "--preset") continue;
    for (const Flag &f : flags()) {
      if (p.first != f.name) continue;
      if (!f.set(p.second, &o)) {
        *err = "bad value '" + p.second + "' for " + p.first + " (" + f.help + ")";
        return false;
      }
    }
  }
  // --duration alone means "run for that long": the transaction budget of the
  // preset would otherwise end the run early.
  bool txns_given = false;
  for (const auto &p : pairs) txns_given |= p.first == "--txns";
  if (o.duration_s > 0 && !txns_given) o.txns = 0;
  if (o.txns == 0 && o.duration_s <= 0) {
    *err = "give --txns N or --duration SECONDS (both are 0)";
    return false;
  }
  if (o.workers == 0) o.workers = o.threads;
  if (o.mode == WorkerMode::Pool && o.workers < o.threads) {
    // Fewer workers than open transactions can park every worker on a lock
    // whose holder's next step sits in the queue: a deadlock the lock
    // manager cannot see (only the lock timeout would end it).
    *err = "--workers must be at least --threads in --mode pool";
    return false;
  }
  uint32_t active = o.mode == WorkerMode::Pool ? o.workers : o.threads;
  if (o.frames <= active) {
    *err = "--frames must exceed the number of threads that pin pages (" +
           std::to_string(active) + ")";
    return false;
  }
  *out = o;
  return true;
}

}  // namespace minidb
