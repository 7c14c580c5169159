// Merge stage: turns the reader's per-thread event streams into per-thread
// timelines the critical-path walk can query by time, plus the cross-thread
// tables (intervals by id, task enqueues by pointer, threads by tid).
//
// Assumptions about the input (vprof::trace::Trace):
//   A1 each stream's events are in non-decreasing time (the reader clamps);
//   A2 all streams share one clock, so times compare across threads/processes;
//   A3 a tid names one thread for the whole trace (Linux tids are system-wide;
//      a tid seen in two streams is counted in duplicate_tids and the first
//      stream, in (pid, tid) order, wins edges that name it);
//   A4 interval ids are unique per run; a second begin of an id is counted and
//      the interval keeps its first (the thread that began it again still
//      works for it from then on).
// Invariants of the result:
//   I1 every thread's segments tile [first_ts, last_ts] in order, without gaps;
//      each has one label (interval id or 0) and is either running or inside
//      exactly one wait;
//   I2 every thread's stack changes are in non-decreasing time and the first
//      starts at first_ts; between changes the innermost frame is constant;
//   I3 every stack node's parent has a smaller index (node 0 is the empty
//      stack), so a reverse scan visits children before parents;
//   I4 broken nesting in the data (an exit with no matching enter, frames
//      never exited) never aborts the merge: it is repaired as documented in
//      docs/method.md and counted in MergeCounters;
//   I5 the result does not depend on the number of worker threads: threads are
//      built with local tries and folded in (pid, tid) order.
#ifndef VPROF_ANALYZER_MERGE_TIMELINE_H
#define VPROF_ANALYZER_MERGE_TIMELINE_H

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analyzer/read/trace_reader.h"

namespace vprof::analyzer {

// What a stack node stands for. Queue/Untracked are leaves hung under the
// root so that every nanosecond of a tiling lands on some node.
enum class FrameKind : uint8_t { Root, Function, Site, Queue, Untracked };

struct StackNode {
  uint32_t parent = 0;
  FrameKind kind = FrameKind::Root;
  uint32_t id = 0;         // function id or call-site id
  uint32_t callee_fn = 0;  // Site: the instrumented function entered directly under it (0: none)
};

// A trie of call stacks over all threads. A function entered directly inside a
// wrapped call site shares the site's node (the site *is* that call of the
// function, as in the paper's E(A) = E(B) + E(C) + E(body_A)).
class StackTrie {
 public:
  StackTrie();
  uint32_t child(uint32_t parent, FrameKind kind, uint32_t id);
  // The existing child, or -1.
  int64_t find(uint32_t parent, FrameKind kind, uint32_t id) const;
  const StackNode &operator[](uint32_t i) const { return nodes_[i]; }
  StackNode &at(uint32_t i) { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  static constexpr uint32_t kRoot = 0;
  static constexpr uint32_t kQueue = 1;
  static constexpr uint32_t kUntracked = 2;

 private:
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, uint32_t> index_;
};

struct StackChange {
  int64_t ts;
  uint32_t node;  // innermost frame from ts on
};

struct Wait {
  int64_t begin, end;
  int64_t release_ts;  // -1: no waker
  uint32_t waker_tid;
};

struct Segment {
  int64_t begin, end;
  uint64_t label;  // interval the thread works for; 0 = none
  int32_t wait;    // index into ThreadTimeline::waits; -1 = running
};

struct Dequeue {
  int64_t ts;
  int32_t enqueue;  // index into Timeline::enqueues; -1 = never enqueued in this trace
};

struct ThreadTimeline {
  uint32_t pid = 0, tid = 0;
  int64_t first_ts = 0, last_ts = 0;
  int64_t drop_begin_ts = -1;  // records after this were lost
  std::vector<StackChange> stack;
  std::vector<Segment> segs;
  std::vector<Wait> waits;
  std::vector<Dequeue> dequeues;
  // Index of the segment holding the nanosecond (t-1, t], or -1.
  int32_t segment_before(int64_t t) const;
  // Innermost stack node during (t-1, t].
  uint32_t node_before(int64_t t) const;
};

struct Enqueue {
  int64_t ts;
  uint32_t thread;  // index into Timeline::threads
  uint64_t label;   // what the producer worked for when it enqueued
};

struct IntervalInfo {
  uint64_t id = 0;
  int64_t begin_ts = -1, end_ts = -1;
  uint32_t begin_thread = 0, end_thread = 0;
  uint32_t type_label = 0, client_label = 0;
};

struct MergeCounters {
  uint64_t duplicate_tids = 0;
  uint64_t duplicate_begins = 0;
  uint64_t end_without_begin = 0;
  uint64_t duplicate_ends = 0;
  uint64_t missing_exits = 0;        // frames popped by an outer exit (longjmp-style)
  uint64_t exits_without_enter = 0;  // exit records matching no open frame
  uint64_t unclosed_frames = 0;      // frames still open when a thread's data ends
  uint64_t unmatched_wait_ends = 0;
  uint64_t nested_waits = 0;
  uint64_t callee_mismatches = 0;    // one call site entering different functions
};

struct Timeline {
  StackTrie trie;
  std::vector<ThreadTimeline> threads;
  std::unordered_map<uint32_t, uint32_t> thread_by_tid;
  std::vector<IntervalInfo> intervals;  // in order of first begin
  std::vector<Enqueue> enqueues;
  MergeCounters counters;
  // Index of the thread with this tid, or -1.
  int64_t thread_of(uint32_t tid) const;
};

// threads: workers for the per-thread pass (the result does not depend on it).
Timeline build_timeline(const trace::Trace &trace, unsigned threads = 1);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_MERGE_TIMELINE_H
