#include "analyzer/merge/timeline.h"

#include <algorithm>
#include <atomic>

namespace vprof::analyzer {

using trace::Event;
using trace::Kind;

StackTrie::StackTrie() {
  nodes_.push_back({0, FrameKind::Root, 0, 0});
  nodes_.push_back({0, FrameKind::Queue, 0, 0});
  nodes_.push_back({0, FrameKind::Untracked, 0, 0});
}

uint32_t StackTrie::child(uint32_t parent, FrameKind kind, uint32_t id) {
  uint64_t key = (uint64_t{parent} << 35) | (uint64_t(kind) << 32) | id;
  auto [it, inserted] = index_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({parent, kind, id, 0});
  return it->second;
}

int64_t StackTrie::find(uint32_t parent, FrameKind kind, uint32_t id) const {
  auto it = index_.find((uint64_t{parent} << 35) | (uint64_t(kind) << 32) | id);
  return it == index_.end() ? -1 : int64_t(it->second);
}

namespace {

// The trie in canonical order: depth first, children by (kind, id).
StackTrie ordered(const std::vector<StackNode> &nodes, std::vector<uint32_t> &old_to_new) {
  std::vector<std::vector<uint32_t>> children(nodes.size());
  for (uint32_t n = 3; n < nodes.size(); ++n) children[nodes[n].parent].push_back(n);
  StackTrie out;
  old_to_new.assign(nodes.size(), 0);
  for (uint32_t n = 0; n < 3; ++n) old_to_new[n] = n;
  std::vector<uint32_t> todo{StackTrie::kRoot};
  while (!todo.empty()) {
    uint32_t n = todo.back();
    todo.pop_back();
    if (n >= 3) {
      const StackNode &s = nodes[n];
      old_to_new[n] = out.child(old_to_new[s.parent], s.kind, s.id);
      out.at(old_to_new[n]).callee_fn = s.callee_fn;
      out.at(old_to_new[n]).not_direct = s.not_direct;
      out.at(old_to_new[n]).vouched = s.vouched;
    }
    auto &c = children[n];
    // Pushed in reverse so that the smallest (kind, id) is numbered first.
    std::sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
      return std::make_pair(nodes[a].kind, nodes[a].id) > std::make_pair(nodes[b].kind, nodes[b].id);
    });
    todo.insert(todo.end(), c.begin(), c.end());
  }
  return out;
}

}  // namespace

StackTrie StackTrie::canonical(std::vector<uint32_t> &old_to_new,
                               const DirectCalls *direct) const {
  // Fold first (into a trie in any order: a folded function's children join
  // the site's, and equal (parent, kind, id) merge), then number canonically.
  StackTrie folded;
  std::vector<uint32_t> to_folded(nodes_.size());
  for (uint32_t n = 0; n < 3; ++n) to_folded[n] = n;
  // Parents precede children (I3).
  for (uint32_t n = 3; n < nodes_.size(); ++n) {
    const StackNode &s = nodes_[n];
    const StackNode &p = nodes_[s.parent];
    bool direct_call = s.kind == FrameKind::Function && s.parent >= 3 &&
                       p.kind == FrameKind::Site && p.not_direct == 0 &&
                       !(direct && direct->through_a_pointer(p.id));
    if (direct_call) {
      to_folded[n] = to_folded[s.parent];
      continue;
    }
    uint32_t f = folded.child(to_folded[s.parent], s.kind, s.id);
    to_folded[n] = f;
    if (s.kind != FrameKind::Site) continue;
    // Two old sites meet in one node only through a folded recursive call
    // (f's site x both around f's call and inside it): any call of either
    // that was not direct makes the node a site of its own.
    StackNode &g = folded.at(f);
    g.not_direct += s.not_direct;
    // The smallest callee of the direct ones, whatever the order met in.
    if (s.callee_fn && (g.callee_fn == 0 || (s.vouched && !g.vouched)))
      g.callee_fn = s.callee_fn;
    else if (s.callee_fn && s.vouched == g.vouched)
      g.callee_fn = std::min(g.callee_fn, s.callee_fn);
    g.vouched = g.vouched || s.vouched;
  }
  // A site keeps its callee when every call was direct, or when the manifest
  // says it calls that function (its time is already in the site's node).
  for (uint32_t n = 3; n < folded.nodes_.size(); ++n) {
    StackNode &g = folded.nodes_[n];
    if (g.kind == FrameKind::Site && !g.vouched &&
        (g.not_direct || (direct && direct->through_a_pointer(g.id))))
      g.callee_fn = 0;
  }
  std::vector<uint32_t> folded_to_new;
  StackTrie out = ordered(folded.nodes_, folded_to_new);
  old_to_new.resize(nodes_.size());
  for (uint32_t n = 0; n < nodes_.size(); ++n) old_to_new[n] = folded_to_new[to_folded[n]];
  return out;
}

