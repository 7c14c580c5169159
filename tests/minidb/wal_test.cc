#include "wal.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "fault.h"
#include "print_policies.h"
#include "test_dir.h"

using namespace minidb;
using minidb_test::TempDir;

namespace {

std::unique_ptr<Log> open_log(const TempDir &dir, FlushPolicy policy) {
  LogOptions o;
  o.dir = dir.path();
  o.policy = policy;
  std::string err;
  auto log = Log::open(o, &err);
  EXPECT_TRUE(log) << err;
  return log;
}

std::vector<LogRecord> read_back(const TempDir &dir) {
  std::vector<LogRecord> records;
  std::string err;
  EXPECT_TRUE(Log::read_all(dir.path(), &records, &err)) << err;
  return records;
}

class FlushParam : public ::testing::TestWithParam<FlushPolicy> {};

TEST_P(FlushParam, RecordsAreReadableAfterReopenAndNumberingContinues) {
  TempDir dir;
  {
    auto log = open_log(dir, GetParam());
    for (uint64_t txn = 1; txn <= 50; ++txn) {
      int64_t payload[3] = {static_cast<int64_t>(txn), -1, static_cast<int64_t>(txn * 7)};
      EXPECT_EQ(log->append(txn, RecordType::Update, payload, sizeof payload), 2 * txn - 1);
      EXPECT_EQ(log->commit(txn), 2 * txn);
    }
  }
  std::vector<LogRecord> recs = read_back(dir);
  ASSERT_EQ(recs.size(), 100u);
  for (uint64_t i = 0; i < recs.size(); ++i) {
    uint64_t txn = i / 2 + 1;
    EXPECT_EQ(recs[i].lsn, i + 1);
    EXPECT_EQ(recs[i].txn, txn);
    if (i % 2 == 0) {
      ASSERT_EQ(recs[i].type, RecordType::Update);
      ASSERT_EQ(recs[i].payload.size(), 24u);
      int64_t p[3];
      std::memcpy(p, recs[i].payload.data(), 24);
      EXPECT_EQ(p[2], static_cast<int64_t>(txn * 7));
    } else {
      EXPECT_EQ(recs[i].type, RecordType::Commit);
    }
  }
  {
    auto log = open_log(dir, GetParam());
    EXPECT_EQ(log->append(99, RecordType::Abort, nullptr, 0), 101u);
  }
  EXPECT_EQ(read_back(dir).size(), 101u);
}

INSTANTIATE_TEST_SUITE_P(Flush, FlushParam,
                         ::testing::Values(FlushPolicy::Eager, FlushPolicy::Lazy, FlushPolicy::Group),
                         [](const auto &info) { return std::string(flush_policy_name(info.param)); });

TEST(WalTest, EagerAndGroupCommitAreInTheFileWhenCommitReturns) {
  for (FlushPolicy p : {FlushPolicy::Eager, FlushPolicy::Group}) {
    TempDir dir;
    auto log = open_log(dir, p);
    log->append(1, RecordType::Update, "abc", 3);
    uint64_t lsn = log->commit(1);
    EXPECT_GE(log->durable_lsn(), lsn);
    // Read the file while the log is still open: the records are not just
    // in the in-memory buffer.
    std::vector<LogRecord> recs = read_back(dir);
    ASSERT_EQ(recs.size(), 2u) << flush_policy_name(p);
    EXPECT_EQ(recs[1].type, RecordType::Commit);
  }
}

TEST(WalTest, LazyCommitBecomesDurableThroughTheFlusher) {
  TempDir dir;
  auto log = open_log(dir, FlushPolicy::Lazy);
  uint64_t lsn = log->commit(1);
  // The flusher runs every millisecond; wait for it without a time bound on
  // the assertion (ctest's timeout catches a flusher that never runs).
  while (log->durable_lsn() < lsn) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(read_back(dir).size(), 1u);
  EXPECT_GE(log->stats().fsyncs, 1u);
}

TEST(WalTest, TornTailIsDroppedOnReopen) {
  TempDir dir;
  {
    auto log = open_log(dir, FlushPolicy::Eager);
    log->commit(1);
    log->commit(2);
  }
  {
    int fd = ::open((dir.path() + "/minidb.wal").c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    const char junk[10] = {7, 0, 0, 0, 1, 2, 3, 4, 5, 6};  // a half-written header
    ASSERT_EQ(::write(fd, junk, sizeof junk), static_cast<ssize_t>(sizeof junk));
    ::close(fd);
  }
  EXPECT_EQ(read_back(dir).size(), 2u);
  {
    auto log = open_log(dir, FlushPolicy::Eager);
    EXPECT_EQ(log->commit(3), 3u);
  }
  std::vector<LogRecord> recs = read_back(dir);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[2].txn, 3u);
}

// Commits from many threads during slow fsyncs: eager does one fsync per
// commit, group commit shares fsyncs.
uint64_t fsyncs_for(FlushPolicy p, uint64_t *max_batch) {
  TempDir dir;
  clear_delays();
  std::string err;
  EXPECT_TRUE(configure_delay("Log::fsync=fixed:2ms", &err)) << err;
  auto log = open_log(dir, p);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) log->commit(static_cast<uint64_t>(t * 100 + i));
    });
  for (auto &th : ts) th.join();
  LogStats s = log->stats();
  clear_delays();
  EXPECT_EQ(s.commits, 80u);
  *max_batch = s.max_commits_per_fsync;
  return s.fsyncs;
}

TEST(WalTest, GroupCommitSharesFsyncsEagerDoesNot) {
  uint64_t eager_batch = 0, group_batch = 0;
  EXPECT_EQ(fsyncs_for(FlushPolicy::Eager, &eager_batch), 80u);
  uint64_t group = fsyncs_for(FlushPolicy::Group, &group_batch);
  EXPECT_LT(group, 80u);
  EXPECT_GT(group_batch, 1u);
}

}  // namespace
