// The merge's shared half (timeline.h: Merger): each epoch's end, the
// threads' builders (thread_builder.h) folded into the shared trie and tables.
#include "analyzer/merge/timeline.h"

#include <algorithm>
#include <atomic>

#include "analyzer/merge/thread_builder.h"

namespace vprof::analyzer {

using trace::Event;

uint32_t ReleasePlaces::number(uint32_t tid, uint64_t pc) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> &same = by_pc_[pc];
  for (uint32_t i : same)
    if (places_[i].tid == tid) return i + 1;
  same.push_back(uint32_t(places_.size()));
  places_.push_back({tid, pc});
  return uint32_t(places_.size());
}

std::vector<ReleasePlaces::Place> ReleasePlaces::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  return places_;
}

int64_t Timeline::thread_of(uint32_t tid) const {
  auto it = thread_by_tid.find(tid);
  return it == thread_by_tid.end() ? -1 : static_cast<int64_t>(it->second);
}

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
    builders_.push_back(std::make_unique<ThreadBuilder>(tl_.threads[i], i, direct, &tl_.places));
  }
  ended_at_.assign(n, std::numeric_limits<int64_t>::max());
  last_fed_.assign(n, std::numeric_limits<int64_t>::max());
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
    auto same_process = [&] { return pid_of(iv) == tl_.threads[e.thread].pid; };  // iv begun or ended
    const bool open = iv.begin_ts >= 0 && iv.end_ts < 0;
    // Is this event the id's next use (the interval before it retired)?
    // - A begin after the id's end: the id was reused (a pooled request
    //   object, a connection handle). (An end at the same instant on another
    //   stream, ordered first, is its own.) Counted when one process reuses
    //   it: another process's use (a later run of the same program in one
    //   trace) is only a new interval.
    // - A begin while open, where a thread of another process began the open
    //   one and its records ended before this begin (a run stopped with a
    //   transaction in flight, then the next run): the open one is
    //   incomplete. Processes that run at once and number their ids alike
    //   still read as duplicate begins: which end is whose cannot be told.
    // - Recorded in windows, one side of an interval goes unrecorded as a
    //   rule: one begun in a window's drain (never counted) ends after its
    //   thread stopped recording, one begun between windows ends in the
    //   next. So a begin while the id's uncounted interval is open, or an end
    //   after its end (the sampled demo: 7 counted intervals were ignored as
    //   duplicate begins).
    const bool reused = e.begin && iv.end_ts >= 0 && !(iv.begin_ts < 0 && iv.end_ts == e.ts);
    const bool next_use =
        reused || (e.begin && open && ended_at_[iv.begin_thread] < e.ts && !same_process()) ||
        (stats_.sampling.sampled && (e.begin ? open && !iv.counted : iv.end_ts >= 0));
    if (next_use) {
      if (reused && same_process()) ++counters_.reused_ids;
      retire(iv);
      iv = IntervalInfo{};
    }
    iv.id = e.id;
    if (e.begin) {
      if (iv.begin_ts >= 0) {  // begun again while open: which end is whose cannot be told
        ++counters_.duplicate_begins;
        continue;
      }
      iv.begin_ts = e.ts;
      iv.counted = e.counted;
      iv.begin_thread = e.thread;
      iv.type_label = e.type_label;
      iv.client_label = e.client_label;
      if (iv.end_ts < 0 && iv.counted) sc.begun.push_back(&iv);  // only what is walked holds the window
    } else {
      if (iv.end_ts >= 0) {
        ++counters_.duplicate_ends;
        continue;
      }
      iv.end_ts = e.ts;
      iv.end_thread = e.thread;
    }
    if (iv.begin_ts < 0 || iv.end_ts < 0 || iv.abandoned || !iv.counted) continue;
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
  for (size_t i = 0; i < n; ++i) {
    const trace::EventSource &src = *sources_[i];
    // A file source may say it is exhausted an epoch after its last record
    // was fed, with nothing left: the time is the last record fed.
    if (ranges[i].to > ranges[i].from) last_fed_[i] = src.data()[ranges[i].to - 1].ts;
    if (ranges[i].to == src.size() && src.exhausted()) ended_at_[i] = last_fed_[i];
    sources_[i]->consume(ranges[i].to);
  }
  for (auto &b : builders_) {
    b->fold_trie(tl_.trie);
    stats_.sampling.sampled = stats_.sampling.sampled || b->sampled;
  }
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
#define VPROF_MERGE_COUNTER(name, per_thread, level, what) \
  if (per_thread) counters_.name += c.name;
