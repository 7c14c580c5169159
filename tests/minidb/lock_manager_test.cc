// Lock manager invariants. The shadow checker is independent of the lock
// manager: a test thread records a lock after acquire() returns Granted and
// forgets it before release_all(), so any overlap it sees is a real
// conflicting grant.
#include "lock_manager.h"
#include "print_policies.h"

#include <gtest/gtest.h>

#include <atomic>
#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace minidb;

namespace {

class ShadowChecker {
 public:
  // Returns false if (txn, row, mode) conflicts with what other txns hold.
  bool on_grant(uint64_t txn, uint64_t row, LockMode mode) {
    std::lock_guard<std::mutex> g(mu_);
    Holders &h = rows_[row];
    for (const auto &kv : h)
      if (kv.first != txn && (kv.second == LockMode::Exclusive || mode == LockMode::Exclusive)) {
        ++conflicts_;
        return false;
      }
    auto it = h.find(txn);
    if (it == h.end() || mode == LockMode::Exclusive) h[txn] = mode;
    return true;
  }
  void on_release_all(uint64_t txn) {
    std::lock_guard<std::mutex> g(mu_);
    for (auto &kv : rows_) kv.second.erase(txn);
  }
  uint64_t conflicts() const {
    std::lock_guard<std::mutex> g(mu_);
    return conflicts_;
  }

