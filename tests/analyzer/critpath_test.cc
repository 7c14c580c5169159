// Critical path and tiling (docs/method.md, "The critical path") on hand-built
// traces; every expected number is worked out in the comment above it.
#include <random>

#include <gtest/gtest.h>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using analyzer::compute_critical_paths;
using analyzer::StackTrie;
using analyzer::kHeldFunction;
constexpr auto Fn = FrameKind::Function;
constexpr auto Site = FrameKind::Site;

TEST(CriticalPath, OneThreadTilesBodySitesAndOutside) {
  // F(1) from 5 to 35; inside, site 1 calls G(2) over [10, 20).
  TraceBuilder tb;
  tb.thread(1).begin(0, 9).enter(5, 1).call(10, 20, 1, 2).exit(35, 1).end(40, 9);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(cp.rows[0].latency_ns, 40);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 10);                 // [0,5) + [35,40)
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 20);       // body of F
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 10);  // G through site 1
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(CriticalPath, LeafTimesOf2To32NsOrMoreSpanSeveralCells) {
  // A cell holds under 2^32 ns (4.3 s): F's body of 10 s + 5 ns = 2 (2^32 - 1)
  // + 1 410 065 415 ns takes three cells, and everything still sums exactly.
  constexpr int64_t kS = 1'000'000'000;
  TraceBuilder tb;
  tb.thread(1).begin(0, 9).enter(5, 1).call(10 * kS + 5, 10 * kS + 25, 1, 2).exit(10 * kS + 30, 1)
      .end(10 * kS + 40, 9);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  const uint32_t f = node_of(tl.trie, {{Fn, 1}});
  EXPECT_EQ(leaf_ns(cp, 0, f), 10 * kS + 5);  // [5, 10 s + 5) + [10 s + 25, 10 s + 30)
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 20);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 15);
  size_t f_cells = 0;
  for (auto *c = cp.row_begin(0); c != cp.row_end(0); ++c) f_cells += c->node == f;
  EXPECT_EQ(f_cells, 3u);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(CriticalPath, QueueHandoffAndCondvarWakeGoThroughTheWorker) {
  // A begins interval 1 in F(1), enqueues task 0x100 at 10, waits on a
  // condvar from 12 (site 2) and is woken at 50 by B, which released at 45.
  // B dequeues the task at 20, joins at 22, runs G(2) over [22, 46).
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).enqueue(10, 0x100).site(12, 2).wait(12, 0xc0)
      .wait_end(50, 0xc0, 2, 45).site_end(52, 2).exit(55, 1).end(60, 1);
  tb.thread(2).dequeue(20, 0x100).join(22, 1).enter(22, 2).release(45, 0xc0).exit(46, 2)
      .leave(47);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  // Walk back from 60: A outside [55,60)=5, F body [52,55)=3, site 2 [50,52)=2
  // and the wake-up latency [45,50)=5; on B: G [22,45)=23, B dispatching
  // between dequeue and join [20,22)=2 (outside); queue wait from A's wait
  // start (the waker's cover ends there) [12,20)=8; then A's F body [0,12)=12.
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 5 + 2);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 3 + 12);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 2}})), 2 + 5);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 2}})), 23);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kQueue), 8);
  EXPECT_EQ(cp.counters.wake_edges_followed, 1u);
  EXPECT_EQ(cp.counters.created_by_edges_followed, 1u);
  EXPECT_TRUE(cp.blame.empty());
}