int64_t Timeline::thread_of(uint32_t tid) const {
  auto it = thread_by_tid.find(tid);
  return it == thread_by_tid.end() ? -1 : static_cast<int64_t>(it->second);
}

namespace {

struct Frame {
  FrameKind kind;
  uint32_t entries;  // Site: functions entered directly under it in this call
  bool foreign;      // Site: one of them cannot be its callee (DirectCalls)
  uint32_t id;
  uint32_t node;
};

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

}  // namespace

// What a thread saw of intervals and tasks in one epoch, folded into the
// shared tables in (time, stream) order at the epoch's end (I5).
struct IntervalEvent {
  bool begin;
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
  ThreadBuilder(ThreadTimeline &th, uint32_t index, const DirectCalls *direct)
      : th_(th), index_(index), direct_(direct) {}

  std::vector<IntervalEvent> iv_events;
  std::vector<EnqueueEvent> enqueues;
  std::vector<DequeueRef> dequeues;
  MergeCounters counters;

  // Consumes [b, e), every record before `until`; `last`: the stream ends there.
  void feed(const Event *b, const Event *e, int64_t until, bool last, int64_t drop_begin_ts) {
    if (finished_) return;
    if (provisional_) {
      th_.segs.pop_back();
      provisional_ = false;
    }
    first_new_change_ = th_.stack.size();  // changes from here on hold local node ids
    if (!started_ && b != e) {
      started_ = true;
      th_.first_ts = b->ts;
      th_.drop_begin_ts = drop_begin_ts;
      seg_begin_ = th_.first_ts;
      th_.stack.push_back({th_.first_ts, StackTrie::kRoot});
    }
    for (const Event *p = b; p != e; ++p) on_event(*p);
    if (b != e) th_.last_ts = std::prev(e)->ts;
    if (last) {
      finished_ = true;
      if (!started_) return;
      cut(th_.last_ts);
      counters.unclosed_frames += stack_.size();
    } else if (started_ && until > seg_begin_) {
      // The open segment, up to the epoch's end: replaced next epoch (I1).
      append_segment(seg_begin_, until);
      provisional_ = true;
    }
  }

  // Maps this thread's new local nodes into `g` and rewrites the epoch's
  // stack changes to shared node ids.
  void fold_trie(StackTrie &g) {
    for (uint32_t n = uint32_t(map_.size()); n < trie_.size(); ++n) {
      const StackNode &l = trie_[n];
      map_.push_back(n < 3 ? n : g.child(map_[l.parent], l.kind, l.id));
    }
    // callee_fn is set on a local node when a function is first entered under
    // the site, which may be in a later epoch than the node's creation.
    // Threads may disagree (counted at the end): the smallest id wins, so the
    // choice does not depend on which thread or epoch came first.
    for (uint32_t n : callee_set_) {
      const StackNode &l = trie_[n];
      StackNode &gn = g.at(map_[n]);
      // A callee the manifest vouches for names the site (a pointer site's
      // may also enter others); among equals the smallest id.
      if (gn.callee_fn == 0 || (l.vouched && !gn.vouched)) gn.callee_fn = l.callee_fn;
      else if (l.vouched == gn.vouched && gn.callee_fn != l.callee_fn) {
        gn.callee_fn = std::min(gn.callee_fn, l.callee_fn);
        if (!l.vouched) ++gn.not_direct;  // threads saw different functions under it
      }
      gn.vouched = gn.vouched || l.vouched;
    }
    callee_set_.clear();
    for (uint32_t n = 0; n < not_direct_.size(); ++n) {
      g.at(map_[n]).not_direct += not_direct_[n];
      not_direct_[n] = 0;
    }
    for (size_t i = first_new_change_; i < th_.stack.size(); ++i)
      th_.stack[i].node = map_[th_.stack[i].node];
    first_new_change_ = th_.stack.size();
  }

