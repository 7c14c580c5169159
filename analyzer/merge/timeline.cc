#include "analyzer/merge/timeline.h"

#include <algorithm>

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

// Builds one thread's timeline; cross-thread facts go into the shared tables.
class ThreadBuilder {
 public:
  ThreadBuilder(Timeline &tl, uint32_t index, std::vector<std::pair<uint64_t, Dequeue>> &deq,
                std::unordered_map<uint64_t, size_t> &iv_index)
      : tl_(tl), th_(tl.threads[index]), index_(index), deq_(deq), iv_index_(iv_index) {}

  void run(const trace::ThreadStream &s) {
    if (s.events.empty()) return;
    th_.first_ts = s.events.front().ts;
    th_.last_ts = s.events.back().ts;
    th_.drop_begin_ts = s.drop_begin_ts;
    seg_begin_ = th_.first_ts;
    // Upper bounds (one change per record): growing by doubling would touch
    // and copy every page several times, which dominates on large traces.
    th_.stack.reserve(s.events.size() + 1);
    th_.segs.reserve(s.events.size() + 1);
    th_.stack.push_back({th_.first_ts, StackTrie::kRoot});
    for (const Event &e : s.events) on_event(e);
    cut(th_.last_ts);
    tl_.counters.unclosed_frames += stack_.size();
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

  void push(FrameKind kind, uint32_t id, int64_t ts) {
    uint32_t node;
    if (kind == FrameKind::Function && !stack_.empty() && stack_.back().kind == FrameKind::Site &&
        !stack_.back().absorbed) {
      node = stack_.back().node;
      StackNode &sn = tl_.trie.at(node);
      if (sn.callee_fn == 0) sn.callee_fn = id;
      else if (sn.callee_fn != id) ++tl_.counters.callee_mismatches;
      stack_.back().absorbed = true;
    } else {
      node = child(top(), kind, id);
    }
    stack_.push_back({kind, false, id, node});
    set_top(ts);
  }

  // The trie's hash map costs more than everything else per record; stacks
  // repeat, so a small direct-mapped cache in front of it hits nearly always.
  uint32_t child(uint32_t parent, FrameKind kind, uint32_t id) {
    uint64_t key = (uint64_t{parent} << 34) | (uint64_t(kind) << 32) | id;
    CacheEntry &c = cache_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
    if (c.key != key + 1) c = {key + 1, tl_.trie.child(parent, kind, id)};
    return c.node;
  }

  void pop(FrameKind kind, uint32_t id, int64_t ts) {
    // Match the innermost open frame of this kind and id; frames above it lost
    // their exits (longjmp, exceptions through unwrapped code).
    for (size_t i = stack_.size(); i-- > 0;) {
      if (stack_[i].kind == kind && stack_[i].id == id) {
        tl_.counters.missing_exits += stack_.size() - 1 - i;
        bool absorbed = i > 0 && stack_[i].node == stack_[i - 1].node;
        stack_.resize(i);
        if (absorbed) stack_.back().absorbed = false;  // the site may call its function again
        set_top(ts);
        return;
      }
    }
    ++tl_.counters.exits_without_enter;
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
      case Kind::IntervalBegin: {
        auto [it, inserted] = iv_index_.emplace(e.arg, tl_.intervals.size());
        if (!inserted && tl_.intervals[it->second].begin_ts >= 0) {
          ++tl_.counters.duplicate_begins;
          break;
        }
        if (inserted) tl_.intervals.emplace_back();
        IntervalInfo &iv = tl_.intervals[it->second];
        iv.id = e.arg;
        iv.begin_ts = e.ts;
        iv.begin_thread = index_;
        iv.type_label = e.type_label;
        iv.client_label = e.client_label;
        set_label(e.arg, e.ts);
        break;
      }
      case Kind::IntervalEnd: {
        auto [it, inserted] = iv_index_.emplace(e.arg, tl_.intervals.size());
        if (inserted) {
          tl_.intervals.emplace_back();
          tl_.intervals.back().id = e.arg;
        }
        IntervalInfo &iv = tl_.intervals[it->second];
        if (iv.end_ts >= 0) {
          ++tl_.counters.duplicate_ends;
        } else {
          iv.end_ts = e.ts;
          iv.end_thread = index_;
        }
        if (label_ == e.arg) set_label(0, e.ts);
        break;
      }
      case Kind::IntervalJoin: set_label(e.arg, e.ts); break;
      case Kind::IntervalLeave: set_label(0, e.ts); break;
      case Kind::WaitBegin:
        if (wait_ >= 0) {
          ++tl_.counters.nested_waits;  // keep the outer wait open: it is the one that blocks
          break;
        }
        cut(e.ts);
        th_.waits.push_back({e.ts, e.ts, -1, 0});
        wait_ = static_cast<int32_t>(th_.waits.size() - 1);
        break;
      case Kind::WaitEnd: {
        if (wait_ < 0) {
          ++tl_.counters.unmatched_wait_ends;
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
        tl_.enqueues.push_back({e.ts, index_, label_});
        enq_ptr_.push_back(e.arg);
        break;
      case Kind::TaskDequeue: deq_.push_back({e.arg, Dequeue{e.ts, -1}}); break;
      case Kind::Release:
      case Kind::DropBegin:
      case Kind::ThreadExit: break;
    }
  }

 public:
  std::vector<uint64_t> enq_ptr_;  // task pointer of each enqueue this thread made

 private:
  Timeline &tl_;
  ThreadTimeline &th_;
  uint32_t index_;
  std::vector<std::pair<uint64_t, Dequeue>> &deq_;
  std::unordered_map<uint64_t, size_t> &iv_index_;
  struct CacheEntry {
    uint64_t key = 0;  // key + 1, so that 0 means empty
    uint32_t node = 0;
  };
  static constexpr int kCacheBits = 8;
  std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(size_t{1} << kCacheBits);
  std::vector<Frame> stack_;
  uint64_t label_ = 0;
  int32_t wait_ = -1;
  int64_t seg_begin_ = 0;
};

}  // namespace

Timeline build_timeline(const trace::Trace &trace) {
  Timeline tl;
  tl.threads.resize(trace.threads.size());
  std::unordered_map<uint64_t, size_t> iv_index;
  std::vector<std::vector<std::pair<uint64_t, Dequeue>>> deqs(trace.threads.size());
  std::unordered_map<uint64_t, std::vector<uint32_t>> enq_by_task;
  for (uint32_t i = 0; i < trace.threads.size(); ++i) {
    const trace::ThreadStream &s = trace.threads[i];
    tl.threads[i].pid = s.pid;
    tl.threads[i].tid = s.tid;
    if (!tl.thread_by_tid.emplace(s.tid, i).second) ++tl.counters.duplicate_tids;
    size_t first_enq = tl.enqueues.size();
    ThreadBuilder b(tl, i, deqs[i], iv_index);
    b.run(s);
    for (size_t k = 0; k < b.enq_ptr_.size(); ++k)
      enq_by_task[b.enq_ptr_[k]].push_back(static_cast<uint32_t>(first_enq + k));
  }
  for (const IntervalInfo &iv : tl.intervals)
    if (iv.begin_ts < 0) ++tl.counters.end_without_begin;
  // A dequeue takes the latest enqueue of the same pointer at or before it
  // (pointers are reused once a task is freed; the latest one is the live one).
  for (auto &[task, list] : enq_by_task)
    std::sort(list.begin(), list.end(),
              [&](uint32_t a, uint32_t b) { return tl.enqueues[a].ts < tl.enqueues[b].ts; });
  for (uint32_t i = 0; i < deqs.size(); ++i) {
    for (auto &[task, d] : deqs[i]) {
      auto it = enq_by_task.find(task);
      if (it != enq_by_task.end()) {
        auto &list = it->second;
        auto pos = std::upper_bound(list.begin(), list.end(), d.ts,
                                    [&](int64_t v, uint32_t e) { return v < tl.enqueues[e].ts; });
        if (pos != list.begin()) d.enqueue = static_cast<int32_t>(*std::prev(pos));
      }
      tl.threads[i].dequeues.push_back(d);
    }
  }
  return tl;
}

}  // namespace vprof::analyzer
