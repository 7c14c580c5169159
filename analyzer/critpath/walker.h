// The critical-path walk (docs/method.md, "The critical path", the paper's
// Algorithm 2) behind compute_critical_paths and record_path (critical_path.h):
// one interval at a time, backwards from its end, across threads along wake-up
// and created-by edges. A template over what it records beside the tiling:
// NoRecord for the analysis, a recorder of the path for record_path
// (path_record.cc).
//
// Internal to critpath/, and in an unnamed namespace on purpose: each of the
// two files that include it compiles its own copy with internal linkage, and
// critical_path.cc holds only the analysis's, so GCC inlines and lays it out
// as before the walk could record. With both copies in that file its
// per-epoch loop came out a fifth larger, inlined differently, and `vprof
// analyze` measured 1-2% more task-clock (docs/performance.md).
#ifndef VPROF_ANALYZER_CRITPATH_WALKER_H
#define VPROF_ANALYZER_CRITPATH_WALKER_H

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/util/gallop.h"

namespace vprof::analyzer {
namespace {  // NOLINT(build/namespaces): see above


// A cell's node with this bit is the (preempted) leaf under that node: the
// walk's trie is shared and read-only, so the leaves are made after it.
constexpr uint32_t kPreemptedMark = 0x80000000u;
// A cell's node with this bit (and not the one above) is a Held leaf: the
// rest is an index into its walker's held_pairs() (wait node, holder node),
// made into trie nodes after the walk like the (preempted) leaves.
constexpr uint32_t kHeldMark = 0x40000000u;
// Both bits: the (recorder) leaf under that node (the recorder's own pauses,
// trace_format.h's RECORDER), made after the walk as the (preempted) ones are.
constexpr uint32_t kRecorderMark = kPreemptedMark | kHeldMark;
// The holder node of a Held cell whose waker has no trace (kHeldUnrecorded).
constexpr uint32_t kUnrecordedHolder = 0x3fffffffu;
// A holder node with this bit: a waker in no instrumented frame, at the
// place it released (the rest is Segment::waker_place, 1 + an index into
// Timeline::places). Trie nodes stay below it.
constexpr uint32_t kPlaceHolder = 0x20000000u;
// The holder node of a Held cell while the recorder paused the holder.
constexpr uint32_t kRecorderHolder = 0x3ffffffeu;
// A holder node (a trie node, or a place as above) with this bit: the holder
// was there, but off its CPU (preempted) while holding.
constexpr uint32_t kOffCpuHolder = 0x10000000u;
// (kUnrecordedHolder and kRecorderHolder have that bit too: tell them apart
// here only.)
constexpr bool is_place_holder(uint32_t holder) {
  return holder != kUnrecordedHolder && holder != kRecorderHolder && (holder & kPlaceHolder);
}

// What the walk tells a Rec besides the tiling (record_path): nothing, for the
// analysis, so that its walk compiles to what it was without the hooks.
struct NoRecord {
  void on_thread(uint32_t, int64_t, int64_t) {}
  void on_queue(int64_t, int64_t) {}
  void on_untracked(int64_t, int64_t) {}
  void on_edge(bool, uint32_t, int64_t, uint32_t, int64_t) {}
};

// Walks one interval at a time; one Walker per worker thread.
template <class Rec>
class Walker : public Rec {
 public:
  Walker(const Timeline &tl, const PathOptions &opt) : tl_(tl), opt_(opt) {}

  // Sizes the scratch row for the trie as it now is (it grows by epochs).
  void prepare(size_t nodes) {
    hints_.assign(tl_.threads.size(), Hints{});  // the windows may have moved
    // Lock releases to tile waits by (a runtime before holders in turn
    // recorded none): looked for once an epoch, not at every wait.
    has_releases_ = std::any_of(tl_.threads.begin(), tl_.threads.end(),
                                [](const ThreadTimeline &th) { return !th.releases.empty(); });
    has_cond_mutexes_ = std::any_of(tl_.threads.begin(), tl_.threads.end(),
                                    [](const ThreadTimeline &th) { return !th.cond_mutexes.empty(); });
    if (acc_.size() < nodes) {
      acc_.resize(nodes, 0.0);
      stamp_.resize(nodes, 0);
    }
  }

