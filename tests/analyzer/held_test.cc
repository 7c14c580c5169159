// Held parts (docs/method.md, "The critical path": blame): a wait whose waker
// worked for another interval keeps its time under the wait call site, tiled by
// where the waker was while the waiter waited. Worked by hand on built
// traces; then the ranking (analyze keeps the wait as the factor, diff and
// gate name the holder's code) and a planted regression in a lock holder.
#include <gtest/gtest.h>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/factors/causes.h"
#include "analyzer/diff/diff.h"
#include "analyzer/diff/gate.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/profile/profile.h"
#include "analyzer/report/preemption.h"
#include "analyzer/tree/merge_runs.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;
constexpr auto Fn = FrameKind::Function;
constexpr auto Site = FrameKind::Site;
constexpr auto Held = FrameKind::Held;

// The row of interval `id`.
size_t row_of(const CriticalPaths &cp, uint64_t id) {
  size_t r = 0;
  while (cp.rows[r].id != id) ++r;
  return r;
}

// ns of the Held leaf `id` under F(1)'s wait at site 1 in row r (0: none).
int64_t held_at_site1(const TracePaths &tl, size_t r, uint32_t id) {
  const int64_t n = node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, id}});
  return n < 0 ? 0 : int64_t(leaf_ns(tl.paths, r, uint32_t(n)));
}

TEST(Held, TheBlockedStretchIsTiledByWhereTheHolderWas) {
  // A (interval 1, tid 1) waits at site 1 in F(1) over [10,40), woken at 40
  // by B's release at 36. B (tid 2) works for interval 2 in H(3): H's body
  // [0,15), its call site 5 over [15,22), its body again until the release
  // at 36, then exits at 37.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10).wait_end(40, 0x10, 2, 36)
      .site_end(41, 1).exit(45, 1).end(45, 1);
  tb.thread(2).begin(0, 2).enter(0, 3).site(15, 5).site_end(22, 5).release(36, 0x10).exit(37, 3)
      .end(37, 2);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 2u);
  size_t r = cp.rows[0].id == 1 ? 0 : 1;
  // [10,36): H's body [10,15) + [22,36) = 19, site 5 [15,22) = 7; the site's
  // own: the wake-up [36,40) and [40,41) = 5; F's body 10 + 4.
  int64_t wait = node_of(tl.trie, {{Fn, 1}, {Site, 1}});
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, 3 | kHeldFunction}})), 19);
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, 5}})), 7);
  EXPECT_EQ(leaf_ns(cp, r, wait), 5);
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}})), 14);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
  // B's own interval is not touched by A's wait.
  EXPECT_EQ(leaf_ns(cp, 1 - r, node_of(tl.trie, {{Fn, 3}, {Site, 5}})), 7);
  ASSERT_EQ(cp.blame.size(), 1u);
  EXPECT_EQ(cp.blame[0].ns, 30);  // blame still counts the whole stretch
}

TEST(Held, ALockWaitIsTiledByEachThreadThatHeldTheLockInTurn) {
  // A (interval 1) waits for lock 0x10 at site 1 in F(1) over [10,60),
  // woken at 60 by C's release at 56. B (interval 2) held it in G(2)'s body
  // and released at 40 (recorded: A was waiting), then parsed at its site 6
  // over [41,70). C (interval 3) barged in at 41 and held it across its site
  // 7 over [45,55), releasing at 56. [10,40) was B's hold; [40,56) C's.
  for (bool recorded : {true, false}) {
    SCOPED_TRACE(recorded ? "releases recorded" : "a trace without them: the last releaser's");
    TraceBuilder tb;
    const uint8_t mutex = VPROF_SYNC_MUTEX;
    tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10, mutex).wait_end(60, 0x10, 3, 56)
        .site_end(61, 1).exit(65, 1).end(65, 1);
    auto &b = tb.thread(2).begin(0, 2).enter(0, 2);
    if (recorded) b.release(40, 0x10, mutex);
    b.site(41, 6).site_end(70, 6).exit(71, 2).end(71, 2);
    auto &c = tb.thread(3).begin(0, 3).enter(0, 3).site(45, 7).site_end(55, 7);
    if (recorded) c.release(56, 0x10, mutex);
    c.exit(57, 3).end(57, 3);
    auto tl = compute_critical_paths(tb.build());
    const auto &cp = tl.paths;
    const size_t r = row_of(cp, 1);
    auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
    if (recorded) {
      EXPECT_EQ(held(2 | kHeldFunction), 30) << "B held it over [10,40)";
      EXPECT_EQ(held(3 | kHeldFunction), 6) << "C's body over [40,45) and [55,56)";
      EXPECT_EQ(held(7), 10);
      EXPECT_EQ(held(6), 0) << "B's parsing came after its release";
      EXPECT_EQ(cp.counters.lock_turns_tiled, 1u);
    } else {
      EXPECT_EQ(held(3 | kHeldFunction), 36) << "C's body over [10,45) and [55,56)";
      EXPECT_EQ(held(7), 10);
      EXPECT_EQ(held(2 | kHeldFunction), 0);
      EXPECT_EQ(cp.counters.lock_turns_tiled, 0u);
    }
    EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 5) << "the wake-up and the call's rest";
    EXPECT_EQ(cp.counters.tiling_violations, 0u);
  }
}

// A (tid 1, interval 1) waits on condition 0x20 at site 1 in F(1) over
// [10,60), signalled at 30 by tid 2; the wait names its mutex 0x10 unless
// `named` is false (a trace written before version 11).
void signalled_waiter(TraceBuilder &tb, bool named = true) {
  auto &a = tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x20, VPROF_SYNC_CONDVAR);
  if (named) a.wait_mutex(10, 0x10);
  a.wait_end(60, 0x20, 2, 30).site_end(61, 1).exit(65, 1).end(65, 1);
}

