// minidb_bench's flags: one table drives parsing, --help and the presets.
#ifndef MINIDB_OPTIONS_H
#define MINIDB_OPTIONS_H

#include <cstdint>
#include <string>
#include <vector>

#include "buffer_pool.h"
#include "lock_manager.h"
#include "wal.h"
#include "workload.h"

namespace minidb {

enum class WorkerMode { Thread, Pool };

struct BenchOptions {
  std::string preset = "default";
  WorkerMode mode = WorkerMode::Thread;
  uint32_t threads = 4;   // connections
  uint32_t workers = 0;   // pool mode; 0 = same as threads
  double duration_s = 0;  // 0 = run until --txns
  uint64_t txns = 2000;   // 0 = run until --duration
  double rate = 0;        // total arrivals per second; 0 = closed loop
  GrantPolicy lock_policy = GrantPolicy::FCFS;
  LruPolicy lru = LruPolicy::Eager;
  FlushPolicy flush = FlushPolicy::Group;
  uint64_t seed = 1;
  WorkloadOptions workload;
  size_t frames = 24;
  size_t page_size = 1024;
  uint32_t lock_timeout_ms = 5000;
  uint32_t lazy_flush_us = 1000;
  std::string dir = "minidb-data";
  std::string json;
  std::vector<std::string> inject;  // FUNCTION=DIST
  bool list_injectable = false;
  bool help = false;
};

// Parses argv (a --preset is applied first, so later flags override it).
// Returns false and sets *err on bad usage.
bool parse_bench_options(int argc, char **argv, BenchOptions *out, std::string *err);
std::string bench_usage();

}  // namespace minidb

#endif