  // Local nodes whose callee is not the one the shared trie settled on.
  void count_callee_mismatches(const StackTrie &g) {
    for (uint32_t n = 3; n < trie_.size(); ++n)
      if (trie_[n].callee_fn && g[map_[n]].callee_fn != trie_[n].callee_fn)
        ++counters.callee_mismatches;
  }

 private:
  uint32_t top() const { return stack_.empty() ? StackTrie::kRoot : stack_.back().node; }

  // Appends write each field in place: a struct built aside and copied in is
  // reloaded with wider loads than it was stored with, and the store
  // forwarding fails (a stall per record; these were most of the merge).
  void append_segment(int64_t b, int64_t e) {
    Segment &g = th_.segs.emplace_back();
    g.begin = b;
    g.end = e;
    g.label = label_;
    g.wait_begin = wait_begin_ < 0 ? -1 : wait_begin_;
    g.wait_end = wait_begin_ < 0 ? 0 : kStillWaiting;
    g.release_ts = -1;
    g.waker_tid = 0;
  }

  void set_top(int64_t ts) {
    uint32_t n = top();
    // Changes of earlier epochs are older than ts (epochs partition time).
    if (th_.stack.size() > first_new_change_ && th_.stack.back().ts == ts) {
      th_.stack.back().node = n;  // several changes at one instant: the last one holds
    } else if (last_local_ != n) {
      StackChange &c = th_.stack.emplace_back();
      c.ts = ts;
      c.node = n;
    }
    last_local_ = n;
  }

  // Closes the current segment at ts (zero-length segments are dropped).
  void cut(int64_t ts) {
    if (ts > seg_begin_) append_segment(seg_begin_, ts);
    seg_begin_ = std::max(seg_begin_, ts);
  }

  // The trie's hash map costs more than everything else per record; stacks
  // repeat, so a small direct-mapped cache in front of it hits nearly always.
  uint32_t child(uint32_t parent, FrameKind kind, uint32_t id) {
    uint64_t key = (uint64_t{parent} << 35) | (uint64_t(kind) << 32) | id;
    CacheEntry &c = cache_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
    if (c.key != key + 1) c = {key + 1, trie_.child(parent, kind, id)};
    return c.node;
  }

  [[gnu::always_inline]] void push(FrameKind kind, uint32_t id, int64_t ts) {
    uint32_t node;
    if (kind == FrameKind::Function && !stack_.empty() && stack_.back().kind == FrameKind::Site) {
      // Entered directly inside a wrapped call: the site's callee, or (a
      // second entry, or only in some calls) code its uninstrumented callee
      // re-entered; canonical() tells them apart by the site's not_direct.
      // The manifest's direct callee shares the site's node right away.
      Frame &site = stack_.back();
      StackNode &sn = trie_.at(site.node);
      bool vouched = site.entries == 0 && direct_ && direct_->direct(site.id, id);
      node = vouched ? site.node : child(site.node, kind, id);
      ++site.entries;
      // A named call's callee re-entered this function, or an indirect site
      // reached another function than before: this call was not direct.
      if (!vouched && ((direct_ && direct_->calls_a_named_function(site.id)) ||
                       (sn.callee_fn != 0 && sn.callee_fn != id)))
        site.foreign = true;
      if (sn.callee_fn == 0 || (vouched && !sn.vouched)) {
        if (sn.callee_fn && sn.callee_fn != id) ++counters.callee_mismatches;
        sn.callee_fn = id;
        sn.vouched = sn.vouched || vouched;
        callee_set_.push_back(site.node);
      } else if (sn.callee_fn != id) {
        ++counters.callee_mismatches;
      }
    } else {
      node = child(top(), kind, id);
    }
    Frame &f = stack_.push();
    f.kind = kind;
    f.entries = 0;
    f.foreign = false;
    f.id = id;
    f.node = node;
    set_top(ts);
  }