TEST(Held, AConditionWaitTakingItsMutexBackIsTiledByTheMutexsHolders) {
  // A (interval 1) waits on condition 0x20 with mutex 0x10 at site 1 in
  // F(1) over [10,60). B (interval 2) signals at 30 in G(2)'s body and
  // unlocks the mutex at 33. C (interval 3) ran J(8) until 35, then entered
  // H(3), took the mutex without waiting, called its site 7 over [40,50),
  // and released at 56; A got the mutex back and returned at 60. Before the
  // signal A waited for B ([10,30): G's); after it, for the mutex: B's
  // [30,33), free [33,35) (A's own), C's H [35,40) and [50,56) and its
  // site 7; the wake-up [56,60) is A's own. A trace without the wait's
  // mutex (written before version 11) leaves [30,60) all A's own.
  for (bool named : {true, false}) {
    SCOPED_TRACE(named ? "the wait names its mutex" : "no WAIT_MUTEX");
    TraceBuilder tb;
    const uint8_t mutex = VPROF_SYNC_MUTEX;
    signalled_waiter(tb, named);
    tb.thread(2).begin(0, 2).enter(0, 2).release(30, 0x20, VPROF_SYNC_CONDVAR).release(33, 0x10, mutex)
        .site(34, 6).site_end(70, 6).exit(71, 2).end(71, 2);
    tb.thread(3).begin(0, 3).enter(0, 8).exit(35, 8).enter(35, 3).site(40, 7).site_end(50, 7)
        .release(56, 0x10, mutex).exit(57, 3).end(57, 3);
    auto tl = compute_critical_paths(tb.build());
    const auto &cp = tl.paths;
    const size_t r = row_of(cp, 1);
    auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
    const int64_t own = leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}}));
    if (named) {
      EXPECT_EQ(held(2 | kHeldFunction), 20 + 3) << "B before its signal, then until its unlock";
      EXPECT_EQ(held(3 | kHeldFunction), 11) << "C's H over [35,40) and [50,56)";
      EXPECT_EQ(held(7), 10);
      EXPECT_EQ(held(8 | kHeldFunction), 0) << "C's J came before it took the mutex";
      EXPECT_EQ(held(6), 0) << "B's site came after its unlock";
      EXPECT_EQ(own, 2 + 4 + 1) << "the mutex free, the wake-up, the call's rest";
      EXPECT_EQ(cp.counters.mutex_reacquires_tiled, 1u);
    } else {
      EXPECT_EQ(held(2 | kHeldFunction), 20);
      EXPECT_EQ(held(3 | kHeldFunction), 0);
      EXPECT_EQ(own, 30 + 1);
      EXPECT_EQ(cp.counters.mutex_reacquires_tiled, 0u);
    }
    EXPECT_EQ(cp.counters.tiling_violations, 0u);
  }
}

