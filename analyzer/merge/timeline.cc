#include "analyzer/merge/timeline.h"

#include "analyzer/util/huge_pages.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

namespace vprof::analyzer {

using trace::Event;
using trace::Kind;

StackTrie::StackTrie() {
  nodes_.push_back({0, FrameKind::Root, 0, 0});
  nodes_.push_back({0, FrameKind::Queue, 0, 0});
  nodes_.push_back({0, FrameKind::Untracked, 0, 0});
}

uint32_t StackTrie::child(uint32_t parent, FrameKind kind, uint32_t id) {
  uint64_t key = (uint64_t{parent} << 34) | (uint64_t(kind) << 32) | id;
  auto [it, inserted] = index_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({parent, kind, id, 0});
  return it->second;
}

int64_t StackTrie::find(uint32_t parent, FrameKind kind, uint32_t id) const {
  auto it = index_.find((uint64_t{parent} << 34) | (uint64_t(kind) << 32) | id);
  return it == index_.end() ? -1 : int64_t(it->second);
}

int32_t ThreadTimeline::segment_before(int64_t t) const {
  // The segment with begin < t <= end; segments are contiguous (I1).
  auto it = std::lower_bound(segs.begin(), segs.end(), t,
                             [](const Segment &s, int64_t v) { return s.end < v; });
  if (it == segs.end() || it->begin >= t) return -1;
  return static_cast<int32_t>(it - segs.begin());
}

uint32_t ThreadTimeline::node_before(int64_t t) const {
  auto it = std::upper_bound(stack.begin(), stack.end(), t - 1,
                             [](int64_t v, const StackChange &c) { return v < c.ts; });
  if (it == stack.begin()) return StackTrie::kRoot;
  return std::prev(it)->node;
}

int64_t Timeline::thread_of(uint32_t tid) const {
  auto it = thread_by_tid.find(tid);
  return it == thread_by_tid.end() ? -1 : static_cast<int64_t>(it->second);
}

namespace {

struct Frame {
  FrameKind kind;
  bool absorbed;  // Site: a function entered directly under it shares its node
  uint32_t id;
  uint32_t node;
};

// What a thread saw of an interval, applied to the shared table afterwards in
// thread order (so the result does not depend on how many workers ran).
struct IntervalEvent {
  bool begin;
  uint64_t id;
  int64_t ts;
  uint32_t type_label, client_label;
};

// Builds one thread's timeline with thread-local tables only, so threads can
// be built in parallel; merge_into() then folds them into the Timeline.
class ThreadBuilder {
 public:
  ThreadBuilder(ThreadTimeline &th, uint32_t index) : th_(th), index_(index) {}

  void run(const trace::ThreadStream &s) {
    if (s.events.empty()) return;
    th_.first_ts = s.events.front().ts;
    th_.last_ts = s.events.back().ts;
    th_.drop_begin_ts = s.drop_begin_ts;
    seg_begin_ = th_.first_ts;
    // Upper bounds (one change per record): growing by doubling would touch
    // and copy every page several times, which dominates on large traces.
    reserve_huge(th_.stack, s.events.size() + 1);
    reserve_huge(th_.segs, s.events.size() + 1);
    // Exact sizes for the rest: doubling would copy and fault each array
    // several times; a counting pass over the records costs less.
    size_t n_iv = 0, n_wait = 0, n_enq = 0, n_deq = 0;
    for (const Event &e : s.events) {
      n_iv += e.kind == Kind::IntervalBegin || e.kind == Kind::IntervalEnd;
      n_wait += e.kind == Kind::WaitBegin;
      n_enq += e.kind == Kind::TaskEnqueue;
      n_deq += e.kind == Kind::TaskDequeue;
    }
    iv_events_.reserve(n_iv);
    th_.waits.reserve(n_wait);
    enqueues_.reserve(n_enq);
    enq_task_.reserve(n_enq);
    deq_.reserve(n_deq);
    th_.stack.push_back({th_.first_ts, StackTrie::kRoot});
    for (const Event &e : s.events) on_event(e);
    cut(th_.last_ts);
    counters_.unclosed_frames += stack_.size();
  }

  // Folds this thread's local trie, intervals, enqueues and dequeues into tl.
  size_t interval_events() const { return iv_events_.size(); }
  size_t enqueue_count() const { return enqueues_.size(); }