  // A site's call ends (or is cut short by an outer exit): was it a direct
  // call of one function? Not counted once the thread lost records: a lost
  // enter would make a direct call look like none. Calls still open when the
  // data ends are not counted either (the process may have been killed).
  void close_call(const Frame &f, int64_t ts) {
    if (f.kind != FrameKind::Site || (f.entries == 1 && !f.foreign)) return;
    if (th_.drop_begin_ts >= 0 && ts >= th_.drop_begin_ts) return;
    if (f.node >= not_direct_.size()) not_direct_.resize(trie_.size(), 0);
    ++not_direct_[f.node];
  }

  [[gnu::always_inline]] void pop(FrameKind kind, uint32_t id, int64_t ts) {
    // Nearly always the innermost frame: no search.
    if (!stack_.empty() && stack_.back().kind == kind && stack_.back().id == id) {
      close_call(stack_.back(), ts);
      stack_.pop_back();
      set_top(ts);
      return;
    }
    pop_below(kind, id, ts);
  }

  // Match the innermost open frame of this kind and id; frames above it lost
  // their exits (longjmp, exceptions through unwrapped code). Rare: out of line.
  [[gnu::noinline]] void pop_below(FrameKind kind, uint32_t id, int64_t ts) {
    for (size_t i = stack_.size(); i-- > 0;) {
      if (stack_[i].kind == kind && stack_[i].id == id) {
        counters.missing_exits += stack_.size() - 1 - i;
        for (size_t j = i; j < stack_.size(); ++j) close_call(stack_[j], ts);
        stack_.resize(i);
        set_top(ts);
        return;
      }
    }
    ++counters.exits_without_enter;
  }

  void interval_event(bool begin, const Event &e, uint32_t type_label, uint32_t client_label) {
    IntervalEvent &v = iv_events.emplace_back();
    v.begin = begin;
    v.id = e.arg;
    v.ts = e.ts;
    v.thread = index_;
    v.type_label = type_label;
    v.client_label = client_label;
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
        interval_event(true, e, e.type_label, e.client_label);
        set_label(e.arg, e.ts);
        break;
      case Kind::IntervalEnd:
        interval_event(false, e, 0, 0);
        if (label_ == e.arg) set_label(0, e.ts);
        break;
      case Kind::IntervalJoin: set_label(e.arg, e.ts); break;
      case Kind::IntervalLeave: set_label(0, e.ts); break;
      case Kind::WaitBegin:
        if (wait_begin_ >= 0) {
          ++counters.nested_waits;  // keep the outer wait open: it is the one that blocks
          break;
        }
        cut(e.ts);
        wait_begin_ = e.ts;
        break;
      case Kind::WaitEnd: {
        if (wait_begin_ < 0) {
          ++counters.unmatched_wait_ends;
          break;
        }
        cut(e.ts);
        // Every piece of this wait (a label change inside it splits it) learns
        // how it ended.
        for (size_t i = th_.segs.size(); i-- > 0;) {
          Segment &g = th_.segs[i];
          if (g.wait_begin != wait_begin_ || g.wait_end != kStillWaiting) break;
          g.wait_end = e.ts;
          g.waker_tid = e.waker_tid;
          g.release_ts = e.waker_tid ? e.release_ts : -1;
        }
        wait_begin_ = -1;
        break;
      }
      case Kind::TaskEnqueue: {
        EnqueueEvent &q = enqueues.emplace_back();
        q.ts = e.ts;
        q.task = e.arg;
        q.thread = index_;
        q.label = label_;
        break;
      }
      case Kind::TaskDequeue: {
        DequeueRef &r = dequeues.emplace_back();
        r.ts = e.ts;
        r.task = e.arg;
        r.thread = index_;
        r.index = uint32_t(th_.dequeues.size());
        Dequeue &d = th_.dequeues.emplace_back();
        d.ts = e.ts;
        d.enq.ts = -1;
        break;
      }
      case Kind::DropBegin:
        // Read from a file, the drop is known when its record comes.
        if (th_.drop_begin_ts < 0) th_.drop_begin_ts = e.ts;
        break;
      case Kind::Preempted: {
        // Drained after the fact: the stretch lies before this record.
        int64_t out = e.release_ts, in = static_cast<int64_t>(e.arg);
        if (!th_.preempted.empty()) out = std::max(out, th_.preempted.back().in);
        if (in > out) th_.preempted.push_back({out, in});
        break;
      }
      case Kind::Release:
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
  const DirectCalls *direct_;
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
  int64_t seg_begin_ = 0;
  bool started_ = false, finished_ = false, provisional_ = false;
};

Merger::Merger(std::vector<trace::EventSource *> sources, unsigned threads, size_t epoch_records,
               uint64_t max_window, Workers *shared, const DirectCalls *direct)
    : sources_(std::move(sources)),
      own_pool_(shared ? nullptr : std::make_unique<Workers>(std::max(1u, threads))),
      pool_(shared ? shared : own_pool_.get()),
      epoch_records_(std::max<size_t>(1, epoch_records)), max_window_(max_window),
      scratch_(std::make_unique<Scratch>()) {
  const size_t n = sources_.size();
  tl_.threads.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    tl_.threads[i].pid = sources_[i]->pid();
    tl_.threads[i].tid = sources_[i]->tid();
    if (!tl_.thread_by_tid.emplace(sources_[i]->tid(), i).second) ++counters_.duplicate_tids;
    builders_.push_back(std::make_unique<ThreadBuilder>(tl_.threads[i], i, direct));
  }
}