  // Tiles interval `iv` and appends its non-zero leaves to `out`.
  // Returns false when the path crossed lost data.
  bool walk(const IntervalInfo &iv, std::vector<PathCell> &out) {
    s_ = iv.id;
    iv_end_ = iv.end_ts;
    lossy_ = false;
    gap_ = false;
    unrecorded_ = false;
    ++serial_;
    touched_.clear();
    preempted_.clear();
    int64_t j = cover(iv.end_thread, iv.begin_ts, iv.end_ts, 0);
    if (j > iv.begin_ts) {
      // Nothing on the path explains [begin, j): no thread worked for the
      // interval there and no created-by edge leads to one.
      add(StackTrie::kUntracked, j - iv.begin_ts);
      this->on_untracked(iv.begin_ts, j);
      gap_ = true;
    }
    // In the order first touched: rows are sorted once nodes have their
    // canonical numbers, at the end.
    for (uint32_t n : touched_)
      if (acc_[n] != 0.0) CriticalPaths::append(out, n, acc_[n]);
    // Marked: the caller hangs them under their nodes as (preempted) or
    // (recorder) leaves.
    for (auto &[n, ns] : preempted_) CriticalPaths::append(out, n, double(ns));
    held_cells_ = held_touched_.size();
    for (uint32_t i : held_touched_) {
      CriticalPaths::append(out, i | kHeldMark, double(held_acc_[i]));
      held_acc_[i] = 0;
    }
    held_touched_.clear();
    saw_preemption_ = saw_preemption_ || !preempted_.empty();
    return !lossy_;
  }

  bool gap() const { return gap_; }
  // Whether the last walk met a wait woken by a thread with no trace.
  bool unrecorded() const { return unrecorded_; }
  // Whether the last walk appended Held cells.
  bool held_cells() const { return held_cells_ != 0; }
  // (wait node, holder node) of each Held cell's index, in walk numbering.
  const std::vector<std::pair<uint32_t, uint32_t>> &held_pairs() const { return held_pairs_; }
  bool saw_preemption() const { return saw_preemption_; }
  PathCounters counters;
  // (wait node, waker tid, waker node, waker label, release place: 1 +
  // index in the timeline's places, for a waker in no frame; else 0) -> ns.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t, uint32_t>, int64_t> blame;

 private:
  // Attributes [a, b) on thread th through its stack timeline.
  void run_stack(const ThreadTimeline &th, int64_t a, int64_t b) {
    if (a >= b) return;
    this->on_thread(uint32_t(&th - tl_.threads.data()), a, b);
    if (th.drop_begin_ts >= 0 && b > th.drop_begin_ts) lossy_ = true;
    const StackChange *it = first_change_after(th, a);
    int64_t t = a;
    uint32_t node = it == th.stack.begin() ? StackTrie::kRoot : std::prev(it)->node;
    // Tested once here, not per step, and out of line: this loop stays small
    // enough to be inlined into cover().
    if (__builtin_expect(!th.preempted.empty(), 0)) return run_stack_preempted(th, it, node, t, b);
    while (t < b) {
      int64_t next = it == th.stack.end() ? b : std::min(b, it->ts);
      add(node, next - t);
      t = next;
      if (it != th.stack.end()) node = (it++)->node;
    }
  }

  // run_stack() on a thread the kernel preempted somewhere in the trace.
  [[gnu::noinline]] void run_stack_preempted(const ThreadTimeline &th, const StackChange *it,
                                             uint32_t node, int64_t t, int64_t b) {
    while (t < b) {
      int64_t next = it == th.stack.end() ? b : std::min(b, it->ts);
      add_running(th, node, t, next);
      t = next;
      if (it != th.stack.end()) node = (it++)->node;
    }
  }

  // [a, b) in `node` on th, less the involuntary off-CPU time in it, which
  // goes to the node's (preempted) leaf, and the recorder's pauses, to its
  // (recorder) leaf: each ns still in exactly one leaf.
  void add_running(const ThreadTimeline &th, uint32_t node, int64_t a, int64_t b) {
    const int64_t off = off_cpu(th, a, b, [&](bool recorder, int64_t ns) {
      add_off(node | (recorder ? kRecorderMark : kPreemptedMark), ns);
    });
    add(node, b - a - off);
  }

  // Calls off(recorder, ns) for each stretch of [a, b) th spent off its CPU
  // (preempted, or paused by the recorder); returns their sum.
  template <class Off>
  static int64_t off_cpu(const ThreadTimeline &th, int64_t a, int64_t b, Off &&off) {
    const Preemption *p = std::upper_bound(
        th.preempted.begin(), th.preempted.end(), a,
        [](int64_t v, const Preemption &x) { return v < x.in; });
    int64_t sum = 0;
    for (; p != th.preempted.end() && p->out < b; ++p) {
      const int64_t ns = std::min(b, p->in) - std::max(a, p->out);
      sum += ns;
      off(p->recorder, ns);
    }
    return sum;
  }