  void merge_into(Timeline &tl, std::unordered_map<uint64_t, size_t> &iv_index,
                  std::vector<uint64_t> &enq_task, std::vector<std::pair<uint64_t, Dequeue>> &deq) {
    // Local parents precede children (I3), so one pass maps every node.
    std::vector<uint32_t> map(trie_.size());
    for (uint32_t n = 0; n < 3; ++n) map[n] = n;
    for (uint32_t n = 3; n < trie_.size(); ++n) {
      const StackNode &l = trie_[n];
      map[n] = tl.trie.child(map[l.parent], l.kind, l.id);
      StackNode &g = tl.trie.at(map[n]);
      if (g.callee_fn == 0) g.callee_fn = l.callee_fn;
      else if (l.callee_fn && l.callee_fn != g.callee_fn) ++counters_.callee_mismatches;
    }
    for (StackChange &c : th_.stack) c.node = map[c.node];
    for (const IntervalEvent &e : iv_events_) {
      auto [it, inserted] = iv_index.emplace(e.id, tl.intervals.size());
      if (inserted) {
        tl.intervals.emplace_back();
        tl.intervals.back().id = e.id;
      }
      IntervalInfo &iv = tl.intervals[it->second];
      if (e.begin) {
        if (iv.begin_ts >= 0) {
          ++counters_.duplicate_begins;
          continue;
        }
        iv.begin_ts = e.ts;
        iv.begin_thread = index_;
        iv.type_label = e.type_label;
        iv.client_label = e.client_label;
      } else if (iv.end_ts >= 0) {
        ++counters_.duplicate_ends;
      } else {
        iv.end_ts = e.ts;
        iv.end_thread = index_;
      }
    }
    tl.enqueues.insert(tl.enqueues.end(), enqueues_.begin(), enqueues_.end());
    enq_task.insert(enq_task.end(), enq_task_.begin(), enq_task_.end());
    deq = std::move(deq_);
    MergeCounters &c = tl.counters;
    c.duplicate_begins += counters_.duplicate_begins;
    c.duplicate_ends += counters_.duplicate_ends;
    c.missing_exits += counters_.missing_exits;
    c.exits_without_enter += counters_.exits_without_enter;
    c.unclosed_frames += counters_.unclosed_frames;
    c.unmatched_wait_ends += counters_.unmatched_wait_ends;
    c.nested_waits += counters_.nested_waits;
    c.callee_mismatches += counters_.callee_mismatches;
  }

 private:
  uint32_t top() const { return stack_.empty() ? StackTrie::kRoot : stack_.back().node; }

  void set_top(int64_t ts) {
    uint32_t n = top();
    if (!th_.stack.empty() && th_.stack.back().ts == ts) {
      th_.stack.back().node = n;  // several changes at one instant: the last one holds
    } else if (th_.stack.back().node != n) {
      th_.stack.push_back({ts, n});
    }
  }

  // Closes the current segment at ts (zero-length segments are dropped).
  void cut(int64_t ts) {
    if (ts > seg_begin_) th_.segs.push_back({seg_begin_, ts, label_, wait_});
    seg_begin_ = std::max(seg_begin_, ts);
  }

  // The trie's hash map costs more than everything else per record; stacks
  // repeat, so a small direct-mapped cache in front of it hits nearly always.
  uint32_t child(uint32_t parent, FrameKind kind, uint32_t id) {
    uint64_t key = (uint64_t{parent} << 34) | (uint64_t(kind) << 32) | id;
    CacheEntry &c = cache_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
    if (c.key != key + 1) c = {key + 1, trie_.child(parent, kind, id)};
    return c.node;
  }

  void push(FrameKind kind, uint32_t id, int64_t ts) {
    uint32_t node;
    if (kind == FrameKind::Function && !stack_.empty() && stack_.back().kind == FrameKind::Site &&
        !stack_.back().absorbed) {
      node = stack_.back().node;
      StackNode &sn = trie_.at(node);
      if (sn.callee_fn == 0) sn.callee_fn = id;
      else if (sn.callee_fn != id) ++counters_.callee_mismatches;
      stack_.back().absorbed = true;
    } else {
      node = child(top(), kind, id);
    }
    stack_.push_back({kind, false, id, node});
    set_top(ts);
  }

  void pop(FrameKind kind, uint32_t id, int64_t ts) {
    // Match the innermost open frame of this kind and id; frames above it lost
    // their exits (longjmp, exceptions through unwrapped code).
    for (size_t i = stack_.size(); i-- > 0;) {
      if (stack_[i].kind == kind && stack_[i].id == id) {
        counters_.missing_exits += stack_.size() - 1 - i;
        bool absorbed = i > 0 && stack_[i].node == stack_[i - 1].node;
        stack_.resize(i);
        if (absorbed) stack_.back().absorbed = false;  // the site may call its function again
        set_top(ts);
        return;
      }
    }
    ++counters_.exits_without_enter;
  }

  void set_label(uint64_t label, int64_t ts) {
    if (label == label_) return;
    cut(ts);
    label_ = label;
  }