Merger::~Merger() = default;

int64_t Merger::epoch_end() {
  // No thread contributes more than epoch_records_ records; when every thread
  // is within that of its end, the epoch takes all that is left.
  int64_t t = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  bool all = true;
  // Decoding is per source; the workers share it out.
  std::atomic<size_t> next{0};
  pool_->run([&](unsigned) {
    for (size_t i; (i = next.fetch_add(1)) < sources_.size();) sources_[i]->fill(epoch_records_ + 1);
  });
  for (trace::EventSource *src : sources_) {
    size_t n = src->size();
    if (n > epoch_records_) {
      all = false;
      t = std::min(t, src->data()[epoch_records_].ts);
    } else if (n) {
      last = std::max(last, src->data()[n - 1].ts);
    }
  }
  if (all) return last == std::numeric_limits<int64_t>::max() ? last : last + 1;
  return std::max(t, end_ + 1);  // records at one instant: still make progress
}

// Each builder's events of one kind are in time order (A1); gathered, they
// are put in (time, stream) order, what a stable sort of their concatenation
// gives, by merging the runs pairwise. The builders' vectors are emptied.
template <class T>
void gather_in_time_order(std::vector<std::unique_ptr<ThreadBuilder>> &builders,
                          std::vector<T> ThreadBuilder::*field, std::vector<T> &out,
                          std::vector<T> &tmp, std::vector<size_t> &bounds) {
  out.clear();
  bounds.assign(1, 0);
  for (auto &b : builders) {
    std::vector<T> &v = (*b).*field;
    if (v.empty()) continue;
    out.insert(out.end(), v.begin(), v.end());
    bounds.push_back(out.size());
    v.clear();
  }
  auto by_ts = [](const T &a, const T &b) { return a.ts < b.ts; };
  while (bounds.size() > 2) {
    tmp.resize(out.size());
    size_t w = 1;
    for (size_t r = 0; r + 1 < bounds.size(); r += 2) {
      const size_t lo = bounds[r], mid = bounds[r + 1];
      const size_t hi = r + 2 < bounds.size() ? bounds[r + 2] : mid;
      std::merge(out.begin() + ptrdiff_t(lo), out.begin() + ptrdiff_t(mid),
                 out.begin() + ptrdiff_t(mid), out.begin() + ptrdiff_t(hi),
                 tmp.begin() + ptrdiff_t(lo), by_ts);
      bounds[w++] = hi;
    }
    bounds.resize(w);
    out.swap(tmp);
  }
}

struct Merger::Scratch {
  std::vector<IntervalEvent> iv, iv_tmp;
  std::vector<EnqueueEvent> enq, enq_tmp;
  std::vector<DequeueRef> deq, deq_tmp;
  std::vector<size_t> bounds;
  std::vector<IntervalInfo *> begun;  // this epoch's begins, not ended when seen
};