  // [r, t) of a wait on th after its waker's release: the wake-up. Where
  // th slept past r (trace format 10), it was runnable until it ran again,
  // waiting for a core: the machine's, in the wait's (preempted) leaf as a
  // preemption is (more runnable threads than cores), no cause. The rest
  // is the wait's own.
  void wake_up(const ThreadTimeline &th, int64_t r, int64_t t) {
    const int64_t ran = ran_again(th, r, t);
    if (ran > r) {
      add_off(node_before(th, t) | kPreemptedMark, ran - r);
      this->on_thread(uint32_t(&th - tl_.threads.data()), r, ran);
    }
    run_stack(th, ran, t);
  }

  // When th, woken at r, ran again: the end of the sleep r falls in (trace
  // format 10), at most t; r when it was running, or nothing says.
  int64_t ran_again(const ThreadTimeline &th, int64_t r, int64_t t) {
    if (__builtin_expect(th.slept.empty(), 1)) return r;
    const Preemption *p = std::upper_bound(th.slept.begin(), th.slept.end(), r,
                                           [](int64_t v, const Preemption &x) { return v < x.in; });
    if (p == th.slept.end() || p->out > r || std::min(p->in, t) <= r) return r;
    ++counters.wakeups_waiting_for_a_core;
    return std::min(p->in, t);
  }

  // ns of the marked leaf `leaf` in this interval.
  void add_off(uint32_t leaf, int64_t ns) {
    for (auto &e : preempted_)
      if (e.first == leaf) {
        e.second += ns;
        return;
      }
    preempted_.push_back({leaf, ns});
  }

  // Per thread, where the last search of each kind ended. Intervals are
  // walked in end order and a walk steps back in small steps, so the next
  // search on a thread is usually close to the last one: gallop from there
  // instead of a binary search over the whole window. Reset each epoch
  // (trimming moves the windows).
  struct Hints {
    const Segment *seg = nullptr;
    const StackChange *stack = nullptr;
    const Dequeue *deq = nullptr;
  };

  // The first element of [b, e) whose key is greater than v.
  template <class T, class Key>
  static const T *search(const T *b, const T *e, const T *&hint, int64_t v, Key key) {
    const T *it = hint ? upper_bound_from(b, e, hint, v, key)
                       : std::upper_bound(b, e, v, [&](int64_t x, const T &y) { return x < key(y); });
    hint = it;
    return it;
  }

  Hints &hints(const ThreadTimeline &th) { return hints_[size_t(&th - tl_.threads.data())]; }

  // The first stack change on th later than a.
  const StackChange *first_change_after(const ThreadTimeline &th, int64_t a) {
    return search(th.stack.begin(), th.stack.end(), hints(th).stack, a,
                  [](const StackChange &c) { return c.ts; });
  }

  void add(uint32_t node, int64_t ns) {
    if (stamp_[node] != serial_) {
      stamp_[node] = serial_;
      acc_[node] = 0.0;
      touched_.push_back(node);
    }
    acc_[node] += double(ns);
  }

  // [a, b) of a wait at node w whose waker on thread wi worked for another
  // interval or for none: each stretch goes to the Held leaf under w of
  // where the waker was then (what the waiter waited for). Where the waker
  // was itself blocked, woken later by a third thread, that stretch is
  // where the third thread was, and so on 8 deep: a lock convoy names the
  // code its head ran, not the waits of those queued behind it.
  // `place`: where wi released the object (Segment::waker_place; 0: not
  // known), which names its stretches in no instrumented frame.
  void add_held(uint32_t wi, uint32_t w, int64_t a, int64_t b, uint32_t place, int depth = 0) {
    const ThreadTimeline &wt = tl_.threads[wi];
    for (int64_t t = b; t > a;) {
      int32_t si = segment_before(wi, t);
      if (si < 0) return held_stack(wt, w, a, t, place);
      const Segment &seg = wt.segs[si];
      int64_t x = std::max(a, seg.begin);
      int64_t wk = seg.waiting() && seg.waker_tid && seg.wait_end <= iv_end_ && depth < 8
                       ? tl_.thread_of(seg.waker_tid) : -1;
      if (wk >= 0 && uint32_t(wk) != wi && seg.release_ts >= seg.wait_begin) {
        int64_t r = std::min(seg.release_ts, t);
        if (r > x) {
          if (__builtin_expect(has_cond_mutexes_, 0)) held_woken(wi, seg, w, r, t, place, depth);
          else held_wake(wt, w, r, t, place);
          add_held(uint32_t(wk), w, x, r, seg.waker_place, depth + 1);
        } else {
          // Released at x or before: [x, t) is all wt's wake-up (the lock's
          // next holder in a convoy, whose hold begins at that release).
          held_wake(wt, w, x, t, place);
        }
        t = x;
        continue;
      }
      held_stack(wt, w, x, t, place);
      t = x;
    }
  }

