// The engine: rows of int64 in pages, row locks (strict 2PL), a buffer pool and
// a write-ahead log, wired together.
//
// A row r lives in page r / slots_per_page, slot r % slots_per_page. Writes log
// an update record (row, old, new) before changing the page (write-ahead), keep
// an in-memory undo entry, and hold their X lock until commit or abort.
// Commit = Log::commit (durability per the flush policy), then release every
// lock: locks are held across the log flush, as in a strict 2PL engine.
#ifndef MINIDB_DATABASE_H
#define MINIDB_DATABASE_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "buffer_pool.h"
#include "lock_manager.h"
#include "wal.h"

namespace minidb {

struct DatabaseOptions {
  std::string dir;  // holds minidb.data and minidb.wal; must exist
  uint64_t rows = 65536;
  LockManagerOptions lock;
  BufferPoolOptions pool;  // data_file and num_pages are set from dir and rows
  LogOptions log;          // dir is set from dir
};

struct Txn {
  uint64_t id = 0;
  int64_t age_ns = 0;  // VATS age: when the transaction (first attempt) began
  int64_t lock_wait_ns = 0;  // time blocked in the lock manager
  struct Undo {
    uint64_t row;
    int64_t old_value;
  };
  std::vector<Undo> undo;
};

enum class OpStatus { Ok, Aborted };

class Database {
 public:
  static std::unique_ptr<Database> open(const DatabaseOptions &options, std::string *err);

  Txn begin(int64_t age_ns);
  // S-locks `row` and reads it.
  OpStatus read_row(Txn &txn, uint64_t row, int64_t *value);
  // X-locks `row` and adds `delta` to it.
  OpStatus write_row(Txn &txn, uint64_t row, int64_t delta);
  void commit(Txn &txn);
  // Undoes the transaction's writes, logs the abort, releases its locks.
  void abort(Txn &txn);

  uint64_t rows() const { return options_.rows; }
  LockManager &locks() { return *locks_; }
  BufferPool &pool() { return *pool_; }
  Log &log() { return *log_; }
  uint64_t deadlock_aborts() const { return deadlock_aborts_.load(); }
  uint64_t timeout_aborts() const { return timeout_aborts_.load(); }

 private:
  explicit Database(const DatabaseOptions &options) : options_(options) {}
  OpStatus lock_row(Txn &txn, uint64_t row, LockMode mode);

  DatabaseOptions options_;
  std::unique_ptr<LockManager> locks_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<Log> log_;
  std::atomic<uint64_t> next_txn_{1};
  std::atomic<uint64_t> deadlock_aborts_{0};
  std::atomic<uint64_t> timeout_aborts_{0};
};

}  // namespace minidb

#endif