void Merger::resolve_dequeues() {
  Scratch &sc = *scratch_;
  gather_in_time_order(builders_, &ThreadBuilder::enqueues, sc.enq, sc.enq_tmp, sc.bounds);
  gather_in_time_order(builders_, &ThreadBuilder::dequeues, sc.deq, sc.deq_tmp, sc.bounds);
  const std::vector<EnqueueEvent> &enq = sc.enq;
  const std::vector<DequeueRef> &deq = sc.deq;
  size_t k = 0;
  constexpr size_t kAhead = 8;  // FlatMap::prefetch
  for (size_t i = 0; i < std::min(kAhead, enq.size()); ++i) last_enqueue_.prefetch(enq[i].task);
  auto apply_next = [&] {
    if (k + kAhead < enq.size()) last_enqueue_.prefetch(enq[k + kAhead].task);
    const EnqueueEvent &e = enq[k++];
    last_enqueue_[e.task] = {e.ts, e.thread, e.label};
  };
  for (size_t i = 0; i < deq.size(); ++i) {
    const DequeueRef &d = deq[i];
    if (i + kAhead < deq.size()) last_enqueue_.prefetch(deq[i + kAhead].task);
    // The latest enqueue at or before the dequeue, any thread (ties: the last
    // stream in (pid, tid) order).
    while (k < enq.size() && enq[k].ts <= d.ts) apply_next();
    const Enqueue *q = last_enqueue_.find(d.task);
    if (!q) continue;
    tl_.threads[d.thread].dequeues[d.index].enq = *q;
  }
  while (k < enq.size()) apply_next();
}

void Merger::fold_intervals(std::vector<IntervalInfo> &completed) {
  Scratch &sc = *scratch_;
  gather_in_time_order(builders_, &ThreadBuilder::iv_events, sc.iv, sc.iv_tmp, sc.bounds);
  sc.begun.clear();
  constexpr size_t kAhead = 8;  // FlatMap::prefetch
  for (size_t i = 0; i < std::min(kAhead, sc.iv.size()); ++i) intervals_.prefetch(sc.iv[i].id);
  for (size_t i = 0; i < sc.iv.size(); ++i) {
    const IntervalEvent &e = sc.iv[i];
    if (i + kAhead < sc.iv.size()) intervals_.prefetch(sc.iv[i + kAhead].id);
    // Label 0 is "working for no interval" everywhere in the timeline, so an
    // interval with id 0 cannot be walked: it is counted, never analyzed.
    if (e.id == 0) {
      if (e.begin) ++counters_.zero_id_intervals;
      continue;
    }
    IntervalInfo &iv = *intervals_.try_emplace(e.id).first;
    if (e.begin && iv.end_ts >= 0 && !(iv.begin_ts < 0 && iv.end_ts == e.ts)) {
      // A begin after the id's end: the id was reused (a pooled request
      // object, a connection handle), a new interval from here on. (An end
      // at the same instant on another stream, ordered first, is its own.)
      retire(iv);
      iv = IntervalInfo{};
      ++counters_.reused_ids;
    }
    iv.id = e.id;
    if (e.begin) {
      if (iv.begin_ts >= 0) {  // begun again while open: which end is whose cannot be told
        ++counters_.duplicate_begins;
        continue;
      }
      iv.begin_ts = e.ts;
      iv.begin_thread = e.thread;
      iv.type_label = e.type_label;
      iv.client_label = e.client_label;
      if (iv.end_ts < 0) sc.begun.push_back(&iv);
    } else {
      if (iv.end_ts >= 0) {
        ++counters_.duplicate_ends;
        continue;
      }
      iv.end_ts = e.ts;
      iv.end_thread = e.thread;
    }
    if (iv.begin_ts < 0 || iv.end_ts < 0 || iv.abandoned) continue;
    if (iv.end_ts < iv.begin_ts) ++inverted_;
    else completed.push_back(iv);
  }
  // Only what is still open at the epoch's end holds the window (most
  // intervals end within the epoch they began in).
  for (IntervalInfo *iv : sc.begun)
    if (iv->end_ts < 0) open_.push({iv->begin_ts, iv->id, iv});
  std::sort(completed.begin(), completed.end(), [](const IntervalInfo &a, const IntervalInfo &b) {
    return a.end_ts != b.end_ts ? a.end_ts < b.end_ts : a.id < b.id;
  });
}