TEST(Held, AHolderBackFromAConditionWaitOfItsOwnHoldsTheMutexFromThatWaitsEnd) {
  // The shape above, but C (interval 3) had itself waited on condition 0x30
  // with the same mutex, at its site 9 in H(3) over [5,40): it took the
  // mutex back at 40, left the site at 41 and released at 56. C held it
  // from 40, not while it still waited ([33,40): the mutex free, A's own).
  TraceBuilder tb;
  const uint8_t mutex = VPROF_SYNC_MUTEX;
  signalled_waiter(tb);
  tb.thread(2).begin(0, 2).enter(0, 2).release(30, 0x20, VPROF_SYNC_CONDVAR).release(33, 0x10, mutex)
      .site(34, 6).site_end(70, 6).exit(71, 2).end(71, 2);
  tb.thread(3).begin(0, 3).enter(0, 3).site(5, 9).wait(5, 0x30, VPROF_SYNC_CONDVAR).wait_mutex(5, 0x10)
      .wait_end(40, 0x30, 0, -1).site_end(41, 9).release(56, 0x10, mutex).exit(57, 3).end(57, 3);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  const size_t r = row_of(cp, 1);
  auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
  EXPECT_EQ(held(2 | kHeldFunction), 20 + 3);
  EXPECT_EQ(held(9), 1) << "C's site 9 after its wait ended at 40";
  EXPECT_EQ(held(3 | kHeldFunction), 15) << "C's H over [41,56)";
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 7 + 4 + 1)
      << "the mutex free [33,40), the wake-up [56,60), the call's rest";
  EXPECT_EQ(cp.counters.mutex_reacquires_tiled, 1u);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Held, AHolderThatWaitedForTheMutexAfterItsOwnSignalPassesThatStretchToTheMutexsHolders) {
  // A (interval 1) waits on condition 0x20 with mutex 0x10 at site 1 in
  // F(1) over [10,60), signalled at 30 by B (interval 2), which unlocks at
  // 33. B had itself waited on condition 0x30 with the same mutex at its
  // site 9 in G(2) over [5,28): D (interval 4, in J(8)) signalled it at 12,
  // but C (interval 3) held the mutex in H(3), across its site 7 over
  // [14,20), until 25. A's blocked stretch [10,30) is B's: [28,29) its site
  // 9, [29,30) G's body; before, B waited: [25,28) its own wake-up (site 9),
  // [12,25) C's H and site 7, [10,12) D's J. After its signal A waited for
  // B's unlock ([30,33), G's body), then [33,60) is its own.
  TraceBuilder tb;
  const uint8_t mutex = VPROF_SYNC_MUTEX;
  signalled_waiter(tb);
  tb.thread(2).begin(0, 2).enter(0, 2).site(5, 9).wait(5, 0x30, VPROF_SYNC_CONDVAR).wait_mutex(5, 0x10)
      .wait_end(28, 0x30, 4, 12).site_end(29, 9).release(30, 0x20, VPROF_SYNC_CONDVAR).release(33, 0x10, mutex)
      .site(34, 6).site_end(70, 6).exit(71, 2).end(71, 2);
  tb.thread(3).begin(0, 3).enter(0, 3).site(14, 7).site_end(20, 7).release(25, 0x10, mutex).exit(26, 3).end(26, 3);
  tb.thread(4).begin(0, 4).enter(0, 8).release(12, 0x30, VPROF_SYNC_CONDVAR).exit(13, 8).end(13, 4);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  const size_t r = row_of(cp, 1);
  auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
  EXPECT_EQ(held(9), 1 + 3) << "B's site 9 after its wait, and its wake-up once C unlocked";
  EXPECT_EQ(held(3 | kHeldFunction), 7) << "C's H over [12,14) and [20,25)";
  EXPECT_EQ(held(7), 6);
  EXPECT_EQ(held(8 | kHeldFunction), 2) << "D's J until its signal";
  EXPECT_EQ(held(2 | kHeldFunction), 1 + 3) << "G's body before the signal, then until the unlock";
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 27 + 1);
  EXPECT_EQ(cp.counters.mutex_reacquires_tiled, 3u) << "A's; B's in its own interval, and as A's holder";
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Held, ANewcomerHoldsTheLockFromWhereItTookItNotBefore) {
  // The shape above, but C ran J(8) until 43, then entered H(3), where it
  // took the lock without waiting (no record) and released at 56. [40,43)
  // the lock was free and A not yet running: A's own, not C's J; and the
  // machine's when A, woken at 40, slept on to 50 (waiting for a core).
  for (bool slept : {false, true}) {
    SCOPED_TRACE(slept ? "A waited for a core until 50" : "no sleep recorded");
    TraceBuilder tb;
    const uint8_t mutex = VPROF_SYNC_MUTEX;
    auto &a = tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10, mutex).wait_end(60, 0x10, 3, 56)
        .site_end(61, 1).exit(65, 1).end(65, 1);
    if (slept) a.slept(65, 10, 50);
    tb.thread(2).begin(0, 2).enter(0, 2).release(40, 0x10, mutex).site(41, 6).site_end(70, 6).exit(71, 2).end(71, 2);
    tb.thread(3).begin(0, 3).enter(0, 8).exit(43, 8).enter(43, 3).site(45, 7).site_end(55, 7)
        .release(56, 0x10, mutex).exit(57, 3).end(57, 3);
    auto tl = compute_critical_paths(tb.build());
    const auto &cp = tl.paths;
    const size_t r = row_of(cp, 1);
    auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
    EXPECT_EQ(held(2 | kHeldFunction), 30);
    EXPECT_EQ(held(8 | kHeldFunction), 0) << "C's J came before it took the lock";
    EXPECT_EQ(held(3 | kHeldFunction), 3) << "H's body over [43,45) and [55,56)";
    EXPECT_EQ(held(7), 10);
    EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), (slept ? 0 : 3) + 5)
        << "the free stretch and the wake-up";
    EXPECT_EQ(cp.counters.wakeups_waiting_for_a_core, slept ? 1u : 0u);
    EXPECT_EQ(cp.counters.tiling_violations, 0u);
  }
}

TEST(Held, ANewcomerThatReleasedInsideAnUninstrumentedCallHoldsFromThatCall) {
  // A first iteration: C's root F(4) calls update_table at its site 9, not
  // broken down yet, which took the lock at once and released it at 56 us
  // inside the call begun at 43 us. Before 43 us C parsed in F's body: no
  // hold. Its unlock's own timed site (site 11, begun 30 ns before its
  // release) is no frame: B released in G(2) from there.
  TraceBuilder tb;
  const uint8_t mutex = VPROF_SYNC_MUTEX;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10000, 1).wait(10000, 0x10, mutex).wait_end(60000, 0x10, 3, 56000)
      .site_end(61000, 1).exit(65000, 1).end(65000, 1);
  tb.thread(2).begin(0, 2).enter(0, 2).site(39970, 11).release(40000, 0x10, mutex).site_end(40100, 11)
      .site(41000, 6).site_end(70000, 6).exit(71000, 2).end(71000, 2);
  tb.thread(3).begin(0, 3).enter(0, 4).site(43000, 9).release(56000, 0x10, mutex).site_end(57000, 9)
      .exit(57500, 4).end(57500, 3);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  const size_t r = row_of(cp, 1);
  auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
  EXPECT_EQ(held(2 | kHeldFunction), 29970) << "B in G's body over [10, 39.97) us";
  EXPECT_EQ(held(11), 30) << "then in its unlock's site";
  EXPECT_EQ(held(9), 13000) << "C inside update_table's call over [43, 56) us";
  EXPECT_EQ(held(4 | kHeldFunction), 0) << "C's parsing before it is no hold";
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 3000 + 5000);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Held, ANewcomerHoldsFromItsFrameHoweverLongItsUnlockTookToRelease) {
  // C took the lock at once in H(3) (entered at 43 us), ran its site 7,
  // and released in its unlock's call (site 12), begun 1.1 us before the
  // release probe: a holder just back from milliseconds off its CPU
  // runs the wrapper's first instructions slowly. The manifest says site 12
  // is a sync call, so the hold began in H, not in the unlock: [43, 56) us
  // is C's. Without the manifest's word, a site begun that long before its
  // release is read as a call that took the lock inside.
  for (bool manifest : {true, false}) {
    SCOPED_TRACE(manifest ? "site 12 is a sync call" : "no manifest");
    TraceBuilder tb;
    const uint8_t mutex = VPROF_SYNC_MUTEX;
    tb.thread(1).begin(0, 1).enter(0, 1).site(10000, 1).wait(10000, 0x10, mutex).wait_end(60000, 0x10, 3, 56000)
        .site_end(61000, 1).exit(65000, 1).end(65000, 1);
    tb.thread(2).begin(0, 2).enter(0, 2).site(39970, 11).release(40000, 0x10, mutex).site_end(40100, 11)
        .site(41000, 6).site_end(70000, 6).exit(71000, 2).end(71000, 2);
    tb.thread(3).begin(0, 3).enter(0, 8).exit(43000, 8).enter(43000, 3).site(45000, 7).site_end(54900, 7)
        .site(54900, 12).release(56000, 0x10, mutex).site_end(56200, 12).exit(57000, 3).end(57000, 3);
    DirectCalls direct;
    direct.sync = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
    PathOptions opt;
    if (manifest) opt.direct_calls = &direct;
    auto tl = compute_critical_paths(tb.build(), opt);
    const auto &cp = tl.paths;
    const size_t r = row_of(cp, 1);
    auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
    EXPECT_EQ(held(2 | kHeldFunction), 29970);
    EXPECT_EQ(held(7), manifest ? 9900 : 0);
    EXPECT_EQ(held(3 | kHeldFunction), manifest ? 2000 : 0) << "H's body over [43, 45) us";
    EXPECT_EQ(held(12), 1100) << "its unlock's call until the release";
    EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), (manifest ? 3000 : 14900) + 5000)
        << "the lock free (from 40 us to 43 us, or as read without the manifest), the wake-up, the call's rest";
    EXPECT_EQ(cp.counters.tiling_violations, 0u);
  }
}

