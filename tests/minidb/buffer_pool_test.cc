#include "buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "print_policies.h"
#include "test_dir.h"

using namespace minidb;
using minidb_test::TempDir;

namespace {

BufferPoolOptions small_pool(const TempDir &dir, LruPolicy lru, size_t frames, uint64_t pages) {
  BufferPoolOptions o;
  o.data_file = dir.path() + "/data";
  o.num_pages = pages;
  o.frames = frames;
  o.page_size = 256;
  o.lru = lru;
  return o;
}

class LruParam : public ::testing::TestWithParam<LruPolicy> {};

TEST_P(LruParam, WritesSurviveEvictionAndReopen) {
  TempDir dir;
  std::string err;
  const uint64_t pages = 32;
  {
    auto pool = BufferPool::open(small_pool(dir, GetParam(), 4, pages), &err);
    ASSERT_TRUE(pool) << err;
    for (uint64_t p = 0; p < pages; ++p) {
      BufferPool::PageRef ref = pool->fetch(p);
      ref.write_slot(p % pool->slots_per_page(), static_cast<int64_t>(1000 + p));
    }
    // 4 frames for 32 pages: every page above was evicted (and written back)
    // at least once before this second pass reads it.
    for (uint64_t p = 0; p < pages; ++p)
      EXPECT_EQ(pool->fetch(p).read_slot(p % pool->slots_per_page()), static_cast<int64_t>(1000 + p));
    EXPECT_GE(pool->stats().writebacks, pages - 4);
  }
  auto again = BufferPool::open(small_pool(dir, GetParam(), 4, pages), &err);
  ASSERT_TRUE(again) << err;
  for (uint64_t p = 0; p < pages; ++p)
    EXPECT_EQ(again->fetch(p).read_slot(p % again->slots_per_page()), static_cast<int64_t>(1000 + p));
}

TEST_P(LruParam, ConcurrentIncrementsAreNotLost) {
  TempDir dir;
  std::string err;
  auto pool = BufferPool::open(small_pool(dir, GetParam(), 6, 40), &err);
  ASSERT_TRUE(pool) << err;
  const int threads = 4, ops = 3000;
  std::vector<std::vector<int64_t>> expected(threads, std::vector<int64_t>(40, 0));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < ops; ++i) {
        uint64_t page = rng() % 40;
        BufferPool::PageRef ref = pool->fetch(page);
        // Slot t of every page belongs to thread t, so no row lock is needed.
        ref.write_slot(t, ref.read_slot(t) + 1);
        ++expected[t][page];
      }
    });
  }
  for (auto &th : ts) th.join();
  for (int t = 0; t < threads; ++t)
    for (uint64_t p = 0; p < 40; ++p) EXPECT_EQ(pool->fetch(p).read_slot(t), expected[t][p]);
  BufferPoolStats s = pool->stats();
  EXPECT_EQ(s.hits + s.misses, static_cast<uint64_t>(threads * ops + threads * 40));
}

INSTANTIATE_TEST_SUITE_P(Lru, LruParam, ::testing::Values(LruPolicy::Eager, LruPolicy::Lazy),
                         [](const auto &info) { return std::string(lru_policy_name(info.param)); });

TEST(BufferPoolTest, EagerLruEvictsTheLeastRecentlyUsedPage) {
  TempDir dir;
  std::string err;
  auto pool = BufferPool::open(small_pool(dir, LruPolicy::Eager, 3, 10), &err);
  ASSERT_TRUE(pool) << err;
  pool->fetch(0);
  pool->fetch(1);
  pool->fetch(2);
  pool->fetch(0);  // hit: 0 becomes most recent
  EXPECT_EQ(pool->lru_order(), (std::vector<uint64_t>{0, 2, 1}));
  pool->fetch(3);  // evicts 1
  EXPECT_EQ(pool->lru_order(), (std::vector<uint64_t>{3, 0, 2}));
  EXPECT_EQ(pool->stats().misses, 4u);
  EXPECT_EQ(pool->stats().hits, 1u);
}

TEST(BufferPoolTest, LazyLruDefersWhenTheListIsBusyAndReplaysLater) {
  TempDir dir;
  std::string err;
  auto pool = BufferPool::open(small_pool(dir, LruPolicy::Lazy, 3, 10), &err);
  ASSERT_TRUE(pool) << err;
  pool->fetch(0);
  pool->fetch(1);
  pool->fetch(2);  // order 2, 1, 0
  // Another thread touches page 0 while the LRU mutex is held: it must not
  // wait, but put the move on its own backlog.
  std::thread worker;
  std::atomic<int> step{0};
  size_t backlog_after_defer = 0, backlog_after_replay = 0;
  {
    auto held = pool->hold_lru_mutex_for_testing();
    worker = std::thread([&] {
      pool->fetch(0);
      backlog_after_defer = pool->my_backlog_size();
      step.store(1);
      while (step.load() != 2) std::this_thread::yield();
      pool->fetch(1);  // gets the mutex: replays 0, then moves 1
      backlog_after_replay = pool->my_backlog_size();
    });
    while (step.load() != 1) std::this_thread::yield();
  }
  EXPECT_EQ(backlog_after_defer, 1u);
  EXPECT_EQ(pool->lru_order(), (std::vector<uint64_t>{2, 1, 0}));  // not moved yet
  step.store(2);
  worker.join();
  EXPECT_EQ(backlog_after_replay, 0u);
  EXPECT_EQ(pool->lru_order(), (std::vector<uint64_t>{1, 0, 2}));
  BufferPoolStats s = pool->stats();
  EXPECT_EQ(s.lazy_deferred, 1u);
  EXPECT_EQ(s.lazy_replayed, 1u);
  EXPECT_EQ(s.lazy_stale, 0u);
}

TEST(BufferPoolTest, LazyLruSkipsDeferredMovesOfEvictedPages) {
  TempDir dir;
  std::string err;
  auto pool = BufferPool::open(small_pool(dir, LruPolicy::Lazy, 3, 10), &err);
  ASSERT_TRUE(pool) << err;
  pool->fetch(0);
  pool->fetch(1);
  pool->fetch(2);  // order 2, 1, 0
  std::atomic<int> step{0};
  std::thread worker;
  {
    auto held = pool->hold_lru_mutex_for_testing();
    worker = std::thread([&] {
      pool->fetch(0);  // deferred
      step.store(1);
      while (step.load() != 2) std::this_thread::yield();
      pool->fetch(2);  // replays: page 0 is gone, so the move is skipped
    });
    while (step.load() != 1) std::this_thread::yield();
  }
  pool->fetch(3);  // 0 is still least recent: evicted
  step.store(2);
  worker.join();
  EXPECT_EQ(pool->lru_order(), (std::vector<uint64_t>{2, 3, 1}));
  EXPECT_EQ(pool->stats().lazy_stale, 1u);
  EXPECT_EQ(pool->stats().lazy_replayed, 0u);
}

}  // namespace