// Redis's event loop (docs/case-studies/redis.md): a command processed, its
// reply queued for the loop's reply phase, and the loop meanwhile runs the
// next command, which stalls. The queue wait is tiled by what the loop ran
// (the stall), as a lock's wait by its holder, where it was a leaf: 85.1% of
// Var(latency) in (queue wait), not named by the planted stall.
TEST(CriticalPath, AQueueWaitIsTiledByWhatItsConsumerRanMeanwhile) {
  // One thread. Interval 1: F(1) over [0, 10), enqueues 0x100 at 10, leaves.
  // Interval 2: begins at 10, H(3) stalls over [10, 40), ends at 40. For
  // none, the loop runs its cron C(4) over [41, 44). It dequeues 0x100 at
  // 45, joins 1 at 46, ends it at 50.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).exit(10, 1).enqueue(10, 0x100).leave(10)
      .begin(10, 2).enter(10, 3).exit(40, 3).end(40, 2).enter(41, 4).exit(44, 4)
      .dequeue(45, 0x100).join(46, 1).end(50, 1);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 2u);
  const size_t r = cp.rows[0].id == 1 ? 0 : 1;
  // Back from 50: (outside) [46, 50) = 4, the dispatch [45, 46) = 1; the
  // queue [10, 45): the loop in H for interval 2 over [10, 40) = 30, in C
  // for none [41, 44) = 3, both held; in no frame for none [40, 41) and
  // [44, 45) = 2, the queue's own (a pool's dispatch). Then F [0, 10) = 10.
  EXPECT_EQ(leaf_ns(cp, r, StackTrie::kRoot), 4 + 1);
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}})), 10);
  EXPECT_EQ(leaf_ns(cp, r, StackTrie::kQueue), 2);
  EXPECT_EQ(leaf_ns(cp, r, tl.trie.find(StackTrie::kQueue, FrameKind::Held, 3 | kHeldFunction)), 30);
  EXPECT_EQ(leaf_ns(cp, r, tl.trie.find(StackTrie::kQueue, FrameKind::Held, 4 | kHeldFunction)), 3);
  EXPECT_EQ(tl.trie.find(StackTrie::kQueue, FrameKind::Held, 0), -1) << "no held by (outside)";
  EXPECT_EQ(leaf_ns(cp, 1 - r, node_of(tl.trie, {{Fn, 3}})), 30);  // the stall is 2's own
  EXPECT_EQ(cp.counters.created_by_edges_followed, 1u);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

// A consumer that worked for the waiting interval itself meanwhile, ran for
// none outside instrumented code, or has no record yet, leaves that part the
// queue's own.
TEST(CriticalPath, AQueueWaitIsItsOwnWhereTheConsumerWorkedForItOrIsNotRecorded) {
  // A (interval 1) enqueues 0x100 at 10 and 0x200 at 12, then leaves. B's
  // first record: it dequeues 0x100 at 20 and works for 1 over [21, 30) in
  // G(2), leaves at 30, runs H(3) for none over [30, 36), dequeues 0x200 at
  // 36, joins 1 at 37, ends it at 40.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).enqueue(10, 0x100).enqueue(12, 0x200).exit(12, 1).leave(12);
  tb.thread(2).dequeue(20, 0x100).join(21, 1).enter(21, 2).exit(30, 2).leave(30).enter(30, 3).exit(36, 3)
      .dequeue(36, 0x200).join(37, 1).end(40, 1);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  // Back from 40 on B: (outside) [37, 40) = 3, dispatch [36, 37) = 1; the
  // queue of 0x200 [12, 36): B in H for none [30, 36) = 6 held; B working
  // for 1 [21, 30) = 9, its own; B in no frame for none [20, 21) = 1 (it
  // dispatched 0x100), its own; before B's first record [12, 20) = 8, its
  // own. Then A: F [0, 12) = 12.
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 3 + 1);
  EXPECT_EQ(leaf_ns(cp, 0, tl.trie.find(StackTrie::kQueue, FrameKind::Held, 3 | kHeldFunction)), 6);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kQueue), 9 + 1 + 8);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 12);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(CriticalPath, LockHolderWorkingForAnotherIntervalIsBlamed) {
  // A (interval 1) waits for a lock at site 1 in F over [10,30); the lock was
  // released at 28 by B, working for interval 2 inside H(3).
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10).wait_end(30, 0x10, 2, 28)
      .site_end(31, 1).exit(40, 1).end(40, 1);
  tb.thread(2).begin(0, 2).enter(0, 3).release(28, 0x10).exit(35, 3).end(35, 2);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 2u);
  size_t r = cp.rows[0].id == 1 ? 0 : 1;
  // The whole wait [10,31) stays under the lock call site: the blocked
  // stretch [10,28) in the Held part of where B was (H's body), the wake-up
  // [28,30) and the rest of the call [30,31) the site's own; F body 10 + 9.
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 3);
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {FrameKind::Held, 3 | kHeldFunction}})),
            18);
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}})), 19);
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 3}})), 0);  // H is not on 1's path
  ASSERT_EQ(cp.blame.size(), 1u);
  EXPECT_EQ(cp.blame[0].waker_tid, 2u);
  EXPECT_EQ(cp.blame[0].waker_label, 2u);
  EXPECT_EQ(cp.blame[0].waker_node, node_of(tl.trie, {{Fn, 3}}));
  EXPECT_EQ(cp.blame[0].wait_node, node_of(tl.trie, {{Fn, 1}, {Site, 1}}));
  EXPECT_EQ(cp.blame[0].ns, 20);
  EXPECT_EQ(cp.counters.wake_edges_followed, 0u);
}

