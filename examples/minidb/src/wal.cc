#include "wal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fault.h"

namespace minidb {
namespace {

constexpr size_t kHeader = 4 + 4 + 8 + 8 + 1;

uint32_t fnv1a(const char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint8_t>(p[i]);
    h *= 16777619u;
  }
  return h;
}

std::string log_path(const std::string &dir) { return dir + "/minidb.wal"; }

void encode(std::string *out, uint64_t lsn, uint64_t txn, RecordType type, const void *data,
            size_t len) {
  size_t start = out->size();
  out->resize(start + kHeader + len);
  char *p = &(*out)[start];
  uint32_t len32 = static_cast<uint32_t>(len);
  uint8_t t = static_cast<uint8_t>(type);
  std::memcpy(p, &len32, 4);
  std::memcpy(p + 8, &lsn, 8);
  std::memcpy(p + 16, &txn, 8);
  std::memcpy(p + 24, &t, 1);
  if (len) std::memcpy(p + kHeader, data, len);
  uint32_t sum = fnv1a(p + 8, kHeader - 8 + len);
  std::memcpy(p + 4, &sum, 4);
}

// Decodes records from `bytes`; returns the length of the valid prefix.
size_t decode_all(const std::string &bytes, std::vector<LogRecord> *out) {
  size_t pos = 0;
  while (bytes.size() - pos >= kHeader) {
    const char *p = bytes.data() + pos;
    uint32_t len, sum;
    std::memcpy(&len, p, 4);
    std::memcpy(&sum, p + 4, 4);
    if (bytes.size() - pos - kHeader < len) break;
    if (fnv1a(p + 8, kHeader - 8 + len) != sum) break;
    LogRecord r;
    std::memcpy(&r.lsn, p + 8, 8);
    std::memcpy(&r.txn, p + 16, 8);
    uint8_t t;
    std::memcpy(&t, p + 24, 1);
    r.type = static_cast<RecordType>(t);
    r.payload.assign(p + kHeader, len);
    if (out) out->push_back(std::move(r));
    pos += kHeader + len;
  }
  return pos;
}

bool read_file(const std::string &path, std::string *bytes, std::string *err) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    if (errno == ENOENT) return true;
    *err = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = "cannot read " + path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    bytes->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

}  // namespace

const char *flush_policy_name(FlushPolicy p) {
  switch (p) {
    case FlushPolicy::Eager: return "eager";
    case FlushPolicy::Lazy: return "lazy";
    case FlushPolicy::Group: return "group";
  }
  return "?";
}

bool Log::read_all(const std::string &dir, std::vector<LogRecord> *out, std::string *err) {
  std::string bytes;
  if (!read_file(log_path(dir), &bytes, err)) return false;
  decode_all(bytes, out);
  return true;
}

std::unique_ptr<Log> Log::open(const LogOptions &options, std::string *err) {
  std::string path = log_path(options.dir);
  std::string bytes;
  if (!read_file(path, &bytes, err)) return nullptr;
  std::vector<LogRecord> records;
  size_t valid = decode_all(bytes, &records);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) {
    *err = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  // Drop a torn tail so new records follow the last valid one.
  if (valid < bytes.size() && ftruncate(fd, static_cast<off_t>(valid)) != 0) {
    *err = "cannot truncate torn tail of " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  if (lseek(fd, static_cast<off_t>(valid), SEEK_SET) < 0) {
    *err = "cannot seek in " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  uint64_t next = records.empty() ? 1 : records.back().lsn + 1;
  return std::unique_ptr<Log>(new Log(options, fd, path, next));
}

Log::Log(const LogOptions &options, int fd, std::string path, uint64_t next_lsn)
    : options_(options), fd_(fd), path_(std::move(path)), next_lsn_(next_lsn),
      durable_lsn_(next_lsn - 1) {
  if (options_.policy == FlushPolicy::Lazy) flusher_ = std::thread([this] { flusher_loop(); });
}

Log::~Log() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  flush();
  ::close(fd_);
}

uint64_t Log::append(uint64_t txn, RecordType type, const void *data, size_t len) {
  inject_delay(InjectPoint::LogAppend);
  std::lock_guard<std::mutex> g(mutex_);
  uint64_t lsn = next_lsn_++;
  encode(&buffer_, lsn, txn, type, data, len);
  ++stats_.records;
  if (type == RecordType::Commit) {
    ++buffered_commits_;
    ++stats_.commits;
  }
  return lsn;
}

uint64_t Log::commit(uint64_t txn) {
  inject_delay(InjectPoint::LogCommit);
  uint64_t lsn = append(txn, RecordType::Commit, nullptr, 0);
  switch (options_.policy) {
    case FlushPolicy::Eager:
      flush();
      break;
    case FlushPolicy::Lazy:
      break;  // the flusher thread makes it durable within lazy_interval
    case FlushPolicy::Group: {
      std::unique_lock<std::mutex> lock(mutex_);
      group_commit_wait(lock, lsn);
      break;
    }
  }
  return lsn;
}

void Log::group_commit_wait(std::unique_lock<std::mutex> &lock, uint64_t lsn) {
  while (durable_lsn_ < lsn) {
    if (leader_active_) {
      durable_cv_.wait(lock);
      continue;
    }
    leader_active_ = true;
    lock.unlock();
    flush();
    lock.lock();
    leader_active_ = false;
    durable_cv_.notify_all();
  }
}

void Log::flush() {
  inject_delay(InjectPoint::LogFlush);
  std::lock_guard<std::mutex> io(io_mutex_);
  std::string batch;
  uint64_t upto, commits;
  {
    std::lock_guard<std::mutex> g(mutex_);
    batch.swap(buffer_);
    upto = next_lsn_ - 1;
    commits = buffered_commits_;
    buffered_commits_ = 0;
  }
  size_t done = 0;
  while (done < batch.size()) {
    ssize_t n = ::write(fd_, batch.data() + done, batch.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      // A log that cannot be written cannot promise durability: stop loudly
      // rather than acknowledge commits that are not on disk.
      std::perror("minidb: write to log failed");
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
  fsync();
  std::lock_guard<std::mutex> g(mutex_);
  if (upto > durable_lsn_) durable_lsn_ = upto;
  ++stats_.fsyncs;
  if (commits > stats_.max_commits_per_fsync) stats_.max_commits_per_fsync = commits;
}

void Log::fsync() {
  inject_delay(InjectPoint::LogFsync);
  if (::fsync(fd_) != 0) {
    std::perror("minidb: fsync of log failed");
    std::abort();
  }
}

void Log::flusher_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    stop_cv_.wait_for(lock, options_.lazy_interval);
    if (stop_) break;
    if (buffer_.empty()) continue;
    lock.unlock();
    flush();
    lock.lock();
  }
}

uint64_t Log::durable_lsn() const {
  std::lock_guard<std::mutex> g(mutex_);
  return durable_lsn_;
}

LogStats Log::stats() const {
  std::lock_guard<std::mutex> g(mutex_);
  return stats_;
}

}  // namespace minidb