TEST(Held, AWokenWaiterWaitingForACoreIsTheMachinesNotTheWaits) {
  // A waits [10,60) at site 1 for B's release at 40; A slept from 12 and
  // ran again at 52: [40,52) it was runnable, waiting for a core. That is
  // in the wait's (preempted) leaf (the machine), the rest of the wake-up
  // the wait's own. Without the sleep record it is all the wait's own.
  for (bool recorded : {true, false}) {
    SCOPED_TRACE(recorded ? "the sleep recorded" : "a trace without it");
    TraceBuilder tb;
    auto &a = tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10).wait_end(60, 0x10, 2, 40)
                  .site_end(61, 1).exit(65, 1).end(65, 1);
    if (recorded) a.slept(65, 12, 52);
    tb.thread(2).begin(0, 2).enter(0, 2).release(40, 0x10).exit(41, 2).end(41, 2);
    auto tl = compute_critical_paths(tb.build());
    const auto &cp = tl.paths;
    const size_t r = row_of(cp, 1);
    const int64_t wait = node_of(tl.trie, {{Fn, 1}, {Site, 1}});
    EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, 2 | kHeldFunction}})), 30);
    EXPECT_EQ(leaf_ns(cp, r, wait), recorded ? 9 : 21);
    EXPECT_EQ(cp.counters.wakeups_waiting_for_a_core, recorded ? 1u : 0u);
    EXPECT_EQ(cp.counters.tiling_violations, 0u);
  }
}

TEST(Held, AConvoysNextHolderWaitingForACoreHoldsOffItsCpu) {
  // A waits for lock 0x10 at site 1 over [10,80), woken by B's release at
  // 70. X (thread 3) held it in H(3) until 30, a release that woke B, which
  // had waited at its site 2 in G(2) since 12 and slept from 14 to 45: B's
  // hold began at 30, and [30,45) it was runnable, waiting for a core (the
  // machine's: "preempted while holding"), then [45,50) in its lock call and
  // [50,70) in G's body. (It read as B running in its lock call for 20 ns:
  // at a busy machine's start-up, 10% of Var "held by … at
  // pthread_mutex_lock", the second cause.)
  TraceBuilder tb;
  const uint8_t mutex = VPROF_SYNC_MUTEX;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10, mutex).wait_end(80, 0x10, 2, 70)
      .site_end(81, 1).exit(85, 1).end(85, 1);
  tb.thread(2).begin(0, 2).enter(0, 2).site(12, 2).wait(12, 0x10, mutex).wait_end(50, 0x10, 3, 30)
      .site_end(50, 2).release(70, 0x10, mutex).exit(71, 2).end(71, 2).slept(71, 14, 45);
  tb.thread(3).begin(0, 3).enter(0, 3).release(30, 0x10, mutex).exit(31, 3).end(31, 3);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  const size_t r = row_of(cp, 1);
  auto held = [&](uint32_t id) { return held_at_site1(tl, r, id); };
  EXPECT_EQ(held(3 | kHeldFunction), 20) << "X over [10,30)";
  EXPECT_EQ(held(2 | kHeldPreempted), 15) << "B woken, waiting for a core";
  EXPECT_EQ(held(2), 5) << "B in its lock call, running";
  EXPECT_EQ(held(2 | kHeldFunction), 20) << "B in G's body";
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Held, AConditionVariablesWaitKeepsItsOneWaker) {
  // The same, on a condition variable: signals are no holds; the stretch
  // stays C's, whoever signalled before.
  TraceBuilder tb;
  const uint8_t cv = VPROF_SYNC_CONDVAR;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10, cv).wait_end(60, 0x10, 3, 56)
      .site_end(61, 1).exit(65, 1).end(65, 1);
  tb.thread(2).begin(0, 2).enter(0, 2).release(40, 0x10, cv).site(41, 6).site_end(70, 6).exit(71, 2).end(71, 2);
  tb.thread(3).begin(0, 3).enter(0, 3).site(45, 7).site_end(55, 7).release(56, 0x10, cv).exit(57, 3).end(57, 3);
  auto tl = compute_critical_paths(tb.build());
  const size_t r = row_of(tl.paths, 1);
  EXPECT_EQ(leaf_ns(tl.paths, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, 3 | kHeldFunction}})), 36);
  EXPECT_EQ(tl.paths.counters.lock_turns_tiled, 0u);
}