  // [r, t) of holder wi's own wait `seg` after its waker's release: a
  // condition wait that took its mutex back after other threads held it
  // passes [r, the last release) to them in turn (woken_cond), the rest is
  // its wake-up (held_wake). Its own scratch: the caller may be tiling turns_.
  [[gnu::noinline]] void held_woken(uint32_t wi, const Segment &seg, uint32_t w, int64_t r, int64_t t,
                                    uint32_t place, int depth) {
    const ThreadTimeline &wt = tl_.threads[wi];
    const uint64_t m = object_at(wt.cond_mutexes, seg.wait_begin);
    std::vector<std::pair<int64_t, uint32_t>> turns;
    collect_turns(turns, wi, m, r, t);
    if (turns.empty()) return held_wake(wt, w, r, t, place);
    const auto [x, holder] = turns.back();
    turns.pop_back();
    held_wake(wt, w, x, t, place);
    tile_turns(turns, wi, m, holder, 0, w, r, x, depth + 1);
    ++counters.mutex_reacquires_tiled;
  }

  // The blocked stretch [a, r) of th's wait `seg` on a lock, which the
  // waker wk released at r: each stretch between two releases of the lock
  // (some thread waited for each: the runtime recorded them) goes to the
  // thread that released at its end, from where it was then (add_held), the
  // last to wk. A newcomer that barged in after a release and held the lock
  // for microseconds holds only those; the holder before it keeps its own
  // stretch. With no releases recorded, the whole stretch is wk's.
  void held_in_turn(uint32_t ti, const Segment &seg, uint32_t wk, uint32_t w, int64_t a, int64_t r) {
    if (!has_releases_) return add_held(wk, w, a, r, seg.waker_place);
    held_in_turn_slow(ti, seg, wk, w, a, r);
  }
  [[gnu::noinline]] void held_in_turn_slow(uint32_t ti, const Segment &seg, uint32_t wk, uint32_t w, int64_t a,
                                           int64_t r) {
    const uint64_t obj = object_at(tl_.threads[ti].lock_waits, seg.wait_begin);
    collect_turns(turns_, ti, obj, a, r);
    if (turns_.empty()) return add_held(wk, w, a, r, seg.waker_place);
    tile_turns(turns_, ti, obj, wk, seg.waker_place, w, a, r);
  }

  // [r, t) of th's wait `seg` after its waker's release: the wake-up. A
  // condition wait takes its mutex back in it: each release of the mutex by
  // another thread in (r, t) (the runtime records them while the wait
  // lasts) kept the waiter out, so [r, the last one) is tiled under the
  // wait's node by the threads that held the mutex in turn, as a lock wait's
  // blocked stretch is (a newcomer that took the mutex before the woken
  // waiter did holds its stretch, not the wait); the rest is the wake-up.
  void woken(const ThreadTimeline &th, uint32_t ti, const Segment &seg, int64_t r, int64_t t) {
    if (__builtin_expect(!has_cond_mutexes_, 1)) return wake_up(th, r, t);
    woken_cond(ti, seg, r, t);
  }
  [[gnu::noinline]] void woken_cond(uint32_t ti, const Segment &seg, int64_t r, int64_t t) {
    const ThreadTimeline &th = tl_.threads[ti];
    const uint64_t m = object_at(th.cond_mutexes, seg.wait_begin);
    collect_turns(turns_, ti, m, r, t);
    if (turns_.empty()) return wake_up(th, r, t);
    const auto [x, holder] = turns_.back();
    turns_.pop_back();
    wake_up(th, x, t);
    this->on_thread(ti, r, x);  // still the waiter's stretch, for a recorded path
    tile_turns(turns_, ti, m, holder, 0, node_before(th, t), r, x);
    ++counters.mutex_reacquires_tiled;
  }

  // The releases of lock obj in (a, r) by threads other than ti, in time
  // order, into `turns` (none for obj 0).
  void collect_turns(std::vector<std::pair<int64_t, uint32_t>> &turns, uint32_t ti, uint64_t obj, int64_t a,
                     int64_t r) {
    turns.clear();
    if (!obj) return;
    for (uint32_t k = 0; k < tl_.threads.size(); ++k) {
      const Window<LockRelease> &rel = tl_.threads[k].releases;
      if (k == ti || rel.empty()) continue;
      const LockRelease *it = std::upper_bound(rel.begin(), rel.end(), a,
                                               [](int64_t v, const LockRelease &x) { return v < x.ts; });
      for (; it != rel.end() && it->ts < r; ++it)
        if (it->obj == obj) turns.push_back({it->ts, k});
    }
    std::sort(turns.begin(), turns.end());
  }

