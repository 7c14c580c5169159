// Write-ahead log: one append-only file, `<dir>/minidb.wal`, made durable with
// a real fsync.
//
// Record layout (little-endian, as the host writes it):
//   u32 payload_len | u32 checksum | u64 lsn | u64 txn | u8 type | payload
// The checksum (FNV-1a over lsn..payload) lets reopen stop at a torn tail.
// LSNs count records from 1 and continue across reopen.
//
// Flush policies at commit (the durability/latency trade InnoDB exposes as
// innodb_flush_log_at_trx_commit):
//  - Eager: every commit writes the buffer and calls fsync itself, serialized
//    by io_mutex_: one fsync per commit, even if another commit's flush
//    already covered its record.
//  - Lazy: commit returns at once; a flusher thread writes and fsyncs every
//    `lazy_interval`. A crash can lose the last interval's commits.
//  - Group: a committer waits until its record is durable. The first waiter
//    becomes the leader, flushes everything buffered with one fsync, and wakes
//    the others; commits arriving during that fsync form the next group.
#ifndef MINIDB_WAL_H
#define MINIDB_WAL_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace minidb {

enum class FlushPolicy { Eager, Lazy, Group };
const char *flush_policy_name(FlushPolicy p);

enum class RecordType : uint8_t { Update = 1, Commit = 2, Abort = 3 };

struct LogRecord {
  uint64_t lsn = 0;
  uint64_t txn = 0;
  RecordType type = RecordType::Update;
  std::string payload;
};

struct LogOptions {
  std::string dir;
  FlushPolicy policy = FlushPolicy::Group;
  std::chrono::microseconds lazy_interval{1000};
};

struct LogStats {
  uint64_t records = 0;
  uint64_t commits = 0;
  uint64_t fsyncs = 0;
  uint64_t max_commits_per_fsync = 0;  // the largest group
};

class Log {
 public:
  // Opens (or creates) the log in options.dir, drops a torn tail, and
  // continues numbering after the last valid record.
  static std::unique_ptr<Log> open(const LogOptions &options, std::string *err);
  // Stops the flusher and makes everything appended durable.
  ~Log();
  Log(const Log &) = delete;
  Log &operator=(const Log &) = delete;

  // Buffers one record; returns its LSN. Not durable until a flush.
  uint64_t append(uint64_t txn, RecordType type, const void *data, size_t len);
  // Appends the commit record of `txn` and makes it durable per the policy.
  // Returns the commit record's LSN.
  uint64_t commit(uint64_t txn);

  uint64_t durable_lsn() const;
  LogStats stats() const;
  FlushPolicy policy() const { return options_.policy; }
  std::string path() const { return path_; }

  // Reads every valid record of `<dir>/minidb.wal`, stopping at a torn tail.
  static bool read_all(const std::string &dir, std::vector<LogRecord> *out, std::string *err);

 private:
  Log(const LogOptions &options, int fd, std::string path, uint64_t next_lsn);
  void flush();
  // Named like the syscall on purpose: it is the injectable `Log::fsync`.
  void fsync();
  void group_commit_wait(std::unique_lock<std::mutex> &lock, uint64_t lsn);
  void flusher_loop();

  LogOptions options_;
  int fd_;
  std::string path_;

  mutable std::mutex mutex_;  // guards buffer_, next_lsn_, counters below
  std::string buffer_;
  uint64_t next_lsn_;
  uint64_t buffered_commits_ = 0;
  uint64_t durable_lsn_;
  bool leader_active_ = false;  // group commit: a flush is in progress
  std::condition_variable durable_cv_;
  LogStats stats_;

  std::mutex io_mutex_;  // one writer+fsync at a time

  std::thread flusher_;
  bool stop_ = false;
  std::condition_variable stop_cv_;
};

}  // namespace minidb

#endif
