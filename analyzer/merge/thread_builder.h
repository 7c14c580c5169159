// The merge's per-thread half, internal to analyzer/merge: ThreadBuilder
// folds one thread's records of an epoch into its ThreadTimeline with a trie
// of its own, so that threads are built in parallel; the Merger (merger.cc)
// maps each builder's nodes into the shared trie and orders what crosses
// threads (I5, timeline.h).
#ifndef VPROF_ANALYZER_MERGE_THREAD_BUILDER_H
#define VPROF_ANALYZER_MERGE_THREAD_BUILDER_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analyzer/merge/timeline.h"

namespace vprof::analyzer {

// What a thread saw of intervals and tasks in one epoch, folded into the
// shared tables in (time, stream) order at the epoch's end (I5).
struct IntervalEvent {
  bool begin;
  bool counted;  // a begin in the ON part of a recording window, or recorded in full
  uint64_t id;
  int64_t ts;
  uint32_t thread;
  uint32_t type_label, client_label;
};

struct EnqueueEvent {
  int64_t ts;
  uint64_t task;
  uint32_t thread;
  uint64_t label;
};

struct DequeueRef {
  int64_t ts;
  uint64_t task;
  uint32_t thread;
  uint32_t index;  // into the thread's dequeue window
};

// Builds one thread's timeline with a thread-local trie, so threads can be
// built in parallel; fold_trie() maps its nodes into the shared trie.
class ThreadBuilder {
 public:
  ThreadBuilder(ThreadTimeline &th, uint32_t index, const DirectCalls *direct, ReleasePlaces *places)
      : th_(th), index_(index), direct_(direct), places_(places) {}

  std::vector<IntervalEvent> iv_events;
  std::vector<EnqueueEvent> enqueues;
  std::vector<DequeueRef> dequeues;
  MergeCounters counters;
  // Windowed recording: the state changes this thread made (one record per
  // change, trace_format.h), and whether it saw any WINDOW record.
  struct WindowChange {
    int64_t ts;
    uint64_t arg;
  };
  std::vector<WindowChange> window_changes;
  bool sampled = false;

  // Consumes [b, e), every record before `until`; `last`: the stream ends there.
  void feed(const trace::Event *b, const trace::Event *e, int64_t until, bool last,
            int64_t drop_begin_ts);
  // Maps this thread's new local nodes into `g` and rewrites the epoch's
  // stack changes to shared node ids.
  void fold_trie(StackTrie &g);
  // Local nodes whose callee is not the one the shared trie settled on.
  void count_callee_mismatches(const StackTrie &g);

 private:
  struct Frame {
    FrameKind kind;
    uint32_t entries;  // Site: functions entered directly under it in this call
    bool foreign;      // Site: one of them cannot be its callee (DirectCalls)
    uint32_t id;
    uint32_t node;
  };

  uint32_t enter_site(Frame &site, uint32_t id);

  // A thread's open frames. Not a std::vector: its push_back, called with a
  // Frame built in place, measured 6% of the whole analysis (an out-of-line call
  // that stores the frame and reloads it); this one is written field by field.
  class FrameStack {
   public:
    Frame &push() {
      if (__builtin_expect(n_ == frames_.size(), 0)) grow();
      return frames_[n_++];
    }
    void pop_back() { --n_; }
    void resize(size_t n) { n_ = n; }  // only to shrink
    bool empty() const { return n_ == 0; }
    size_t size() const { return n_; }
    Frame &back() { return frames_[n_ - 1]; }
    const Frame &back() const { return frames_[n_ - 1]; }
    Frame &operator[](size_t i) { return frames_[i]; }

   private:
    [[gnu::noinline]] void grow() { frames_.resize(2 * frames_.size() + 16); }
    std::vector<Frame> frames_;
    size_t n_ = 0;
  };

  uint32_t top() const { return stack_.empty() ? StackTrie::kRoot : stack_.back().node; }
  // The per-record steps, defined in thread_builder.cc, the one file that
  // calls them. They are inline as they were when defined in this class, so
  // that feed() keeps them in one loop.
  inline void append_segment(int64_t b, int64_t e);
  inline void set_top(int64_t ts);
  inline void cut(int64_t ts);
  inline uint32_t child(uint32_t parent, FrameKind kind, uint32_t id);
  [[gnu::always_inline]] inline void push(FrameKind kind, uint32_t id, int64_t ts);
  inline void close_call(const Frame &f, int64_t ts);
  [[gnu::always_inline]] inline void pop(FrameKind kind, uint32_t id, int64_t ts);
  [[gnu::noinline]] void pop_below(FrameKind kind, uint32_t id, int64_t ts);
  inline void interval_event(bool begin, const trace::Event &e, uint32_t type_label,
                             uint32_t client_label);
  inline void set_label(uint64_t label, int64_t ts);
  inline void on_event(const trace::Event &e);
  void add_off_cpu(Preemption p);
  void add_sleep(Preemption p);
  void on_window(const trace::Event &e);

  struct CacheEntry {
    uint64_t key = 0;  // key + 1, so that 0 means empty
    uint32_t node = 0;
  };
  static constexpr int kCacheBits = 8;

  ThreadTimeline &th_;
  uint32_t index_;
  const DirectCalls *direct_;
  ReleasePlaces *places_;
  // The last wait's waker, until its WAKER_AT (which comes right after it).
  uint32_t last_waker_ = 0;
  int64_t last_wait_begin_ = -1;
  StackTrie trie_;             // local node ids
  std::vector<uint32_t> map_;  // local node -> shared node
  std::vector<uint32_t> callee_set_;
  std::vector<uint64_t> not_direct_;  // per local node, since the last fold
  std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(size_t{1} << kCacheBits);
  FrameStack stack_;
  size_t first_new_change_ = 0;
  uint32_t last_local_ = StackTrie::kRoot;  // innermost local node last pushed to th_.stack
  uint64_t label_ = 0;
  int64_t wait_begin_ = -1;
  uint32_t waits_open_ = 0;  // WAIT_BEGINs not yet ended, nested ones included
  uint32_t window_state_ = VPROF_WINDOW_ON;  // recorded in full: every interval counts
  int64_t seg_begin_ = 0;
  bool started_ = false, finished_ = false, provisional_ = false;
};

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_MERGE_THREAD_BUILDER_H