  // [a, r) of waiter ti's wait at node w on lock obj, which wk released at
  // r (from `place`), by the holders of `turns` (collect_turns) in turn.
  // depth >= 0: the waiter is itself a holder (add_held's depth), whose
  // stretches are Held cells under w, not the path's.
  void tile_turns(const std::vector<std::pair<int64_t, uint32_t>> &turns, uint32_t ti, uint64_t obj, uint32_t wk,
                  uint32_t place, uint32_t w, int64_t a, int64_t r, int depth = -1) {
    if (turns.empty()) return add_held(wk, w, a, r, place, std::max(depth, 0));
    int64_t t = r;
    uint32_t holder = wk;
    for (size_t i = turns.size() + 1; i-- > 0;) {
      const int64_t lo = i ? turns[i - 1].first : a;
      // Before the holder took the lock it was free: the waiter's own, not
      // the newcomer's code, and the machine's where the waiter, woken,
      // waited for a core meanwhile (wake_up).
      const int64_t held_from = hold_start(holder, obj, lo, t);
      add_held(holder, w, held_from, t, place, std::max(depth, 0));
      if (held_from > lo) {
        if (depth < 0) wake_up(tl_.threads[ti], lo, held_from);
        else held_wake(tl_.threads[ti], w, lo, held_from, 0);
      }
      t = lo;
      if (i) holder = turns[i - 1].second;
      place = 0;  // where it released is known of the last waker only
    }
    counters.lock_turns_tiled += turns.size();
  }

  // When thread xi, which released lock obj at hi, began holding it within
  // [lo, hi). A thread waiting on the lock at lo took it at once (the
  // convoy's own tiling, add_held, says where it waited): lo. Otherwise it
  // came after lo and took it without waiting (glibc's try path records no
  // acquire): taken as when it entered the frame it released in, the lock
  // being taken inside the frame that releases it; lo if that frame is
  // older, or the thread was in no instrumented frame.
  int64_t hold_start(uint32_t xi, uint64_t obj, int64_t lo, int64_t hi) {
    const ThreadTimeline &x = tl_.threads[xi];
    const int32_t si = segment_before(xi, lo + 1);
    if (si < 0) return lo;
    const Segment &g = x.segs[si];
    if (g.waiting() && object_at(x.lock_waits, g.wait_begin) == obj) return lo;
    // Waiting on a condition at lo, it took the mutex back as its wait ended.
    if (g.waiting() && object_at(x.cond_mutexes, g.wait_begin) == obj) return std::clamp(g.wait_end, lo, hi);
    const StackChange *it = first_change_after(x, hi - 1);
    if (it == x.stack.begin()) return lo;
    // The frame it released in: the innermost one, but for the unlock's own
    // timed call site (the manifest's sync call; without a manifest, one
    // whose release probe ran within kReleaseCallNs of its begin): the frame
    // is the one that called the unlock. An uninstrumented callee's call
    // site is such a frame too: the release was inside that call (a first
    // iteration, its root's calls not yet broken down, had the workers'
    // request parsing as holders).
    uint32_t frame = std::prev(it)->node;
    if (frame != StackTrie::kRoot && tl_.trie[frame].kind == FrameKind::Site && !tl_.trie[frame].callee_fn &&
        (sync_site(tl_.trie[frame].id) || hi - std::prev(it)->ts < kReleaseCallNs))
      frame = tl_.trie[frame].parent;
    if (frame == StackTrie::kRoot) return lo;
    int64_t from = hi;
    // Back over the changes inside that frame, to lo at most.
    for (const StackChange *c = it; c != x.stack.begin() && from > lo;) {
      --c;
      if (!inside(c->node, frame)) break;
      from = c->ts;
    }
    return std::max(lo, from);
  }

  // An unlock's timed call site begins this close before its release probe
  // (20-50 ns measured; 1.1 us seen on a holder just back from 8 ms off its
  // CPU, whose whole hold then read as the lock being free), a call that
  // took the lock is longer: the rule for a trace without its manifest.
  static constexpr int64_t kReleaseCallNs = 500;
  bool sync_site(uint32_t site) const { return opt_.direct_calls && opt_.direct_calls->sync_call(site); }

  // Whether trie node n is `frame` or below it.
  bool inside(uint32_t n, uint32_t frame) const {
    for (int depth = 0; depth < 64 && n >= frame; ++depth) {
      if (n == frame) return true;
      if (n == StackTrie::kRoot) return false;
      n = tl_.trie[n].parent;
    }
    return false;
  }

  // The object of th's wait begun at `begin` in `lw`: lock_waits, the lock
  // it waited on; cond_mutexes, the mutex a condition wait took back (0: not
  // a lock's, or not recorded).
  static uint64_t object_at(const Window<LockWait> &lw, int64_t begin) {
    const LockWait *it = std::lower_bound(lw.begin(), lw.end(), begin,
                                          [](const LockWait &x, int64_t v) { return x.begin < v; });
    return it != lw.end() && it->begin == begin ? it->obj : 0;
  }