bool Merger::next_epoch(std::vector<IntervalInfo> &completed) {
  completed.clear();
  if (done_) return false;
  const int64_t until = epoch_end();
  const size_t n = builders_.size();
  struct Range {
    size_t from, to;
  };
  std::vector<Range> ranges(n);
  bool all_done = true;
  for (size_t i = 0; i < n; ++i) {
    trace::EventSource &src = *sources_[i];
    const Event *ev = src.data();
    const size_t size = src.size();
    // Gallop: the buffer may hold more than this epoch needs.
    auto before = [](const Event &e, int64_t v) { return e.ts < v; };
    size_t lo = 0, step = 64;
    while (lo + step < size && ev[lo + step].ts < until) {
      lo += step;
      step *= 2;
    }
    size_t to = size_t(std::lower_bound(ev + lo, ev + std::min(size, lo + step), until, before) - ev);
    ranges[i] = {0, to};
    all_done = all_done && to == size && src.exhausted();
  }
  // Every stream is decoded past `until`: what needs other streams can be done.
  for (trace::EventSource *src : sources_) src->settle(until);
  // Threads are independent until the epoch's end; hand them out to workers.
  std::atomic<size_t> next{0};
  pool_->run([&](unsigned) {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      const trace::EventSource &src = *sources_[i];
      bool last = ranges[i].to == src.size() && src.exhausted();
      builders_[i]->feed(src.data() + ranges[i].from, src.data() + ranges[i].to, until, last,
                         src.drop_begin_ts());
    }
  });
  for (size_t i = 0; i < n; ++i) sources_[i]->consume(ranges[i].to);
  for (auto &b : builders_) b->fold_trie(tl_.trie);
  resolve_dequeues();
  fold_intervals(completed);
  end_ = until;
  ++stats_.epochs;
  uint64_t held = 0;
  for (const ThreadTimeline &th : tl_.threads)
    held += th.segs.size() + th.stack.size() + th.dequeues.size();
  stats_.peak_window_entries = std::max(stats_.peak_window_entries, held);
  if (all_done) {
    done_ = true;
    for (auto &b : builders_) {
      b->count_callee_mismatches(tl_.trie);
      const MergeCounters &c = b->counters;
#define VPROF_MERGE_COUNTER(name, per_thread, what) \
  if (per_thread) counters_.name += c.name;
#include "analyzer/merge/merge_counters.def"
#undef VPROF_MERGE_COUNTER
    }
    for (size_t i = 0; i < intervals_.size(); ++i) retire(intervals_.value_at(i));
  }
  return true;
}

void Merger::retire(const IntervalInfo &iv) {
  if (iv.begin_ts < 0) ++counters_.end_without_begin;
  if (iv.abandoned) ++abandoned_;
  else if (iv.begin_ts < 0 || iv.end_ts < 0) ++incomplete_;
}

void Merger::trim() {
  while (true) {
    int64_t w = end_;
    while (!open_.empty()) {
      const Open &o = open_.top();
      const int64_t begin = o.begin;
      const IntervalInfo &iv = *o.iv;
      if (iv.end_ts >= 0 || iv.abandoned || iv.begin_ts != begin) {
        open_.pop();  // closed since (or its id reused by a later one)
        continue;
      }
      w = std::min(w, begin);
      break;
    }
    uint64_t held = 0;
    for (ThreadTimeline &th : tl_.threads) {
      size_t k = 0;  // the last segment may be provisional: kept
      while (k + 1 < th.segs.size() && th.segs[k].end <= w) ++k;
      th.segs.drop_front(k);
      k = 0;  // keep the change in force at w
      while (k + 1 < th.stack.size() && th.stack[k + 1].ts <= w) ++k;
      th.stack.drop_front(k);
      k = 0;
      while (k < th.dequeues.size() && th.dequeues[k].ts < w) ++k;
      th.dequeues.drop_front(k);
      k = 0;
      while (k < th.preempted.size() && th.preempted[k].in <= w) ++k;
      th.preempted.drop_front(k);
      held += th.segs.size() + th.stack.size() + th.dequeues.size();
    }
    if (held <= max_window_ || open_.empty()) return;
    // The oldest open interval holds too much: give it up.
    open_.top().iv->abandoned = true;
    open_.pop();
  }
}

}  // namespace vprof::analyzer