// Found on PostgreSQL, recording in full with 4 clients (1 116 of each in 56 137
// intervals): an LWLock's acquire (0x10) waits on its semaphore (0x20) inside
// it. The blocked stretch is [10,30), ended by the semaphore's end, whose
// waker B released at 28; the LWLock's own end at 33 closes nothing and is no
// "wait's end with no wait open" (before: one a nested wait).
TEST(CriticalPath, ANestedWaitsOuterEndIsNotUnmatched) {
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10).wait(12, 0x20).wait_end(30, 0x20, 2, 28)
      .wait_end(33, 0x10, 2, 27).site_end(34, 1).exit(40, 1).end(40, 1);
  tb.thread(2).begin(0, 2).enter(0, 3).release(27, 0x10).release(28, 0x20).exit(35, 3).end(35, 2);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 2u);
  EXPECT_EQ(tl.merge.nested_waits, 1u);
  EXPECT_EQ(tl.merge.unmatched_wait_ends, 0u);
  size_t r = cp.rows[0].id == 1 ? 0 : 1;
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {FrameKind::Held, 3 | kHeldFunction}})),
            18);  // [10,28)
  ASSERT_EQ(cp.blame.size(), 1u);
  EXPECT_EQ(cp.blame[0].waker_tid, 2u);
  EXPECT_EQ(cp.blame[0].ns, 20);  // [10,30)
}

TEST(CriticalPath, WakerOnlyPartlyForTheIntervalHandsTheRestBack) {
  // A (interval 1) waits [10,50) woken by B (released 40). B joined 1 only at
  // 30, so B covers [30,40) and [10,30) stays with A's wait site; no queue edge.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).site(10, 1).wait(10, 0x1).wait_end(50, 0x1, 2, 40).site_end(50, 1)
      .end(50, 1);
  tb.thread(2).enter(0, 4).join(30, 1).release(40, 0x1).leave(41).exit(45, 4);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Site, 1}})), 20 + 10);  // [10,30) + [40,50)
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 4}})), 10);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 10);
  EXPECT_EQ(cp.counters.path_gaps, 0u);
}

TEST(CriticalPath, RecursionNestsAndStillTiles) {
  // F(1) calls itself through site 1 twice deep: [0,30) ⊃ [5,25) ⊃ [10,20).
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).site(5, 1).enter(5, 1).site(10, 1).enter(10, 1)
      .exit(20, 1).site_end(20, 1).exit(25, 1).site_end(25, 1).exit(30, 1).end(30, 1);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 10);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 10);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Site, 1}})), 10);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(CriticalPath, BrokenDataIsCountedNeverFatal) {
  TraceBuilder tb;
  // Missing exit: G(2)'s exit is lost (longjmp); F's exit at 30 closes both.
  tb.thread(1).begin(0, 1).enter(0, 1).enter(10, 2).exit(30, 1).exit(31, 7).end(40, 1);
  // Never ended, and an end without a begin.
  tb.thread(2).begin(0, 2).enter(1, 1).end(5, 99);
  // Dropped records: thread 3's data after 50 is lost; interval 3 ends at 60
  // after the thread worked for it past the drop point.
  tb.thread(3).begin(40, 3).drop(50, 17).end(60, 3);
  auto t = tb.build();
  auto tl = analyzer::compute_critical_paths(t);
  const auto &cp = tl.paths;
  EXPECT_EQ(tl.merge.missing_exits, 1u);
  EXPECT_EQ(tl.merge.exits_without_enter, 1u);
  EXPECT_EQ(tl.merge.unclosed_frames, 1u);   // thread 2's F
  EXPECT_EQ(cp.counters.incomplete_intervals, 2u);  // 2 never ended, 99 never begun
  EXPECT_EQ(tl.merge.end_without_begin, 1u);
  EXPECT_EQ(cp.counters.lossy_intervals, 1u);
  EXPECT_EQ(t.dropped_records, 17u);
  ASSERT_EQ(cp.rows.size(), 1u);  // only interval 1 is sound
  EXPECT_EQ(cp.rows[0].id, 1u);
  // G keeps [10,30) although its exit never came; F body [0,10).
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Fn, 2}})), 20);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 10);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 10);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(CriticalPath, UnexplainedStartIsUntracked) {
  // Begun on A at 0, ended on B at 30; B joined at 10 and nothing links them.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).leave(5);
  tb.thread(2).join(10, 1).end(30, 1);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kUntracked), 10);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 20);
  EXPECT_EQ(cp.counters.path_gaps, 1u);
}