TEST(Held, AHolderOffItsCpuWhileHoldingIsShownAsSuchAndIsNoCause) {
  // The first test's shape, but B was preempted over [18,20) (inside site 5)
  // and [25,30) (H's body), and the recorder paused it over [31,33): those
  // 9 ns are no code of B's (a maintenance thread preempted inside
  // a 19.8 ms hold read as if it ran; the recorder's pauses while holding
  // were credited to the stall).
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10).wait_end(40, 0x10, 2, 36)
      .site_end(41, 1).exit(45, 1).end(45, 1);
  tb.thread(2).begin(0, 2).enter(0, 3).site(15, 5).site_end(22, 5).release(36, 0x10).exit(37, 3)
      .end(37, 2).preempted(21, 18, 20).preempted(31, 25, 30).recorder(31, 33);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  size_t r = cp.rows[0].id == 1 ? 0 : 1;
  auto held = [&](uint32_t id) {
    int64_t n = node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, id}});
    return n < 0 ? int64_t(-1) : int64_t(leaf_ns(cp, r, n));
  };
  // H's body [10,15) + [22,36) = 19, less [25,30) and [31,33): 12; site 5
  // [15,22) = 7, less [18,20): 5.
  EXPECT_EQ(held(3 | kHeldFunction), 12);
  EXPECT_EQ(held(5), 5);
  EXPECT_EQ(held(3 | kHeldFunction | kHeldPreempted), 5);
  EXPECT_EQ(held(5 | kHeldPreempted), 2);
  EXPECT_EQ(held(kHeldRecorder), 2);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Held, OffCpuHoldingIsNamedAndCountsAsNoCause) {
  // 400 intervals: A waits on B's lock, B holds it for 100 ns of its own and
  // 0..300 ns (i % 4 · 100) preempted inside H: the whole variance is the
  // preemption, no cause takes it, and the preemption figure counts it.
  TraceBuilder tb;
  auto &a = tb.thread(1);
  auto &b = tb.thread(2);
  for (int i = 0; i < 400; ++i) {
    const int64_t t = int64_t(i) * 10000, off = (i % 4) * 100, rel = t + 10 + 100 + off;
    a.begin(t, uint64_t(i) + 1).enter(t, 1).site(t + 10, 1).wait(t + 10, 0x10).wait_end(rel, 0x10, 2, rel)
        .site_end(rel, 1).exit(rel + 5, 1).end(rel + 5, uint64_t(i) + 1);
    b.enter(t, 3).release(rel, 0x10).exit(rel + 1, 3);
    if (off) b.preempted(rel, t + 50, t + 50 + off);
  }
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), make_names({{1, "F"}, {3, "H"}}, {{1, 1, "pthread_mutex_lock", 10}}), opt, 0).value());
  const VarNode *p = find_label(runs[0]->tree, "held by H (body), preempted while holding");
  ASSERT_NE(p, nullptr);
  EXPECT_NEAR(p->share.value_or(0), 1.0, 1e-9);
  EXPECT_TRUE(p->factor.empty());
  auto share = preemption_share(*runs[0]);
  ASSERT_TRUE(share.has_value());
  EXPECT_NEAR(*share, 1.0, 1e-9);
  auto merged = combine(std::move(runs), opt);
  for (const Factor &c : merged->causes.ranked) EXPECT_LT(c.share, 0.01) << c.name;
  EXPECT_NEAR(merged->causes.none, 1.0, 1e-9);
}

TEST(Held, AHolderThatWasItselfBlockedPassesTheStretchToWhatBlockedIt) {
  // A convoy: A (interval 1) waits at site 1 in F(1) over [10,50) for B's
  // release at 46. B (interval 2) in G(2) was itself blocked at its site 2
  // over [12,40) on C's release at 36; C (interval 3) ran H(3)'s body.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1).site(10, 1).wait(10, 0x10).wait_end(50, 0x10, 2, 46)
      .site_end(51, 1).exit(52, 1).end(52, 1);
  tb.thread(2).begin(0, 2).enter(0, 2).site(12, 2).wait(12, 0x20).wait_end(40, 0x20, 3, 36)
      .site_end(41, 2).release(46, 0x10).exit(47, 2).end(47, 2);
  tb.thread(3).begin(0, 3).enter(0, 3).release(36, 0x20).exit(38, 3).end(38, 3);
  auto tl = compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  const size_t r = row_of(cp, 1);
  // A's [10,46): B's G body before its wait [10,12) and after it [41,46) =
  // 7; B's site 2 from C's release to B's return [36,41) = 5; while B was
  // blocked, [12,36), C's H body = 24.
  auto held = [&](uint32_t id) {
    return leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, id}}));
  };
  EXPECT_EQ(held(3 | kHeldFunction), 24);
  EXPECT_EQ(held(2), 5);  // site 2
  EXPECT_EQ(held(2 | kHeldFunction), 7);
  EXPECT_EQ(leaf_ns(cp, r, node_of(tl.trie, {{Fn, 1}, {Site, 1}})), 5);  // [46,51)
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