  // [r, t) of a holder's own wait after its waker's release: where the
  // holder, woken, waited for a core (it slept past r: trace format 10),
  // it is a holder off its CPU ("preempted while holding", no cause); the
  // rest is where it was, as held_stack says.
  void held_wake(const ThreadTimeline &wt, uint32_t w, int64_t r, int64_t t, uint32_t place) {
    const int64_t ran = ran_again(wt, r, t);
    if (ran > r) {
      const uint32_t node = node_before(wt, t);
      const uint32_t holder = node == StackTrie::kRoot && place ? kPlaceHolder | place : node;
      add_held_cell(held_cell(w, holder | kOffCpuHolder), ran - r);
    }
    held_stack(wt, w, ran, t, place);
  }

  // [q, e): a task waited in a queue from its enqueue at q until thread th
  // dequeued it at e. Where th ran meanwhile for another interval, or for
  // none in instrumented code, it was busy with that (an event loop running
  // the commands read before this one, a stall among them, or its cron; a
  // worker finishing another task): tiled by th's innermost frames as Held
  // parts under "(queue wait)", as a lock's holder tiles the wait. The rest
  // is the queue's own: th waiting (an idle worker not yet woken: the
  // wake-up's latency, not its wait's doing), working for this interval,
  // for none outside instrumented code (a pool's own dispatch: on minidb
  // every queue wait, a Held cell per interval that said "held by
  // (outside)"), or before its first record.
  // si: th's segment holding (e - 1, e], or -1. Out of line: cover()'s
  // loop stays small.
  [[gnu::noinline]] void queue_wait(const ThreadTimeline &th, int32_t si, int64_t q, int64_t e) {
    if (q >= e) return;
    int64_t own = 0;
    for (int64_t t = e; t > q;) {
      if (si < 0) {  // before th's first record: nothing says what it did
        own += t - q;
        break;
      }
      const Segment &seg = th.segs[size_t(si)];
      const int64_t a = std::max(q, seg.begin);
      if (seg.label == s_ || seg.waiting()) own += t - a;
      else if (seg.label != 0) held_stack(th, StackTrie::kQueue, a, t, 0);
      else own += held_in_frames(th, a, t);
      t = a;
      --si;
    }
    if (own > 0) add(StackTrie::kQueue, own);
    if (own < e - q && th.drop_begin_ts >= 0 && e > th.drop_begin_ts) lossy_ = true;
  }

  // [a, b) of th's time for none, by th's innermost frames into Held
  // parts under "(queue wait)" where it had one; returns the time it was in
  // none (the queue's own).
  int64_t held_in_frames(const ThreadTimeline &th, int64_t a, int64_t b) {
    // Mostly in no frame all along (a pool's dispatch): told from the last
    // change before b, near where the walk's last search on th ended (at
    // the dequeue, where a worker's stack often changes), without moving it
    // back to a.
    const StackChange *last = first_change_after(th, b - 1);
    if (last == th.stack.begin() || (std::prev(last)->ts <= a && std::prev(last)->node == StackTrie::kRoot))
      return b - a;
    const StackChange *it = first_change_after(th, a);
    uint32_t node = it == th.stack.begin() ? StackTrie::kRoot : std::prev(it)->node;
    int64_t none = 0;
    for (int64_t t = a; t < b;) {
      const int64_t next = it == th.stack.end() ? b : std::min(b, it->ts);
      if (node == StackTrie::kRoot) none += next - t;
      else held_stack(th, StackTrie::kQueue, t, next, 0);
      t = next;
      if (it != th.stack.end()) node = (it++)->node;
    }
    return none;
  }

  // [a, b) on wt by its innermost frames, into the Held leaves under w; a
  // stretch in no frame by `place`, where wt released (0: not known).
  void held_stack(const ThreadTimeline &wt, uint32_t w, int64_t a, int64_t b, uint32_t place) {
    const StackChange *it = first_change_after(wt, a);
    uint32_t node = it == wt.stack.begin() ? StackTrie::kRoot : std::prev(it)->node;
    for (int64_t t = a; t < b;) {
      int64_t next = it == wt.stack.end() ? b : std::min(b, it->ts);
      const uint32_t holder = node == StackTrie::kRoot && place ? kPlaceHolder | place : node;
      if (__builtin_expect(!wt.preempted.empty(), 0)) held_running(wt, w, holder, t, next);
      else add_held_cell(held_cell(w, holder), next - t);
      t = next;
      if (it != wt.stack.end()) node = (it++)->node;
    }
  }