TEST(CriticalPath, ParallelWalkMatchesSerial) {
  TraceBuilder tb;
  for (int i = 0; i < 50; ++i) {
    int64_t b = i * 100;
    tb.thread(1 + i % 3).begin(b, i + 1).enter(b + 1, 1).call(b + 2, b + 2 + i, 1, 2)
        .exit(b + 60 + i % 7, 1).end(b + 70, i + 1);
  }
  trace::Trace t = tb.build();
  auto one = compute_critical_paths(t);
  analyzer::PathOptions two;
  two.threads = 2;
  auto par = compute_critical_paths(t, two);
  ASSERT_EQ(one.paths.rows.size(), 50u);
  expect_same(one, par);
}

}  // namespace
}  // namespace vprof::testing

namespace vprof::testing {
namespace {

// Random records of every kind, ids, tids and times that collide. With
// `within_wait` a waker's release lies inside the wait, as the runtime records
// it; otherwise anywhere near it (the merge must cope either way).
trace::Trace random_garbage(uint32_t seed, bool within_wait) {
  using K = trace::Kind;
  const K kinds[] = {K::FuncEnter, K::FuncExit, K::SiteBegin, K::SiteEnd, K::IntervalBegin,
                     K::IntervalEnd, K::IntervalJoin, K::IntervalLeave, K::WaitBegin, K::WaitEnd,
                     K::Release, K::TaskEnqueue, K::TaskDequeue};
  std::mt19937 rng(seed);
  auto u = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  trace::Trace t;
  int nthreads = u(1, 4);
  for (int th = 0; th < nthreads; ++th) {
    trace::ThreadStream s;
    s.tid = uint32_t(th + 1);
    int64_t now = u(0, 5);
    for (int i = u(0, 120); i > 0; --i) {
      trace::Event e;
      now += u(0, 3);  // many records share a timestamp
      e.ts = now;
      e.kind = kinds[u(0, 12)];
      e.arg = uint64_t(u(1, 4));
      if (e.kind == K::WaitEnd && u(0, 1)) {
        e.waker_tid = uint32_t(u(0, 5));
        e.release_ts = within_wait ? now - u(0, 3) : now - u(-3, 30);
      }
      s.events.push_back(e);
    }
    if (!within_wait && u(0, 5) == 0 && !s.events.empty())
      s.drop_begin_ts = s.events[s.events.size() / 2].ts;
    t.threads.push_back(std::move(s));
  }
  return t;
}

TEST(CriticalPath, RandomGarbageNeverCrashesAndAlwaysTiles) {
  // The merge repairs or counts what is broken, and every interval it keeps
  // still tiles.
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    trace::Trace t = random_garbage(seed, false);
    auto tl = analyzer::compute_critical_paths(t);
    const auto &cp = tl.paths;
    EXPECT_EQ(cp.counters.tiling_violations, 0u) << "seed " << seed;
    for (size_t r = 0; r < cp.rows.size(); ++r) {
      double sum = 0;
      for (auto *c = cp.row_begin(r); c != cp.row_end(r); ++c) sum += c->ns;
      ASSERT_EQ(sum, double(cp.rows[r].latency_ns)) << "seed " << seed;
    }
  }
}

TEST(CriticalPath, SameInstantCreatedByCycleTerminates) {
  // A and B each dequeue at t=10 a task the other enqueued at t=10 while
  // working for interval 1, and both take it up at 10: the edges form a
  // cycle at one instant. The walk must stop and leave the rest untracked.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).leave(5).dequeue(10, 0xb).join(10, 1).enqueue(10, 0xa).end(20, 1);
  tb.thread(2).leave(0).dequeue(10, 0xa).join(10, 1).enqueue(10, 0xb).leave(15);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kUntracked), 10);  // [0,10): the cycle explains nothing
  EXPECT_EQ(cp.counters.path_gaps, 1u);
}

}  // namespace
}  // namespace vprof::testing