  void on_event(const Event &e) {
    switch (e.kind) {
      case Kind::FuncEnter: push(FrameKind::Function, static_cast<uint32_t>(e.arg), e.ts); break;
      case Kind::FuncExit: pop(FrameKind::Function, static_cast<uint32_t>(e.arg), e.ts); break;
      case Kind::SiteBegin: push(FrameKind::Site, static_cast<uint32_t>(e.arg), e.ts); break;
      case Kind::SiteEnd: pop(FrameKind::Site, static_cast<uint32_t>(e.arg), e.ts); break;
      case Kind::IntervalBegin:
        iv_events_.push_back({true, e.arg, e.ts, e.type_label, e.client_label});
        set_label(e.arg, e.ts);
        break;
      case Kind::IntervalEnd:
        iv_events_.push_back({false, e.arg, e.ts, 0, 0});
        if (label_ == e.arg) set_label(0, e.ts);
        break;
      case Kind::IntervalJoin: set_label(e.arg, e.ts); break;
      case Kind::IntervalLeave: set_label(0, e.ts); break;
      case Kind::WaitBegin:
        if (wait_ >= 0) {
          ++counters_.nested_waits;  // keep the outer wait open: it is the one that blocks
          break;
        }
        cut(e.ts);
        th_.waits.push_back({e.ts, e.ts, -1, 0});
        wait_ = static_cast<int32_t>(th_.waits.size() - 1);
        break;
      case Kind::WaitEnd: {
        if (wait_ < 0) {
          ++counters_.unmatched_wait_ends;
          break;
        }
        Wait &w = th_.waits[wait_];
        cut(e.ts);
        w.end = e.ts;
        w.waker_tid = e.waker_tid;
        w.release_ts = e.waker_tid ? e.release_ts : -1;
        wait_ = -1;
        break;
      }
      case Kind::TaskEnqueue:
        enqueues_.push_back({e.ts, index_, label_});
        enq_task_.push_back(e.arg);
        break;
      case Kind::TaskDequeue: deq_.push_back({e.arg, Dequeue{e.ts, -1}}); break;
      case Kind::Release:
      case Kind::DropBegin:
      case Kind::ThreadExit: break;
    }
  }

  struct CacheEntry {
    uint64_t key = 0;  // key + 1, so that 0 means empty
    uint32_t node = 0;
  };
  static constexpr int kCacheBits = 8;

  ThreadTimeline &th_;
  uint32_t index_;
  StackTrie trie_;  // local node ids until merge_into()
  MergeCounters counters_;
  std::vector<IntervalEvent> iv_events_;
  std::vector<Enqueue> enqueues_;
  std::vector<uint64_t> enq_task_;
  std::vector<std::pair<uint64_t, Dequeue>> deq_;
  std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(size_t{1} << kCacheBits);
  std::vector<Frame> stack_;
  uint64_t label_ = 0;
  int32_t wait_ = -1;
  int64_t seg_begin_ = 0;
};

}  // namespace

Timeline build_timeline(const trace::Trace &trace, unsigned threads) {
  Timeline tl;
  const size_t n = trace.threads.size();
  tl.threads.resize(n);
  std::vector<std::unique_ptr<ThreadBuilder>> builders(n);
  for (uint32_t i = 0; i < n; ++i) {
    const trace::ThreadStream &s = trace.threads[i];
    tl.threads[i].pid = s.pid;
    tl.threads[i].tid = s.tid;
    if (!tl.thread_by_tid.emplace(s.tid, i).second) ++tl.counters.duplicate_tids;
    builders[i] = std::make_unique<ThreadBuilder>(tl.threads[i], i);
  }
  // Threads are independent until the merge; hand them out to workers.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) builders[i]->run(trace.threads[i]);
  };
  unsigned nw = std::max(1u, std::min<unsigned>(threads, unsigned(std::max<size_t>(n, 1))));
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < nw; ++w) pool.emplace_back(work);
  work();
  for (auto &p : pool) p.join();

  size_t n_iv = 0, n_enq = 0;
  for (const auto &b : builders) {
    n_iv += b->interval_events();
    n_enq += b->enqueue_count();
  }
  std::unordered_map<uint64_t, size_t> iv_index;
  iv_index.reserve(n_iv / 2 + 1);  // a begin and an end per interval, usually
  tl.intervals.reserve(n_iv / 2 + 1);
  tl.enqueues.reserve(n_enq);
  std::vector<uint64_t> enq_task;  // task pointer of each enqueue
  enq_task.reserve(n_enq);
  std::vector<std::vector<std::pair<uint64_t, Dequeue>>> deqs(n);
  for (uint32_t i = 0; i < n; ++i) {
    builders[i]->merge_into(tl, iv_index, enq_task, deqs[i]);
    builders[i].reset();
  }
  for (const IntervalInfo &iv : tl.intervals)
    if (iv.begin_ts < 0) ++tl.counters.end_without_begin;
  // A dequeue takes the latest enqueue of the same pointer at or before it
  // (pointers are reused once a task is freed; the latest one is the live one).
  // One array sorted by (task, time) instead of a list per task: one
  // allocation, not one per task.
  std::vector<uint32_t> order(tl.enqueues.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  auto key = [&](uint32_t k) { return std::make_pair(enq_task[k], tl.enqueues[k].ts); };
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  for (uint32_t i = 0; i < deqs.size(); ++i) {
    tl.threads[i].dequeues.reserve(deqs[i].size());
    for (auto &[task, d] : deqs[i]) {
      auto pos = std::upper_bound(order.begin(), order.end(), std::make_pair(task, d.ts),
                                  [&](const std::pair<uint64_t, int64_t> &v, uint32_t k) {
                                    return v < key(k);
                                  });
      if (pos != order.begin() && enq_task[*std::prev(pos)] == task)
        d.enqueue = static_cast<int32_t>(*std::prev(pos));
      tl.threads[i].dequeues.push_back(d);
    }
  }
  return tl;
}

}  // namespace vprof::analyzer