  // [a, b) of the holder at `holder`, less what it spent off its CPU: a
  // preempted stretch is the holder's place marked off-CPU, a pause of the
  // recorder's the recorder's; neither is the holder's code (a maintenance
  // thread preempted inside a 19.8 ms hold read as if it ran).
  [[gnu::noinline]] void held_running(const ThreadTimeline &wt, uint32_t w, uint32_t holder, int64_t a, int64_t b) {
    const int64_t off = off_cpu(wt, a, b, [&](bool recorder, int64_t ns) {
      add_held_cell(held_cell(w, recorder ? kRecorderHolder : holder | kOffCpuHolder), ns);
    });
    if (b - a > off) add_held_cell(held_cell(w, holder), b - a - off);
  }

  // The Held cell index of (wait w, holder node); a holder's stretches come
  // in runs of the same pair, so the last one is kept at hand.
  uint32_t held_cell(uint32_t w, uint32_t node) {
    uint64_t key = uint64_t{w} << 32 | node;
    if (key == held_last_key_ && !held_pairs_.empty()) return held_last_;
    auto [pos, fresh] = held_index_.try_emplace(key, uint32_t(held_pairs_.size()));
    if (fresh) held_pairs_.push_back({w, node});
    held_last_key_ = key;
    return held_last_ = pos->second;
  }

  void add_held_cell(uint32_t i, int64_t ns) {
    if (held_acc_.size() <= i) held_acc_.resize(i + 1, 0);
    if (held_acc_[i] == 0) held_touched_.push_back(i);
    held_acc_[i] += ns;
  }

  uint64_t label_at(uint32_t ti, int64_t t) {
    int32_t i = segment_before(ti, t);
    return i < 0 ? 0 : tl_.threads[ti].segs[i].label;
  }

  // The innermost stack node on th during the nanosecond (t-1, t].
  uint32_t node_before(const ThreadTimeline &th, int64_t t) {
    const StackChange *it = first_change_after(th, t - 1);
    return it == th.stack.begin() ? StackTrie::kRoot : std::prev(it)->node;
  }

  // Index of the segment of thread ti holding the nanosecond (t-1, t], or -1.
  int32_t segment_before(uint32_t ti, int64_t t) {
    const ThreadTimeline &th = tl_.threads[ti];
    // The segment with begin < t <= end (contiguous, I1): the first with end > t - 1.
    const Segment *it = search(th.segs.begin(), th.segs.end(), hints(th).seg, t - 1,
                               [](const Segment &g) { return g.end; });
    if (it == th.segs.end() || it->begin >= t) return -1;
    return static_cast<int32_t>(it - th.segs.begin());
  }

  // The latest dequeue on th in [lo, t] of a task enqueued while working for s.
  const Dequeue *created_by(const ThreadTimeline &th, int64_t lo, int64_t t) {
    const Dequeue *it = search(th.dequeues.begin(), th.dequeues.end(), hints(th).deq, t,
                               [](const Dequeue &d) { return d.ts; });
    while (it != th.dequeues.begin()) {
      --it;
      if (it->ts < lo) break;
      if (it->enq.ts >= 0 && it->enq.label == s_ && it->enq.ts <= it->ts) return &*it;
    }
    return nullptr;
  }