namespace vprof::testing {
namespace {

// 40 intervals on three request threads sharing functions, sites and a
// lock, each handing a task to one of two workers that wakes it: one begins
// every `spacing` ns.
trace::Trace shared_work(int64_t spacing) {
  TraceBuilder tb;
  for (int i = 0; i < 40; ++i) {
    int64_t b = i * spacing;
    uint32_t a = 1 + i % 3, w = 4 + i % 2;
    tb.thread(a).begin(b, i + 1).enter(b, 1 + i % 2).call(b + 1, b + 5 + i % 4, 1 + i % 3, 3)
        .enqueue(b + 10, 0x100 + i).site(b + 11, 9).wait(b + 11, 0x9)
        .wait_end(b + 60, 0x9, w + 0, b + 55).site_end(b + 60, 9).exit(b + 61, 1 + i % 2)
        .end(b + 62, i + 1);
    tb.thread(w).dequeue(b + 20, 0x100 + i).join(b + 21, i + 1).enter(b + 21, 7 + i % 2)
        .release(b + 55, 0x9).exit(b + 56, 7 + i % 2).leave(b + 57);
  }
  return tb.build();
}

TEST(Merge, ParallelBuildIsTheSameAsSerial) {
  // Several threads sharing functions, sites, intervals and tasks: node ids,
  // segments, intervals and edges must not depend on the worker count.
  trace::Trace t = shared_work(100);
  analyzer::PathOptions serial, parallel;
  parallel.threads = 2;
  auto one = analyzer::compute_critical_paths(t, serial);
  auto two = analyzer::compute_critical_paths(t, parallel);
  expect_same(one, two);
  ASSERT_EQ(one.paths.rows.size(), 40u);
  EXPECT_EQ(one.paths.counters.created_by_edges_followed, 40u);
  EXPECT_EQ(one.paths.counters.wake_edges_followed, 40u);
}

}  // namespace
}  // namespace vprof::testing

namespace vprof::testing {
namespace {

// The merge streams in epochs (merge/timeline.h, I5): any epoch size, down to
// one record per thread, and any worker count must give the result of one
// epoch holding the whole trace.
TEST(Merge, EpochSizeDoesNotChangeTheResult) {
  trace::Trace t = shared_work(50);  // overlapping: each lasts 62 ns
  analyzer::PathOptions whole;
  whole.epoch_records = size_t{1} << 30;
  auto ref = analyzer::compute_critical_paths(t, whole);
  EXPECT_EQ(ref.merge_stats.epochs, 1u);
  ASSERT_GT(ref.paths.rows.size(), 0u);
  for (size_t e : {1, 2, 3, 7, 64}) {
    for (unsigned threads : {1u, 2u}) {
      analyzer::PathOptions o;
      o.epoch_records = e;
      o.threads = threads;
      auto got = analyzer::compute_critical_paths(t, o);
      SCOPED_TRACE(::testing::Message() << "epoch_records=" << e << " threads=" << threads);
      EXPECT_GT(got.merge_stats.epochs, 1u);
      expect_same(ref, got);
    }
  }
}

TEST(Merge, EpochSizeDoesNotChangeRandomGarbage) {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    trace::Trace t = random_garbage(seed, true);
    analyzer::PathOptions whole;
    whole.epoch_records = size_t{1} << 30;
    auto ref = analyzer::compute_critical_paths(t, whole);
    for (size_t e : {1, 5}) {
      analyzer::PathOptions o;
      o.epoch_records = e;
      auto got = analyzer::compute_critical_paths(t, o);
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " epoch_records=" << e);
      expect_same(ref, got);
    }
  }
}

}  // namespace
}  // namespace vprof::testing