 private:
  using Holders = std::map<uint64_t, LockMode>;  // txn -> strongest mode held
  mutable std::mutex mu_;
  std::map<uint64_t, Holders> rows_;
  uint64_t conflicts_ = 0;
};

struct StressResult {
  uint64_t committed = 0, deadlocks = 0, timeouts = 0, conflicts = 0, attempts = 0;
};

// `sorted`: every txn locks rows in ascending order, so no deadlock can exist.
StressResult stress(GrantPolicy policy, bool sorted, int threads, int txns_per_thread) {
  LockManagerOptions opts;
  opts.policy = policy;
  // A lost wake-up surfaces as a timeout; 3 s is far beyond any real wait in
  // this test, where locks are held for a few yields. The first timeout stops
  // every thread, so a lost wake-up fails the test in seconds, not minutes.
  opts.wait_timeout = std::chrono::milliseconds(3000);
  LockManager lm(opts);
  ShadowChecker shadow;
  std::atomic<uint64_t> next_txn{1}, committed{0}, attempts{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(1234 + t);
      for (int i = 0; i < txns_per_thread && !stop.load(); ++i) {
        int64_t age = static_cast<int64_t>(rng() % 1000000);  // mixed ages for VATS
        int nrows = 1 + static_cast<int>(rng() % 5);
        std::vector<std::pair<uint64_t, LockMode>> want;
        for (int k = 0; k < nrows; ++k)
          want.emplace_back(rng() % 6, rng() % 3 == 0 ? LockMode::Shared : LockMode::Exclusive);
        if (sorted) {
          // One request per row, in row order: no cycle (not even an S->X
          // upgrade race) is possible.
          std::sort(want.begin(), want.end(), [](const auto &a, const auto &b) {
            return a.first < b.first || (a.first == b.first && a.second > b.second);
          });
          want.erase(std::unique(want.begin(), want.end(),
                                 [](const auto &a, const auto &b) { return a.first == b.first; }),
                     want.end());
        }
        while (!stop.load()) {  // retry after a deadlock abort, as the engine does
          attempts.fetch_add(1);
          uint64_t txn = next_txn.fetch_add(1);
          bool ok = true;
          for (const auto &w : want) {
            LockResult res = lm.acquire(txn, age, w.first, w.second);
            if (res == LockResult::Timeout) stop.store(true);
            if (res != LockResult::Granted) {
              ok = false;
              break;
            }
            shadow.on_grant(txn, w.first, w.second);
            std::this_thread::yield();  // hold locks a little: more overlap
          }
          shadow.on_release_all(txn);
          lm.release_all(txn);
          if (ok) {
            committed.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  for (auto &w : workers) w.join();
  StressResult r;
  LockStats s = lm.stats();
  r.committed = committed;
  r.attempts = attempts;
  r.deadlocks = s.deadlocks;
  r.timeouts = s.timeouts;
  r.conflicts = shadow.conflicts();
  for (uint64_t row = 0; row < 6; ++row) EXPECT_EQ(lm.waiting_count(row), 0u) << "row " << row;
  return r;
}

class PolicyTest : public ::testing::TestWithParam<GrantPolicy> {};

TEST_P(PolicyTest, StressNeverGrantsConflictingLocksAndEveryRequestEnds) {
  const int threads = 8, per_thread = 200;
  StressResult r = stress(GetParam(), /*sorted=*/false, threads, per_thread);
  EXPECT_EQ(r.conflicts, 0u);
  EXPECT_EQ(r.timeouts, 0u) << "a request neither granted nor refused: lost wake-up";
  EXPECT_EQ(r.committed, static_cast<uint64_t>(threads * per_thread));
  // Every failed attempt was a detected deadlock, and each was resolved.
  EXPECT_EQ(r.attempts - r.committed, r.deadlocks);
}

// Regression: a granted waiter stayed in the wait-for map until its thread
// woke, so the deadlock search reported cycles that did not exist (most waits
// in the contended bench ended as "deadlocks").
TEST_P(PolicyTest, NoDeadlockReportedWhenRowsAreLockedInOrder) {
  StressResult r = stress(GetParam(), /*sorted=*/true, 8, 200);
  EXPECT_EQ(r.conflicts, 0u);
  EXPECT_EQ(r.timeouts, 0u);
  EXPECT_EQ(r.deadlocks, 0u);
  EXPECT_EQ(r.committed, 8u * 200u);
}

INSTANTIATE_TEST_SUITE_P(Policies, PolicyTest,
                         ::testing::Values(GrantPolicy::FCFS, GrantPolicy::VATS),
                         [](const auto &info) { return std::string(grant_policy_name(info.param)); });

// Waits (polling, no time assertion) until `row` has `n` waiting requests.
void wait_for_waiters(const LockManager &lm, uint64_t row, size_t n) {
  while (lm.waiting_count(row) != n) std::this_thread::yield();
}

// Holder H has X on row 7; three waiters queue with the given ages in arrival
// order, each X. Returns the order in which they were granted.
std::vector<std::string> grant_order(GrantPolicy policy) {
  LockManager lm(LockManagerOptions{policy, std::chrono::milliseconds(60000)});
  const uint64_t row = 7;
  EXPECT_EQ(lm.acquire(1, 0, row, LockMode::Exclusive), LockResult::Granted);
  std::mutex mu;
  std::vector<std::string> order;
  struct W {
    const char *name;
    uint64_t txn;
    int64_t age;
  };
  std::vector<W> waiters = {{"young", 2, 300}, {"middle", 3, 200}, {"eldest", 4, 100}};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < waiters.size(); ++i) {
    W w = waiters[i];
    threads.emplace_back([&, w] {
      EXPECT_EQ(lm.acquire(w.txn, w.age, row, LockMode::Exclusive), LockResult::Granted);
      {
        std::lock_guard<std::mutex> g(mu);
        order.push_back(w.name);
      }
      lm.release_all(w.txn);  // exclusive: the next grant happens only now
    });
    wait_for_waiters(lm, row, i + 1);  // arrival order is fixed
  }
  lm.release_all(1);
  for (auto &t : threads) t.join();
  return order;
}

TEST(LockManagerTest, VatsGrantsTheEldestTransactionFirst) {
  EXPECT_EQ(grant_order(GrantPolicy::VATS),
            (std::vector<std::string>{"eldest", "middle", "young"}));
}

TEST(LockManagerTest, FcfsGrantsInArrivalOrder) {
  EXPECT_EQ(grant_order(GrantPolicy::FCFS),
            (std::vector<std::string>{"young", "middle", "eldest"}));
}

// VATS batching: on one release, S(age 100) and S(age 110) are granted
// together; X(age 150) conflicts with them and waits, and S(age 200) must not
// overtake that elder conflicting request.
TEST(LockManagerTest, VatsBatchesCompatibleRequestsWithoutOvertakingConflicts) {
  LockManager lm(LockManagerOptions{GrantPolicy::VATS, std::chrono::milliseconds(60000)});
  const uint64_t row = 3;
  ASSERT_EQ(lm.acquire(1, 0, row, LockMode::Exclusive), LockResult::Granted);
  std::atomic<int> granted{0};
  std::atomic<bool> release{false};
  auto waiter = [&](uint64_t txn, int64_t age, LockMode mode) {
    return std::thread([&, txn, age, mode] {
      EXPECT_EQ(lm.acquire(txn, age, row, mode), LockResult::Granted);
      granted.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
      lm.release_all(txn);
    });
  };
  std::thread a = waiter(2, 100, LockMode::Shared);
  wait_for_waiters(lm, row, 1);
  std::thread b = waiter(3, 110, LockMode::Shared);
  wait_for_waiters(lm, row, 2);
  std::thread c = waiter(4, 150, LockMode::Exclusive);
  wait_for_waiters(lm, row, 3);
  std::thread d = waiter(5, 200, LockMode::Shared);
  wait_for_waiters(lm, row, 4);
  lm.release_all(1);
  // Both elder S requests are granted in the same pass; X(150) and S(200)
  // stay waiting while they hold.
  while (granted.load() < 2) std::this_thread::yield();
  EXPECT_EQ(lm.waiting_count(row), 2u);
  EXPECT_EQ(granted.load(), 2);
  release.store(true);
  a.join(), b.join(), c.join(), d.join();
  EXPECT_EQ(granted.load(), 4);
}

TEST(LockManagerTest, FcfsSharedRequestDoesNotOvertakeAWaitingWriter) {
  LockManager lm(LockManagerOptions{GrantPolicy::FCFS, std::chrono::milliseconds(60000)});
  ASSERT_EQ(lm.acquire(1, 0, 9, LockMode::Shared), LockResult::Granted);
  std::thread writer([&] {
    EXPECT_EQ(lm.acquire(2, 0, 9, LockMode::Exclusive), LockResult::Granted);
    lm.release_all(2);
  });
  wait_for_waiters(lm, 9, 1);
  std::atomic<bool> reader_granted{false};
  std::thread reader([&] {
    EXPECT_EQ(lm.acquire(3, 0, 9, LockMode::Shared), LockResult::Granted);
    reader_granted.store(true);
    lm.release_all(3);
  });
  wait_for_waiters(lm, 9, 2);  // the reader queues behind the writer
  EXPECT_FALSE(reader_granted.load());
  lm.release_all(1);
  writer.join();
  reader.join();
  EXPECT_TRUE(reader_granted.load());
}

TEST(LockManagerTest, DeadlockIsDetectedAndResolvedByAbortingTheRequester) {
  for (GrantPolicy p : {GrantPolicy::FCFS, GrantPolicy::VATS}) {
    LockManager lm(LockManagerOptions{p, std::chrono::milliseconds(60000)});
    ASSERT_EQ(lm.acquire(1, 10, 100, LockMode::Exclusive), LockResult::Granted);
    ASSERT_EQ(lm.acquire(2, 20, 200, LockMode::Exclusive), LockResult::Granted);
    LockResult first = LockResult::Timeout;
    std::thread t1([&] { first = lm.acquire(1, 10, 200, LockMode::Exclusive); });
    wait_for_waiters(lm, 200, 1);
    // Txn 2 closes the cycle 2 -> 1 -> 2: refused at once, not after a timeout.
    EXPECT_EQ(lm.acquire(2, 20, 100, LockMode::Exclusive), LockResult::Deadlock);
    lm.release_all(2);  // the victim aborts
    t1.join();
    EXPECT_EQ(first, LockResult::Granted);
    EXPECT_EQ(lm.stats().deadlocks, 1u);
    EXPECT_EQ(lm.stats().timeouts, 0u);
    lm.release_all(1);
  }
}

// When the transaction that closes the cycle is the elder, the younger waiter
// is the victim: its pending acquire returns Deadlock and the elder proceeds.
TEST(LockManagerTest, DeadlockVictimIsTheYoungestEvenIfItIsAlreadyWaiting) {
  for (GrantPolicy p : {GrantPolicy::FCFS, GrantPolicy::VATS}) {
    LockManager lm(LockManagerOptions{p, std::chrono::milliseconds(60000)});
    ASSERT_EQ(lm.acquire(1, 10, 100, LockMode::Exclusive), LockResult::Granted);  // elder
    ASSERT_EQ(lm.acquire(2, 20, 200, LockMode::Exclusive), LockResult::Granted);  // younger
    LockResult young = LockResult::Granted;
    std::thread t2([&] {
      young = lm.acquire(2, 20, 100, LockMode::Exclusive);
      lm.release_all(2);  // the victim aborts
    });
    wait_for_waiters(lm, 100, 1);
    EXPECT_EQ(lm.acquire(1, 10, 200, LockMode::Exclusive), LockResult::Granted);
    t2.join();
    EXPECT_EQ(young, LockResult::Deadlock);
    EXPECT_EQ(lm.stats().deadlocks, 1u);
    lm.release_all(1);
    EXPECT_EQ(lm.waiting_count(100), 0u);
  }
}

TEST(LockManagerTest, UpgradeFromSharedToExclusiveBlocksOtherReaders) {
  LockManager lm(LockManagerOptions{GrantPolicy::FCFS, std::chrono::milliseconds(60000)});
  ASSERT_EQ(lm.acquire(1, 0, 5, LockMode::Shared), LockResult::Granted);
  ASSERT_EQ(lm.acquire(1, 0, 5, LockMode::Exclusive), LockResult::Granted);
  ASSERT_EQ(lm.acquire(1, 0, 5, LockMode::Shared), LockResult::Granted);  // covered by X
  std::atomic<bool> granted{false};
  std::thread reader([&] {
    EXPECT_EQ(lm.acquire(2, 0, 5, LockMode::Shared), LockResult::Granted);
    granted.store(true);
    lm.release_all(2);
  });
  wait_for_waiters(lm, 5, 1);
  EXPECT_FALSE(granted.load());
  lm.release_all(1);
  reader.join();
  EXPECT_TRUE(granted.load());
}

TEST(LockManagerTest, TimeoutRemovesTheRequestAndCountsIt) {
  LockManager lm(LockManagerOptions{GrantPolicy::FCFS, std::chrono::milliseconds(20)});
  ASSERT_EQ(lm.acquire(1, 0, 1, LockMode::Exclusive), LockResult::Granted);
  EXPECT_EQ(lm.acquire(2, 0, 1, LockMode::Shared), LockResult::Timeout);
  EXPECT_EQ(lm.waiting_count(1), 0u);
  EXPECT_EQ(lm.stats().timeouts, 1u);
  lm.release_all(2);
  lm.release_all(1);
  EXPECT_EQ(lm.acquire(3, 0, 1, LockMode::Exclusive), LockResult::Granted);
}

}  // namespace