#include "analyzer/merge/merge_counters.def"
#undef VPROF_MERGE_COUNTER
    }
    for (size_t i = 0; i < intervals_.size(); ++i) retire(intervals_.value_at(i));
    sum_windows();
  }
  return true;
}

// The windows' coverage from the changes the threads made, in time order.
void Merger::sum_windows() {
  Sampling &s = stats_.sampling;
  if (!s.sampled) return;
  std::vector<ThreadBuilder::WindowChange> all;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t i = 0; i < builders_.size(); ++i) {
    all.insert(all.end(), builders_[i]->window_changes.begin(), builders_[i]->window_changes.end());
    const ThreadTimeline &th = tl_.threads[i];
    if (th.first_ts || th.last_ts) {  // the thread had records
      first = std::min(first, th.first_ts);
      last = std::max(last, th.last_ts);
    }
  }
  std::sort(all.begin(), all.end(), [](const auto &a, const auto &b) { return a.ts < b.ts; });
  if (last > first) s.span_ns = last - first;
  uint32_t state = VPROF_WINDOW_OFF;
  int64_t since = 0;
  for (const auto &c : all) {
    const uint32_t next = VPROF_WINDOW_STATE(c.arg);
    if (state == VPROF_WINDOW_ON) s.on_ns += c.ts - since;
    if (state != VPROF_WINDOW_OFF) s.recording_ns += c.ts - since;
    if (next == VPROF_WINDOW_ON && state == VPROF_WINDOW_OFF) ++s.windows;
    if (next == VPROF_WINDOW_OFF && VPROF_WINDOW_CAPPED(c.arg)) ++counters_.windows_capped;
    state = next;
    since = c.ts;
  }
  if (state != VPROF_WINDOW_OFF && last > since) {  // still open when the trace ends
    if (state == VPROF_WINDOW_ON) s.on_ns += last - since;
    s.recording_ns += last - since;
  }
}

uint32_t Merger::pid_of(const IntervalInfo &iv) const {
  return tl_.threads[iv.begin_ts >= 0 ? iv.begin_thread : iv.end_thread].pid;
}

void Merger::retire(const IntervalInfo &iv) {
  // Windowed: an interval begun outside a window's ON part, or whose begin
  // came while nothing recorded, is left out, not lost.
  if (!iv.counted) {
    ++counters_.intervals_left_out;
    return;
  }
  // An end whose begin came between windows: that begin is counted in the
  // thread's header (off_intervals), not here again.
  if (iv.begin_ts < 0 && stats_.sampling.sampled) return;
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
      k = 0;
      while (k < th.slept.size() && th.slept[k].in <= w) ++k;
      th.slept.drop_front(k);
      k = 0;
      while (k < th.releases.size() && th.releases[k].ts < w) ++k;
      th.releases.drop_front(k);
      // Of a window of waits, keep the wait that may hold w.
      auto trim_waits = [w](Window<LockWait> &waits) {
        size_t n = 0;
        while (n + 1 < waits.size() && waits[n + 1].begin <= w) ++n;
        waits.drop_front(n);
      };
      trim_waits(th.lock_waits);
      trim_waits(th.cond_mutexes);
      held += th.segs.size() + th.stack.size() + th.dequeues.size();
    }
    if (held <= max_window_ || open_.empty()) return;
    // The oldest open interval holds too much: give it up.
    open_.top().iv->abandoned = true;
    open_.pop();
  }
}

}  // namespace vprof::analyzer