// A holder in no instrumented function (a server's background thread) is
// named by where it released: the WAKER_AT place, by the namer's number for
// its function (two addresses in one function are one Held part). A place
// the namer cannot name, and a wait without one, stay `held by (outside)`.
TEST(Held, AHolderInNoInstrumentedFunctionIsNamedByWhereItReleased) {
  // A (interval 1) waits at site 1 in F(1) over [10,40) for B's release at
  // 36 at address 0xa10, and over [50,70) for B's release at 66 at 0xa20
  // (the same function); over [80,90) for a release at 86 at 0xb00 (a
  // function the namer does not know); over [100,110) for one at 106 with no
  // place recorded. B (tid 2, pid 100) works for no interval, in no frame.
  TraceBuilder tb;
  tb.thread(1).begin(0, 1).enter(0, 1)
      .site(10, 1).wait(10, 0x10).wait_end(40, 0x10, 2, 36).waker_at(40, 0xa10).site_end(41, 1)
      .site(50, 1).wait(50, 0x10).wait_end(70, 0x10, 2, 66).waker_at(70, 0xa20).site_end(71, 1)
      .site(80, 1).wait(80, 0x10).wait_end(90, 0x10, 2, 86).waker_at(90, 0xb00).site_end(91, 1)
      .site(100, 1).wait(100, 0x10).wait_end(110, 0x10, 2, 106).site_end(111, 1)
      .exit(120, 1).end(120, 1);
  tb.thread(2).release(36, 0x10).release(66, 0x10).release(86, 0x10).release(106, 0x10);
  PathOptions opt;
  std::vector<std::pair<uint32_t, uint64_t>> asked;
  opt.name_place = [&](uint32_t pid, uint64_t pc) -> uint32_t {
    asked.push_back({pid, pc});
    return pc == 0xa10 || pc == 0xa20 ? 7 : 0;
  };
  auto tl = compute_critical_paths(tb.build(), opt);
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  auto held = [&](uint32_t id) { return leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Site, 1}, {Held, id}})); };
  EXPECT_EQ(held(7 | kHeldPlace), 26 + 16);  // [10,36) and [50,66)
  EXPECT_EQ(held(0), 6 + 6);                 // [80,86) unnamed, [100,106) no place
  for (const auto &[pid, pc] : asked) EXPECT_EQ(pid, 100u) << "the waker's process";
  EXPECT_EQ(asked.size(), 3u) << "each place named once";
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
  // The blame says the same: the named place's two waits (30 + 20 ns, the
  // wait's whole time) on one line, the others with no place.
  ASSERT_EQ(cp.blame.size(), 2u);
  EXPECT_EQ(cp.blame[0].place, 7 | kHeldPlace);
  EXPECT_EQ(cp.blame[0].ns, 30 + 20);
  EXPECT_EQ(cp.blame[1].place, 0u);
  EXPECT_EQ(cp.blame[1].ns, 10 + 10);

  // Without a namer (a trace with no maps): every such stretch is (outside).
  auto plain = compute_critical_paths(tb.build());
  EXPECT_EQ(leaf_ns(plain.paths, 0, node_of(plain.trie, {{Fn, 1}, {Site, 1}, {Held, 0}})), 26 + 16 + 6 + 6);
}

// A lock holder (tid 2, intervals 1000+i) runs H(2), whose call site 2 (d)
// lasts D_i, then releases; the waiter (tid 1, interval i) waits at site 1
// (lock) in f(1) for that release. D_i = 20 + U·spread.
trace::Trace holder_and_waiter(int n, double spread, uint64_t seed) {
  TraceBuilder tb;
  auto &a = tb.thread(1);
  auto &b = tb.thread(2);
  uint64_t s = seed;
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int64_t d = 20 + int64_t(double(s >> 11) / double(1ull << 53) * spread);
    b.begin(t, uint64_t(1000 + i)).enter(t, 2).site(t + 1, 2).site_end(t + 1 + d, 2)
        .release(t + 2 + d, 0x10).exit(t + 3 + d, 2).end(t + 3 + d, uint64_t(1000 + i));
    a.begin(t, uint64_t(i + 1)).enter(t, 1).site(t + 1, 1).wait(t + 1, 0x10)
        .wait_end(t + 4 + d, 0x10, 2, t + 2 + d).site_end(t + 5 + d, 1).exit(t + 6 + d, 1)
        .end(t + 6 + d, uint64_t(i + 1));
    t += d + 20;
  }
  return tb.build();
}

Names holder_names() { return make_names({{1, "f"}, {2, "H"}}, {{1, 1, "lock", 10}, {2, 2, "d", 20}}); }

std::unique_ptr<Analysis> analysis_of(const trace::Trace &t) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  return analyze_one(t, holder_names(), opt);
}

TEST(Held, AnalyzeKeepsTheWaitAsTheFactorAndShowsWhatHeldIt) {
  auto a = analysis_of(holder_and_waiter(400, 200, 3));
  const VarNode *held = find_label(a->tree, "held by H at d (t.cc:20)");
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->key, "root/fn:f/site:f>lock#0/held:site:H>d#0");
  const VarNode *rest = find_label(a->tree, "lock (not held)");
  ASSERT_NE(rest, nullptr);
  // The waiter's whole spread is its wait's blocked stretch (d + 1); the
  // wait's own 3 ns are in the waiter's rows only, a sliver of Cov with the
  // root over both threads' rows.
  const VarNode *wait = find_label(a->tree, "lock (t.cc:10)");
  ASSERT_NE(wait, nullptr);
  EXPECT_NEAR(held->share.value(), wait->share.value(), 0.002);
  EXPECT_GT(held->share.value(), 0.4);
  bool lock_ranked = false, held_ranked = false;
  for (const Factor &f : a->factors) {
    if (f.rank > 0 && f.name == "lock") lock_ranked = true;
    for (const VarNode *v : f.instances) held_ranked = held_ranked || v == held;
  }
  std::string ranked;
  for (const Factor &f : a->factors) ranked += f.name + " rank " + std::to_string(f.rank) + " share " + std::to_string(f.share) + "\n";
  EXPECT_TRUE(lock_ranked) << ranked;
  EXPECT_FALSE(held_ranked) << "a Held part is only the wait's breakdown in analyze";
}

