// Merge stage: turns the reader's per-thread event streams into per-thread
// timelines the critical-path walk can query by time, plus the cross-thread
// tables (intervals by id, task enqueues by pointer, threads by tid).
//
// The merge streams. It consumes the trace in epochs of time [T_k, T_k+1):
// every thread's records with ts < T_k+1 are folded into the timelines, then
// every interval whose end is now known is handed to the walk, and what no
// open interval can reach any more is dropped. Memory is the window (from the
// oldest open interval's begin to T_k+1) plus a fixed cost per interval; the
// window's buffers are reused, which matters because first-touch page faults
// cost far more than the merge itself (docs/performance.md).
//
// Assumptions about the input (vprof::trace::Trace):
//   A1 each stream's events are in non-decreasing time (the reader clamps);
//   A2 all streams share one clock, so times compare across threads/processes;
//   A3 a tid names one thread for the whole trace (Linux tids are system-wide;
//      a tid seen in two streams is counted in duplicate_tids and the first
//      stream, in (pid, tid) order, wins edges that name it);
//   A4 an interval id names one interval at a time: a begin of an id whose
//      interval has ended starts a new interval (ids of pooled request
//      objects are reused; counted in reused_ids). A second begin while the
//      id's interval is open is counted (duplicate_begins) and the interval
//      keeps its first in time (ties: the first stream in (pid, tid) order);
//      an end when none is open is counted (duplicate_ends). The thread that
//      began it again still works for it from then on.
// Invariants of the result:
//   I1 every thread's segments tile [first_ts, the epoch's end) in order,
//      without gaps; each has one label (interval id or 0) and is either
//      running or inside exactly one wait. The last one is provisional: it
//      ends at the epoch's end and is replaced when the next epoch is merged;
//   I2 every thread's stack changes are in non-decreasing time; between
//      changes the innermost frame is constant;
//   I3 every stack node's parent has a smaller index (node 0 is the empty
//      stack), so a reverse scan visits children before parents;
//   I4 broken nesting in the data (an exit with no matching enter, frames
//      never exited) never aborts the merge: it is repaired as documented in
//      docs/method.md and counted in MergeCounters;
//   I5 the result depends neither on the number of worker threads nor on the
//      epoch size: threads are built with local tries and folded in (pid, tid)
//      order at each epoch's end, and whatever crosses threads (interval
//      begins and ends, enqueues) is ordered by (time, stream);
//   I6 trimming keeps, on every thread, all data at or after the window start
//      W = min(epoch end, begin of every open interval): the segment holding
//      W, the stack change in force at W, every dequeue at or after W. A walk
//      of an interval that began at or after W never looks before it.
#ifndef VPROF_ANALYZER_MERGE_TIMELINE_H
#define VPROF_ANALYZER_MERGE_TIMELINE_H

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <optional>
#include <vector>

#include "analyzer/read/trace_reader.h"
#include "analyzer/read/trace_stream.h"
#include "analyzer/util/flat_map.h"
#include "analyzer/util/quality.h"
#include "analyzer/util/workers.h"