  // Covers [lo, hi) backwards starting on thread `ti`, which worked for s just
  // before hi. Returns j: [j, hi) is attributed, [lo, j) is the caller's.
  int64_t cover(uint32_t ti, int64_t lo, int64_t hi, int depth) {
    int64_t t = hi;
    int32_t hint = -1;  // the previous segment when the walk stays on one thread
    int stalled = 0;    // created-by steps that did not move back in time
    while (t > lo) {
      const ThreadTimeline *th = &tl_.threads[ti];
      // Segments are contiguous (merge invariant I1): stepping back on the same
      // thread is the previous index, no search needed.
      int32_t si = hint >= 0 ? hint : segment_before(ti, t);
      hint = -1;
      if (si < 0) return t;  // before the thread's first record
      const Segment &seg = th->segs[si];
      if (seg.label != s_) {
        // The thread took up s here; follow the created-by edge if one exists.
        const Dequeue *d = created_by(*th, std::max(lo, seg.begin), t);
        if (!d) return t;
        run_stack(*th, d->ts, t);  // picked the task up, not yet joined: dispatch
        int64_t q = std::max(lo, d->enq.ts);
        queue_wait(*th, d->ts > seg.begin ? si : si - 1, q, d->ts);
        this->on_queue(q, d->ts);
        this->on_edge(true, d->enq.thread, d->enq.ts, ti, d->ts);
        ++counters.created_by_edges_followed;
        // Edges at one instant can form a cycle (A enqueues what B dequeues and
        // back, all at time t); without progress in time, stop following.
        if (q == t && ++stalled > 16) return t;
        if (q < t) stalled = 0;
        t = q;
        ti = d->enq.thread;
        continue;
      }
      int64_t a = std::max(lo, seg.begin);
      if (!seg.waiting()) {
        run_stack(*th, a, t);
        t = a;
        hint = si - 1;
        continue;
      }
      // A wait that outlasts the interval did not end within it: whoever
      // ended it later is not on this interval's path (and the data that
      // says who may not be merged yet).
      int64_t wk = seg.waker_tid && seg.wait_end <= iv_end_ ? tl_.thread_of(seg.waker_tid) : -1;
      bool released_during_wait = wk >= 0 && uint32_t(wk) != ti && seg.release_ts >= seg.wait_begin;
      if (released_during_wait) {
        const ThreadTimeline &wt = tl_.threads[wk];
        uint64_t wl = label_at(uint32_t(wk), seg.release_ts);
        int64_t r = std::min(seg.release_ts, t);
        if (wl == s_) {
          if (r > a && depth < opt_.max_wake_depth) {
            // The waker worked for s: the path moves to it for the blocked
            // stretch; the wake-up latency [r, t) stays with the wait.
            woken(*th, ti, seg, r, t);
            ++counters.wake_edges_followed;
            this->on_edge(false, uint32_t(wk), seg.release_ts, ti, seg.wait_end);
            int64_t j = cover(uint32_t(wk), a, r, depth + 1);
            run_stack(*th, a, j);
            t = a;
            hint = si - 1;
            continue;
          }
          if (r > a) ++counters.depth_limit_hits;
        } else {
          // The holder/signaller worked for someone else: the time stays with
          // the wait call site and the waker is blamed. The blocked stretch
          // [a, r) is tiled under the wait by where the waker was meanwhile
          // (Held leaves); the wake-up latency [r, t) is the wait's own.
          uint32_t w = node_before(*th, t);
          const uint32_t holder = node_before(wt, seg.release_ts);
          blame[{w, seg.waker_tid, holder, wl, holder == StackTrie::kRoot ? seg.waker_place : 0}] += t - a;
          if (r > a) {
            woken(*th, ti, seg, r, t);
            this->on_thread(ti, a, r);  // still the waiter's stretch, for a recorded path
            if ((th->drop_begin_ts >= 0 && r > th->drop_begin_ts) ||
                (wt.drop_begin_ts >= 0 && r > wt.drop_begin_ts))
              lossy_ = true;
            held_in_turn(ti, seg, uint32_t(wk), w, a, r);
            t = a;
            hint = si - 1;
            continue;
          }
        }
      }
      if (seg.waker_tid && wk < 0 && seg.wait_end <= iv_end_ && seg.waker_tid != th->tid) {
        // Woken by a thread the run did not record: its blocked stretch is
        // held by that thread, wherever it was; said as such and counted,
        // never silently the wait's own time.
        uint32_t w = node_before(*th, t);
        add_held_cell(held_cell(w, kUnrecordedHolder), t - a);
        unrecorded_ = true;
        this->on_thread(ti, a, t);
        t = a;
        hint = si - 1;
        continue;
      }
      run_stack(*th, a, t);
      t = a;
      hint = si - 1;
    }
    return t;
  }

  const Timeline &tl_;
  const PathOptions &opt_;
  uint64_t s_ = 0;
  int64_t iv_end_ = 0;
  std::vector<double> acc_;     // scratch row, valid where stamp_ == serial_
  std::vector<uint32_t> stamp_;
  std::vector<uint32_t> touched_;
  uint32_t serial_ = 0;
  std::vector<Hints> hints_;  // per thread
  std::vector<std::pair<uint32_t, int64_t>> preempted_;  // node | mark -> off-CPU ns, this interval
  std::vector<std::pair<uint32_t, uint32_t>> held_pairs_;  // Held cell index -> (wait, holder)
  std::unordered_map<uint64_t, uint32_t> held_index_;     // (wait << 32 | holder) -> index
  std::vector<int64_t> held_acc_;        // Held cell index -> ns, this interval (0: untouched)
  std::vector<uint32_t> held_touched_;
  std::vector<std::pair<int64_t, uint32_t>> turns_;  // a wait's releases in turn: (time, thread)
  size_t held_cells_ = 0;
  uint64_t held_last_key_ = 0;
  uint32_t held_last_ = 0;
  bool lossy_ = false, gap_ = false, saw_preemption_ = false;
  bool unrecorded_ = false;  // the last walk met a holder with no trace
  bool has_releases_ = false;  // some thread's lock releases are in the window (prepare)
  bool has_cond_mutexes_ = false;  // some thread's condition waits name their mutex (prepare)
};

}  // namespace
}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_CRITPATH_WALKER_H