Profile profile_of(const trace::Trace &t) {
  Profile p = make_profile(*analysis_of(t), BuildInfo{});
  p.source = "mem";
  return p;
}

// The gate's detection of a planted change, in small: the holder's d spreads
// 6x wider, which lengthens the waiter's lock waits as much. The gate (two
// runs a side: at one no verdict is sure) names d in H first, not the lock
// wait it made longer.
TEST(Held, TheGateNamesTheHoldersCodeNotTheWaitItLengthened) {
  Profile b1 = profile_of(holder_and_waiter(600, 100, 5)), h1 = profile_of(holder_and_waiter(600, 600, 6));
  Profile b2 = profile_of(holder_and_waiter(600, 100, 7)), h2 = profile_of(holder_and_waiter(600, 600, 8));
  auto d = diff_profiles({&b1, &b2}, {&h1, &h2}, DiffOptions{});
  ASSERT_TRUE(d.ok()) << d.error().message;
  GateResult g = decide(*d, GateOptions{});
  EXPECT_TRUE(g.regression) << g.summary;
  ASSERT_FALSE(g.grew.empty());
  EXPECT_EQ(g.grew.front()->name, "d") << g.summary;
  EXPECT_EQ(g.grew.front()->caller, "H") << g.summary;
  EXPECT_NE(g.summary.find("of the increase from d (t.cc:20) in H"), std::string::npos) << g.summary;
  // Both halves, the holder's own d and the waits it held, are d's: the
  // factor carries (nearly) all of the increase.
  EXPECT_GT(g.grew.front()->part, 0.95) << g.summary;
  // The message names d as a cause, its own change and the waits
  // it held up apart; the cause is exactly the sum of its two nodes' changes
  // (the holder's own d and the waiter's "held by H at d").
  ASSERT_TRUE(d->causes_held);
  ASSERT_FALSE(g.causes.empty()) << g.summary;
  const FactorDiff &c = *g.causes.front();
  EXPECT_EQ(c.name, "d");
  double own = 0, held = 0;
  for (const NodeDiff &n : d->nodes) {
    if (n.label == "d (t.cc:20)") own += n.of_base;
    if (n.label == "held by H at d (t.cc:20)") held += n.of_base;
  }
  EXPECT_GT(own, 0);
  EXPECT_GT(held, 0);
  EXPECT_NEAR(c.of_base, own + held, 1e-9);
  ASSERT_EQ(c.held_up.size(), 1u);
  EXPECT_EQ(c.held_up[0].wait, "lock");
  EXPECT_NEAR(c.own_part + c.held_up[0].part, c.part, 1e-9);
  EXPECT_NEAR(c.held_up[0].part / c.part, held / (own + held), 1e-9);
  EXPECT_NE(g.summary.find(" of the increase from d (t.cc:20) in H ("), std::string::npos) << g.summary;
  EXPECT_NE(g.summary.find(" holding up waits in lock)"), std::string::npos) << g.summary;
}

// One run's tree: ROOT -> the wait at `site` (0.9 of it) -> `parts`.
VarNode wait_tree(const std::string &root, const std::string &site, const std::string &wait, int run,
                  std::vector<VarNode> parts) {
  VarNode r = share_leaf("root", root, 1.0, run);
  VarNode s = share_leaf(site, wait, 0.9, run);
  s.children = std::move(parts);
  s.kind = r.kind = VarNode::Kind::Var;
  r.children.push_back(s);
  return r;
}

// A wait broken down by Held parts in two runs: the later run's wins when it
// names holders the earlier did not. Run 0 left the holder unnamed (a trace
// from before release places, or no symbols), run 1 named it by where it
// released; then run 2 instrumented that function and names where inside it.
// A run that names no more than the one before does not replace it.
TEST(Held, ALaterRunThatNamesTheOutsideHolderReplacesTheEarliersHeldParts) {
  auto node = share_leaf;
  const std::string site = "root/site:handle>lock_table#0";
  auto run_tree = [&](int run, std::vector<VarNode> parts) {
    return wait_tree("handle", site, "lock_table", run, std::move(parts));
  };
  VarNode r0 = run_tree(0, {node(site + "/held:outside", "held by (outside)", 0.8, 0),
                            node(site + "/notheld", "lock_table (not held)", 0.1, 0)});
  VarNode r1 = run_tree(1, {node(site + "/held:outside:background", "held by background (outside instrumented code)", 0.8, 1),
                            node(site + "/notheld", "lock_table (not held)", 0.1, 1)});
  VarNode r2 = run_tree(2, {node(site + "/held:site:background>flush_log#0", "held by background at flush_log", 0.8, 2),
                            node(site + "/notheld", "lock_table (not held)", 0.1, 2)});
  VarNode merged = merge_runs({r0, r1});
  EXPECT_NE(find_label(merged, "held by background (outside instrumented code)"), nullptr);
  EXPECT_EQ(find_label(merged, "held by (outside)"), nullptr);
  merged = merge_runs({r0, r1, r2});
  const VarNode *deepest = find_label(merged, "held by background at flush_log");
  ASSERT_NE(deepest, nullptr);
  EXPECT_EQ(deepest->run, 2);
  // The other way round nothing names more: the first run's parts stay.
  merged = merge_runs({r2, r0});
  EXPECT_NE(find_label(merged, "held by background at flush_log"), nullptr);
  merged = merge_runs({r1, r0});
  EXPECT_NE(find_label(merged, "held by background (outside instrumented code)"), nullptr);
}

