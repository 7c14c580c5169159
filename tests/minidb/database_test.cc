// The engine end to end, in process: 2PL + undo keep a conserved sum under
// concurrent transfers (both worker models, both grant policies), and aborts
// leave no trace in the rows.
#include "database.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "executor.h"
#include "print_policies.h"
#include "test_dir.h"
#include "thread_pool.h"

using namespace minidb;
using minidb_test::TempDir;

namespace {

std::unique_ptr<Database> open_db(const TempDir &dir, GrantPolicy policy, LruPolicy lru,
                                  FlushPolicy flush) {
  DatabaseOptions o;
  o.dir = dir.path();
  o.rows = 512;
  o.lock.policy = policy;
  o.lock.wait_timeout = std::chrono::milliseconds(20000);
  o.pool.frames = 12;
  o.pool.page_size = 256;  // 32 rows per page: 16 pages, so frames are evicted
  o.pool.lru = lru;
  o.log.policy = flush;
  std::string err;
  auto db = Database::open(o, &err);
  EXPECT_TRUE(db) << err;
  return db;
}

int64_t read_committed(Database &db, uint64_t row) {
  Txn t = db.begin(0);
  int64_t v = 0;
  EXPECT_EQ(db.read_row(t, row, &v), OpStatus::Ok);
  db.commit(t);
  return v;
}

TEST(DatabaseTest, AbortRestoresRowsAndCommitKeepsThem) {
  TempDir dir;
  auto db = open_db(dir, GrantPolicy::FCFS, LruPolicy::Eager, FlushPolicy::Eager);
  Txn a = db->begin(1);
  ASSERT_EQ(db->write_row(a, 10, 5), OpStatus::Ok);
  ASSERT_EQ(db->write_row(a, 10, 7), OpStatus::Ok);
  ASSERT_EQ(db->write_row(a, 300, -3), OpStatus::Ok);
  db->abort(a);
  EXPECT_EQ(read_committed(*db, 10), 0);
  EXPECT_EQ(read_committed(*db, 300), 0);
  Txn b = db->begin(2);
  ASSERT_EQ(db->write_row(b, 10, 4), OpStatus::Ok);
  db->commit(b);
  EXPECT_EQ(read_committed(*db, 10), 4);
  std::vector<LogRecord> recs;
  std::string err;
  ASSERT_TRUE(Log::read_all(dir.path(), &recs, &err)) << err;
  ASSERT_GE(recs.size(), 6u);  // 3 updates + abort, 1 update + commit, ...
  EXPECT_EQ(recs[3].type, RecordType::Abort);
  EXPECT_EQ(recs[5].type, RecordType::Commit);
}

// Transfers between hot rows, in random order so deadlocks happen and are
// retried. Every transfer adds +x and -x, so the sum stays 0 only if locks
// isolate transactions and aborts undo completely.
using Config = std::tuple<GrantPolicy, bool /*pool*/>;
class TransferTest : public ::testing::TestWithParam<Config> {};

TEST_P(TransferTest, ConcurrentTransfersConserveTheSum) {
  GrantPolicy policy = std::get<0>(GetParam());
  bool pooled = std::get<1>(GetParam());
  TempDir dir;
  auto db = open_db(dir, policy, LruPolicy::Lazy, FlushPolicy::Group);
  const int clients = 6, per_client = 150;
  const uint64_t hot = 12;
  std::unique_ptr<ThreadPool> pool;
  if (pooled) pool = std::make_unique<ThreadPool>(clients);
  std::vector<std::thread> ts;
  std::atomic<int> committed{0};
  for (int c = 0; c < clients; ++c) {
    ts.emplace_back([&, c] {
      std::mt19937_64 rng(c + 17);
      for (int i = 0; i < per_client; ++i) {
        TxnSpec spec;
        spec.client = c;
        int64_t x = 1 + static_cast<int64_t>(rng() % 100);
        uint64_t a = (rng() % hot) * 40, b = (rng() % hot) * 40;  // spread over pages
        spec.steps = {{a, true, x}, {(rng() % hot) * 40, false, 0}, {b, true, -x}};
        int64_t age = static_cast<int64_t>(c * 1000 + i);
        TxnOutcome out = pooled ? run_transaction_pooled(*pool, *db, spec, age, c * 1000 + i + 1)
                                : run_transaction(*db, spec, age);
        if (out.committed) committed.fetch_add(1);
      }
    });
  }
  for (auto &t : ts) t.join();
  pool.reset();
  EXPECT_EQ(committed.load(), clients * per_client);
  int64_t sum = 0;
  for (uint64_t r = 0; r < db->rows(); ++r) sum += read_committed(*db, r);
  EXPECT_EQ(sum, 0);
  EXPECT_EQ(db->timeout_aborts(), 0u);
  EXPECT_EQ(db->log().stats().commits, static_cast<uint64_t>(clients * per_client) + db->rows());
}

INSTANTIATE_TEST_SUITE_P(
    Modes, TransferTest,
    ::testing::Combine(::testing::Values(GrantPolicy::FCFS, GrantPolicy::VATS),
                       ::testing::Bool()),
    [](const auto &info) {
      return std::string(grant_policy_name(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "_pool" : "_thread");
    });

}  // namespace