namespace vprof::testing {
namespace {

TEST(Merge, AnIntervalThatNeverEndsIsAbandonedBeyondTheWindowLimit) {
  // Thread 1 begins interval 1000 and is killed; thread 2 serves 500 short
  // intervals after it. Unlimited, interval 1000 pins the whole window; with
  // a limit it is given up (counted) and the others are walked the same.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1000).enter(1, 5);
  for (int i = 0; i < 500; ++i) {
    int64_t b = 10 + i * 20;
    tb.thread(2).begin(b, i + 1).enter(b + 1, 1).call(b + 2, b + 8, 1, 2).exit(b + 15, 1).end(b + 16, i + 1);
  }
  trace::Trace t = tb.build();
  analyzer::PathOptions unlimited, limited;
  unlimited.epoch_records = limited.epoch_records = 16;
  limited.max_window = 64;
  auto all = analyzer::compute_critical_paths(t, unlimited);
  auto cut = analyzer::compute_critical_paths(t, limited);
  EXPECT_EQ(all.paths.counters.incomplete_intervals, 1u);
  EXPECT_EQ(all.paths.counters.abandoned_intervals, 0u);
  EXPECT_GT(all.merge_stats.peak_window_entries, 2000u);  // everything after its begin
  EXPECT_EQ(cut.paths.counters.incomplete_intervals, 0u);
  EXPECT_EQ(cut.paths.counters.abandoned_intervals, 1u);
  EXPECT_LT(cut.merge_stats.peak_window_entries, 200u);
  EXPECT_EQ(cut.paths.rows.size(), 500u);
  EXPECT_EQ(cut.paths.cells, all.paths.cells);
}


// Servers mark requests by a pointer to a pooled request
// object, reused for the next request once the last one ended. 4 threads of
// 3 000 intervals whose ids come from a pool of 5 addresses read as 12 000
// intervals, each with its own latency and tiling, not as 5 merged ones.
TEST(Merge, IdsReusedAfterTheirIntervalEndedAreNewIntervals) {
  TraceBuilder tb;
  const uint64_t pool[5] = {0x55d0c0a01040, 0x55d0c0a010a0, 0x55d0c0a01100, 0x55d0c0a01160,
                            0x55d0c0a011c0};
  int64_t total = 0;
  for (int th = 0; th < 4; ++th)
    for (int i = 0; i < 3000; ++i) {
      // Thread th uses pool[th] and pool[4] alternately; pool[4] is shared
      // but never live on two threads at once (each owns it in its slot of time).
      int64_t b = int64_t(i) * 100 + th * 25;
      uint64_t id = (i % 2) ? pool[th] : pool[4];
      int64_t len = 5 + (i * 7 + th) % 13;
      tb.thread(uint32_t(th + 1)).begin(b, id).enter(b + 1, 1).exit(b + len - 1, 1).end(b + len, id);
      total += len;
    }
  // A second begin while open (ambiguous: counted, ignored) and an end of an
  // id already ended (counted, ignored).
  tb.thread(9).begin(400000, 77).begin(400005, 77).end(400010, 77).end(400020, 77);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 12001u);
  int64_t sum = 0;
  for (const auto &r : cp.rows) sum += r.latency_ns;
  EXPECT_EQ(sum, total + 10);
  EXPECT_EQ(cp.counters.incomplete_intervals, 0u);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
  EXPECT_EQ(tl.merge.reused_ids, 12000u - 5u);
  EXPECT_EQ(tl.merge.duplicate_begins, 1u);
  EXPECT_EQ(tl.merge.duplicate_ends, 1u);
  // Every interval's time is its own thread's function body and outside.
  for (size_t r = 0; r < cp.rows.size(); ++r)
    ASSERT_EQ(leaf_ns(cp, r, StackTrie::kRoot) + leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}})),
              cp.rows[r].latency_ns)
        << "row " << r;
}

// An end whose begin came before the trace started, then the id reused: the
// first is counted as never begun, the second is an interval of its own.
TEST(Merge, AnEndWithoutBeginThenTheSameIdIsANewInterval) {
  TraceBuilder tb;
  tb.thread(1).end(5, 42).begin(10, 42).enter(11, 1).exit(19, 1).end(20, 42);
  auto tl = analyzer::compute_critical_paths(tb.build());
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  EXPECT_EQ(tl.paths.rows[0].latency_ns, 10);
  EXPECT_EQ(tl.merge.end_without_begin, 1u);
  EXPECT_EQ(tl.paths.counters.incomplete_intervals, 1u);
}

}  // namespace
}  // namespace vprof::testing