// A cause is a place with all that is under it: run 0 times the
// stall as a call site of the worker (17.3% of Var its own) and the workers'
// lock waits are held by it there (6.9%): one cause, 24.2%. Run 1 instruments
// the stall (it spins on clock_gettime) and measures the waits beside it; the
// merge took the stall's own time from run 1 and kept the waits' Held parts
// of run 0, so the stall became two smaller causes (clock_gettime 16%, stall
// 6.9%). The waits' Held parts are run 1's: one cause again.
TEST(Held, AFollowedCauseStaysWholeInTheMergedReport) {
  auto node = [](const std::string &key, const std::string &label, double share, int run,
                 const std::string &factor) {
    VarNode n = share_leaf(key, label, share, run);
    n.factor = factor;
    if (factor.find(" (") == std::string::npos) n.functions = {factor};
    return n;
  };
  const std::string stall = "root/site:worker>stall#0", wait = "root/site:worker>pthread_mutex_lock#0";
  auto run_tree = [&](int run, VarNode s, std::vector<VarNode> held) {
    VarNode r = share_leaf("root", "worker", 1.0, run);
    r.kind = VarNode::Kind::Var;
    VarNode w = share_leaf(wait, "pthread_mutex_lock (w.c:9)", 0.079, run);
    w.kind = VarNode::Kind::Var;
    w.children = std::move(held);
    w.children.push_back(node(wait + "/notheld", "pthread_mutex_lock (not held)", 0.010, run, "pthread_mutex_lock"));
    r.children = {std::move(s), std::move(w), node("root/body", "worker (body)", 1.0 - 0.173 - 0.079, run, "worker (body)")};
    return r;
  };
  VarNode r0 = run_tree(0, node(stall, "stall (w.c:5)", 0.173, 0, "stall"),
                        {node(wait + "/held:site:worker>stall#0", "held by worker at stall", 0.069, 0, "stall")});
  VarNode s1 = share_leaf(stall, "stall (w.c:5)", 0.173, 1);
  s1.kind = VarNode::Kind::Var;
  s1.children = {node(stall + "/site:stall>clock_gettime#0", "clock_gettime (s.c:3)", 0.160, 1, "clock_gettime"),
                 node(stall + "/body", "stall (body)", 0.013, 1, "stall (body)")};
  VarNode r1 = run_tree(1, s1,
                        {node(wait + "/held:site:stall>clock_gettime#0", "held by stall at clock_gettime", 0.065, 1,
                              "clock_gettime"),
                         node(wait + "/held:site:worker>stall#0", "held by worker at stall", 0.004, 1, "stall")});
  VarNode merged = merge_runs({r0, r1});
  const VarNode *held = find_label(merged, "held by stall at clock_gettime");
  ASSERT_NE(held, nullptr) << "the waits kept run 0's Held parts";
  EXPECT_EQ(held->run, 1);
  FactorOptions fo;
  Causes causes = rank_causes(merged, fo);
  auto cause = [&](const std::string &name) -> const Factor * {
    for (const Factor &c : causes.ranked)
      if (c.name == name) return &c;
    return nullptr;
  };
  const Factor *whole = cause("clock_gettime");
  ASSERT_NE(whole, nullptr);
  EXPECT_NEAR(whole->share, 0.160 + 0.065, 1e-9);
  EXPECT_NEAR(whole->own_share, 0.160, 1e-9);
  const Factor *rest = cause("stall");
  EXPECT_TRUE(!rest || rest->share < 0.01) << "the stall is split: " << rest->share;
}

// Found on minidb's planted-delay session: run 0 times execute_step as a call
// site only, and the sync pack's waits inside it gave it Held parts; run 1
// instruments execute_step. Held parts are no breakdown by calls: run 1's
// is merged in (before, the session stopped on "already broken down").
TEST(Held, ALaterRunsBreakdownByCallsReplacesHeldPartsOnly) {
  auto node = share_leaf;
  const std::string site = "root/site:run_transaction>execute_step#0";
  // run_transaction -> execute_step (0.9) -> parts, in run `run`.
  auto run_tree = [&](int run, std::vector<VarNode> parts) {
    return wait_tree("run_transaction", site, "execute_step", run, std::move(parts));
  };
  VarNode r0 = run_tree(0, {node(site + "/held:fn:commit", "held by commit (body)", 0.7, 0),
                            node(site + "/notheld", "execute_step (not held)", 0.2, 0)});
  VarNode r1 = run_tree(1, {node(site + "/site:execute_step>read_row#0", "read_row", 0.8, 1),
                            node(site + "/body", "execute_step (body)", 0.1, 1)});
  EXPECT_TRUE(held_only(r0.children[0]));
  EXPECT_FALSE(held_only(r1.children[0]));
  VarNode merged = merge_runs({r0, r1});
  const VarNode *m = find_label(merged, "read_row");
  ASSERT_NE(m, nullptr) << "run 1's breakdown of execute_step is merged in";
  EXPECT_EQ(m->run, 1);
  EXPECT_EQ(find_label(merged, "held by commit (body)"), nullptr);
  // The other way round, run 0's calls stay: Held parts never replace them.
  merged = merge_runs({r1, r0});
  EXPECT_NE(find_label(merged, "read_row"), nullptr);
}

}  // namespace
}  // namespace vprof::testing