namespace vprof::analyzer {

// What a stack node stands for. Queue/Untracked are leaves hung under the
// root so that every nanosecond of a tiling lands on some node. Preempted
// (id 0) is a leaf under the node the thread was in when the kernel switched
// it out involuntarily; the walk makes them (critical_path.cc). Held is a
// leaf under a wait whose waker worked for another interval or for none: the
// blocked stretch, tiled by where the waker (the holder or signaller) was
// while the waiter waited (docs/method.md, "The critical path": blame); its id
// names that place (held_id below), the walk makes them too.
//
// One table of the kinds, X(Kind, label, key): a leaf that stands for no code
// has one label and one key in every writer (the tree, CSV, terminal, HTML,
// Perfetto); a kind whose label is its code's (Function, Site) or its
// holder's (Held) has none here.
#define VPROF_FRAME_KINDS(X)                   \
  X(Root, "(outside)", "outside")              \
  X(Function, nullptr, nullptr)                \
  X(Site, nullptr, nullptr)                    \
  X(Queue, "(queue wait)", "queue")            \
  X(Untracked, "(untracked)", "untracked")     \
  X(Preempted, "(preempted)", "preempted")     \
  X(Held, nullptr, nullptr)                    \
  X(Recorder, "(recorder)", "recorder")

enum class FrameKind : uint8_t {
#define VPROF_FRAME_ENUM_(kind, label, key) kind,
  VPROF_FRAME_KINDS(VPROF_FRAME_ENUM_)
#undef VPROF_FRAME_ENUM_
};

// A leaf's label and key when its kind stands for no code, else nullptr.
constexpr const char *frame_label(FrameKind k) {
  switch (k) {
#define VPROF_FRAME_LABEL_(kind, label, key) \
  case FrameKind::kind: return label;
    VPROF_FRAME_KINDS(VPROF_FRAME_LABEL_)
#undef VPROF_FRAME_LABEL_
  }
  return nullptr;
}
constexpr const char *frame_key(FrameKind k) {
  switch (k) {
#define VPROF_FRAME_KEY_(kind, label, key) \
  case FrameKind::kind: return key;
    VPROF_FRAME_KINDS(VPROF_FRAME_KEY_)
#undef VPROF_FRAME_KEY_
  }
  return nullptr;
}

// A Held leaf's id: the holder's innermost frame, by manifest ids (stable
// across runs and builds, unlike trie numbers): a call site's id, a
// function's id with kHeldFunction set, or 0 when the holder was in no
// instrumented function.
constexpr uint32_t kHeldFunction = 0x80000000u;
// A Held leaf's id when the waker has no trace in the run (another process
// not recorded, a thread that could not make its file): the blocked stretch
// is said to be held by an unrecorded thread, not folded into the wait.
constexpr uint32_t kHeldUnrecorded = 0xffffffffu;
// A Held leaf's id when the holder was in no instrumented function but the
// place it released at is known (WAKER_AT): this bit and the number
// PathOptions::name_place gave that place's function (Names::places).
constexpr uint32_t kHeldPlace = 0x40000000u;
// With this bit, a Held leaf's id is the stretch its holder spent off its
// CPU involuntarily while holding (preempted), at the place the rest of the
// id names: the kernel's doing, no cause (docs/method.md, "Causes").
constexpr uint32_t kHeldPreempted = 0x20000000u;
// A Held leaf's id when the recorder paused the holder while it held (its
// RECORDER records): the recorder's time, no cause.
constexpr uint32_t kHeldRecorder = 0xfffffffeu;
constexpr bool held_preempted(uint32_t id) {
  return id != kHeldUnrecorded && id != kHeldRecorder && (id & kHeldPreempted);
}

struct StackNode {
  uint32_t parent = 0;
  FrameKind kind = FrameKind::Root;
  uint32_t id = 0;         // function id or call-site id
  uint32_t callee_fn = 0;  // Site: the instrumented function entered directly under it (0: none)
  // Site: calls that did not enter exactly one instrumented function exactly
  // once (none, or several: an uninstrumented callee that re-enters
  // instrumented code). 0: every call was a direct call of its function.
  uint64_t not_direct = 0;
  bool vouched = false;  // Site: the manifest says it calls callee_fn directly (DirectCalls)
};

// Which function a call site calls, from the manifest: the site's callee is
// the function's name. The merge keeps such a call in the site's node as it
// reads, as a direct call (no stack change of its own when the function's
// enter and exit come a few ns after the site's); a function the manifest
// does not vouch for (a call through a pointer, a callee that re-enters
// instrumented code) is a child node, folded at the end if every call was
// direct after all (StackTrie::canonical). Ids are the manifest's, 0: none.
// A site the manifest says calls a named function directly (not through a
// pointer) calls no other: a different function entered inside it was
// re-entered by its callee, never a direct call of the site, even in every
// call. A site the manifest says is a call through a pointer (or a virtual
// call) never folds: its targets stay Function nodes under it, in every run,
// whether a run happened to reach one target or several, so that runs that
// reached different targets key the same function's subtree the same way
// (merge_runs matches nodes by path). Only a trace without its manifest
// learns a site's callee from what ran, when every call entered the same
// function.
struct DirectCalls {
  std::vector<uint32_t> site_callee;  // site id -> the callee's name, numbered (0: not instrumented)
  std::vector<uint32_t> fn_name;      // function id -> its name, numbered the same way
  std::vector<uint8_t> named;         // site id -> 1: a direct call of a named function
  std::vector<uint8_t> indirect;      // site id -> 1: a call through a pointer (never folded)
  std::vector<uint8_t> sync;          // site id -> 1: a wrapped sync call (a lock, an unlock, a wait)
  std::vector<uint8_t> to_full_expression;  // site id -> 1: lasts to its full expression's end
  bool direct(uint32_t site, uint32_t fn) const {
    return site < site_callee.size() && fn < fn_name.size() && site_callee[site] != 0 &&
           site_callee[site] == fn_name[fn];
  }
  bool calls_a_named_function(uint32_t site) const { return site < named.size() && named[site]; }
  bool through_a_pointer(uint32_t site) const { return site < indirect.size() && indirect[site]; }
  bool sync_call(uint32_t site) const { return site < sync.size() && sync[site]; }
  bool lasts_to_full_expression(uint32_t site) const {
    return site < to_full_expression.size() && to_full_expression[site];
  }
};

// A trie of call stacks over all threads. While merging, a function entered
// directly inside a wrapped call site is a Function node under the Site node.
// canonical() then folds it into the site's node when every call of the site
// entered exactly one function exactly once (the site *is* that call of the
// function, as in the paper's E(A) = E(B) + E(C) + E(body_A)); a site that
// entered instrumented code only sometimes (an uninstrumented callee that
// re-enters it, recursion through it) keeps its own time in its own node and
// the function's in the child, so neither is mistaken for the other.
class StackTrie {
 public:
  StackTrie();
  uint32_t child(uint32_t parent, FrameKind kind, uint32_t id);
  // The existing child, or -1.
  int64_t find(uint32_t parent, FrameKind kind, uint32_t id) const;
  const StackNode &operator[](uint32_t i) const { return nodes_[i]; }
  StackNode &at(uint32_t i) { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  // The same trie with direct calls folded into their sites (above) and
  // numbered in a canonical order (depth first, children by (kind, id)), so
  // that numbering does not depend on the order nodes were first seen in
  // (epochs, threads). old_to_new maps this trie's ids (several old nodes can
  // map to one new node). In the result a Site's callee_fn is 0 unless its
  // calls were folded. With the manifest's calls (direct), a site through a
  // pointer is never folded.
  StackTrie canonical(std::vector<uint32_t> &old_to_new,
                      const DirectCalls *direct = nullptr) const;
  // A trie from its nodes as numbered (a run's summary: pipeline/run_summary.h);
  // nullopt unless the first three are the root, the queue and untracked
  // and every other's parent precedes it.
  static std::optional<StackTrie> from_nodes(std::vector<StackNode> nodes);
  static constexpr uint32_t kRoot = 0;
  static constexpr uint32_t kQueue = 1;
  // A function (or call site) is shown at most this many times on one path:
  // a deeper instance of a recursion is its nearest instance's node again (its
  // body joins that body, its calls those calls). docs/method.md, "Recursion".
  static constexpr uint32_t kRecursionShown = 4;
  static constexpr uint32_t kUntracked = 2;

 private:
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, uint32_t> index_;
};

// A vector whose front can be dropped cheaply: the window of one thread's
// timeline. Storage is compacted (and kept, so its pages stay mapped) once
// the dropped part is the larger half.
template <class T>
class Window {
 public:
  T *begin() { return v_.data() + head_; }
  T *end() { return v_.data() + v_.size(); }
  const T *begin() const { return v_.data() + head_; }
  const T *end() const { return v_.data() + v_.size(); }
  size_t size() const { return v_.size() - head_; }
  bool empty() const { return size() == 0; }
  T &operator[](size_t i) { return v_[head_ + i]; }
  const T &operator[](size_t i) const { return v_[head_ + i]; }
  T &back() { return v_.back(); }
  const T &back() const { return v_.back(); }
  void push_back(const T &x) { v_.push_back(x); }
  void insert(const T *pos, const T &x) { v_.insert(v_.begin() + (pos - v_.data()), x); }
  T &emplace_back() { return v_.emplace_back(); }  // value-initialized, to fill in place
  void pop_back() { v_.pop_back(); }
  void drop_front(size_t k) {
    head_ += k;
    if (head_ > 1024 && 2 * head_ > v_.size()) {
      v_.erase(v_.begin(), v_.begin() + ptrdiff_t(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<T> v_;
  size_t head_ = 0;
};

struct StackChange {
  int64_t ts;
  uint32_t node;  // innermost frame from ts on
};

constexpr int64_t kStillWaiting = std::numeric_limits<int64_t>::max();

struct Segment {
  int64_t begin, end;
  uint64_t label;       // interval the thread works for; 0 = none
  int64_t wait_begin;   // -1: running; else inside a wait that began then
  int64_t wait_end;     // when that wait ended (kStillWaiting: not within the data so far)
  int64_t release_ts;   // when the waker released the object; -1 = no waker
  uint32_t waker_tid;
  uint32_t waker_place;  // where the waker released it: 1 + an index into Timeline::places; 0 = unknown
  bool waiting() const { return wait_begin >= 0; }
};

struct Enqueue {
  int64_t ts;       // -1: none
  uint32_t thread;  // index into Timeline::threads
  uint64_t label;   // what the producer worked for when it enqueued
};

struct Dequeue {
  int64_t ts;
  // The latest enqueue of the same task pointer at or before ts, any thread
  // (pointers are reused once a task is freed; the latest one is the live one).
  Enqueue enq;
};

// A stretch of a thread's time in which its code did not run: the kernel
// preempted it (trace_format.h's PREEMPTED), or the recorder paused it to
// make its file or switch its ring (RECORDER): [out, in).
struct Preemption {
  int64_t out, in;
  bool recorder = false;
};

// A lock's release that some thread was waiting for (trace_format.h's
// RELEASE of a lock role), and a wait on a lock: what tiles a wait's blocked
// stretch by the threads that held the lock in turn.
struct LockRelease {
  int64_t ts;
  uint64_t obj;
};
struct LockWait {
  int64_t begin;  // the wait's begin (Segment::wait_begin)
  uint64_t obj;
};

struct ThreadTimeline {
  uint32_t pid = 0, tid = 0;
  int64_t first_ts = 0, last_ts = 0;
  int64_t drop_begin_ts = -1;  // records after this were lost
  Window<StackChange> stack;
  Window<Segment> segs;
  Window<Dequeue> dequeues;
  Window<Preemption> preempted;  // in order, disjoint; known once drained (trace_format.h)
  Window<LockRelease> releases;  // in time order
  // Sleeps (the thread blocked) to when it ran again (format 10's PREEMPTED
  // of a sleep), in order: a wake-up inside one left the thread runnable,
  // waiting for a core, until its end.
  Window<Preemption> slept;
  Window<LockWait> lock_waits;   // in time order
  // Condition waits that gave up a mutex and took it back (WAIT_MUTEX): the
  // wait's begin and the mutex, in time order.
  Window<LockWait> cond_mutexes;
  // Call sites this thread called in a row (SITE_RUN: a loop of calls with
  // nothing recorded between them), each once.
  std::vector<uint32_t> looped_sites;
};

struct IntervalInfo {
  uint64_t id = 0;
  int64_t begin_ts = -1, end_ts = -1;
  uint32_t begin_thread = 0, end_thread = 0;
  uint32_t type_label = 0, client_label = 0;
  bool abandoned = false;  // its window outgrew the limit; never walked
  bool counted = true;     // begun in a recording window's ON part (or recorded in full)
};

struct MergeCounters {
#define VPROF_MERGE_COUNTER(name, per_thread, level, what) uint64_t name = 0;
#include "analyzer/merge/merge_counters.def"
#undef VPROF_MERGE_COUNTER
};

// f(Counter) for every counter, in the list's order.
template <class F>
void for_each_counter(const MergeCounters &c, F &&f) {
#define VPROF_MERGE_COUNTER(name, per_thread, level, what) f(Counter{#name, c.name, Level::level, what});
#include "analyzer/merge/merge_counters.def"
#undef VPROF_MERGE_COUNTER
}

// What the walk reads: the window of every thread, the trie, the threads by tid.
// Where wakers released what their wakees waited for (WAKER_AT records):
// (waker tid, address), numbered as first seen. Few (a place per release
// site), shared by the threads' builders, which run in parallel.
class ReleasePlaces {
 public:
  struct Place {
    uint32_t tid;
    uint64_t pc;
  };
  // 1 + the place's index.
  uint32_t number(uint32_t tid, uint64_t pc);
  std::vector<Place> all() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_pc_;  // pc -> indices (one per tid)
  std::vector<Place> places_;
};

struct Timeline {
  StackTrie trie;
  std::vector<ThreadTimeline> threads;
  std::unordered_map<uint32_t, uint32_t> thread_by_tid;
  ReleasePlaces places;
  // Index of the thread with this tid, or -1.
  int64_t thread_of(uint32_t tid) const;
};

// Windowed recording (VPROF_SAMPLE; docs/run.md): what the windows covered,
// from the state changes the threads recorded (each change once).
struct Sampling {
  bool sampled = false;     // some thread wrote a WINDOW record
  uint64_t windows = 0;     // opened (OFF -> ON); closed at the cap: MergeCounters::windows_capped
  int64_t on_ns = 0;        // time ON: intervals begun in it count
  int64_t recording_ns = 0; // time ON or DRAIN: everything recorded
  int64_t span_ns = 0;      // the trace's first record to its last
};

struct MergeStats {
  uint64_t epochs = 0;
  uint64_t peak_window_entries = 0;  // segments + stack changes + dequeues held at once
  Sampling sampling;
};

class ThreadBuilder;

class Merger {
 public:
  // One source per thread stream, in (pid, tid) order. epoch_records: no
  // thread contributes more records than this to one epoch. max_window:
  // when the window holds more entries than this, the oldest open interval
  // is abandoned (counted, never walked) so that one interval that never
  // ends (a killed thread) cannot hold the rest of the trace in memory.
  // `shared`: a pool to work on (its size is the thread count); null: the
  // merge starts `threads` - 1 threads of its own.
  // `direct`: the manifest's direct calls (may be null); must outlive the merger.
  Merger(std::vector<trace::EventSource *> sources, unsigned threads, size_t epoch_records,
         uint64_t max_window = uint64_t{1} << 24, Workers *shared = nullptr,
         const DirectCalls *direct = nullptr);
  ~Merger();
  Merger(const Merger &) = delete;
  Merger &operator=(const Merger &) = delete;

  // Merges the next epoch and returns the intervals that completed in it, in
  // (end, id) order (begin and end known, end >= begin). False when the
  // trace is exhausted (the counters are then final).
  bool next_epoch(std::vector<IntervalInfo> &completed);
  // Drops what no open interval can reach (I6). Call after walking.
  void trim();
  const Timeline &timeline() const { return tl_; }
  // The merge's worker threads, for the caller's per-epoch work as well.
  Workers &workers() { return *pool_; }
  const MergeCounters &counters() const { return counters_; }
  const MergeStats &stats() const { return stats_; }
  // Intervals begun and never ended, or ended and never begun (final after
  // next_epoch returned false); inverted ones (end < begin).
  uint64_t incomplete() const { return incomplete_; }
  uint64_t inverted() const { return inverted_; }
  uint64_t abandoned() const { return abandoned_; }

 private:
  int64_t epoch_end();  // decodes every source ahead as far as it looks
  void fold_intervals(std::vector<IntervalInfo> &completed);
  void retire(const IntervalInfo &iv);  // counts what it ended as: incomplete, abandoned
  uint32_t pid_of(const IntervalInfo &iv) const;  // the process of its begin (of its end, if it has none)
  void sum_windows();                   // stats_.sampling, once every thread is read
  void resolve_dequeues();
  struct Scratch;  // per-epoch buffers, kept to reuse their memory

  std::vector<trace::EventSource *> sources_;
  std::unique_ptr<Workers> own_pool_;
  Workers *pool_;
  size_t epoch_records_;
  uint64_t max_window_;
  std::unique_ptr<Scratch> scratch_;
  Timeline tl_;
  std::vector<std::unique_ptr<ThreadBuilder>> builders_;
  std::vector<int64_t> ended_at_;  // by thread: its last record's time once all of it is read; else max
  std::vector<int64_t> last_fed_;  // by thread: its last record fed so far (max: none)
  MergeCounters counters_;
  MergeStats stats_;
  FlatMap<IntervalInfo> intervals_;  // every id seen: its latest interval
  FlatMap<Enqueue> last_enqueue_;     // task -> its latest enqueue
  // Open intervals by (begin, id), for the window start; closed ones (and
  // ones whose id was reused since) are skipped lazily. `iv` points at the
  // id's entry, which never moves: no lookup by id.
  struct Open {
    int64_t begin;
    uint64_t id;
    IntervalInfo *iv;
    bool operator>(const Open &o) const { return begin != o.begin ? begin > o.begin : id > o.id; }
  };
  std::priority_queue<Open, std::vector<Open>, std::greater<>> open_;
  int64_t end_ = std::numeric_limits<int64_t>::min();  // current epoch's end
  bool done_ = false;
  uint64_t incomplete_ = 0, inverted_ = 0, abandoned_ = 0;
};

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_MERGE_TIMELINE_H
