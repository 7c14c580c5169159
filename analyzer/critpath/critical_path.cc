#include "analyzer/critpath/critical_path.h"

#include "analyzer/util/huge_pages.h"

#include <algorithm>
#include <map>
#include <thread>
#include <tuple>

namespace vprof::analyzer {
namespace {

// Walks one interval at a time; one Walker per worker thread.
class Walker {
 public:
  Walker(const Timeline &tl, const PathOptions &opt) : tl_(tl), opt_(opt) {}

  // Tiles interval `iv` into `acc` (one slot per trie node). Returns false
  // when the path crossed lost data.
  bool walk(const IntervalInfo &iv, double *acc) {
    s_ = iv.id;
    acc_ = acc;
    lossy_ = false;
    gap_ = false;
    int64_t j = cover(iv.end_thread, iv.begin_ts, iv.end_ts, 0);
    if (j > iv.begin_ts) {
      // Nothing on the path explains [begin, j): no thread worked for the
      // interval there and no created-by edge leads to one.
      acc_[StackTrie::kUntracked] += double(j - iv.begin_ts);
      gap_ = true;
    }
    return !lossy_;
  }

  bool gap() const { return gap_; }
  PathCounters counters;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t>, int64_t> blame;

 private:
  // Attributes [a, b) on thread th through its stack timeline.
  void run_stack(const ThreadTimeline &th, int64_t a, int64_t b) {
    if (a >= b) return;
    if (th.drop_begin_ts >= 0 && b > th.drop_begin_ts) lossy_ = true;
    auto it = std::upper_bound(th.stack.begin(), th.stack.end(), a,
                               [](int64_t v, const StackChange &c) { return v < c.ts; });
    int64_t t = a;
    uint32_t node = it == th.stack.begin() ? StackTrie::kRoot : std::prev(it)->node;
    while (t < b) {
      int64_t next = it == th.stack.end() ? b : std::min(b, it->ts);
      acc_[node] += double(next - t);
      t = next;
      if (it != th.stack.end()) node = (it++)->node;
    }
  }

  uint64_t label_at(const ThreadTimeline &th, int64_t t) const {
    int32_t i = th.segment_before(t);
    return i < 0 ? 0 : th.segs[i].label;
  }

  // The latest dequeue on th in [lo, t] of a task enqueued while working for s.
  const Dequeue *created_by(const ThreadTimeline &th, int64_t lo, int64_t t) const {
    auto it = std::upper_bound(th.dequeues.begin(), th.dequeues.end(), t,
                               [](int64_t v, const Dequeue &d) { return v < d.ts; });
    while (it != th.dequeues.begin()) {
      --it;
      if (it->ts < lo) break;
      if (it->enqueue >= 0) {
        const Enqueue &e = tl_.enqueues[it->enqueue];
        if (e.label == s_ && e.ts <= it->ts) return &*it;
      }
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
      int32_t si = hint >= 0 ? hint : th->segment_before(t);
      hint = -1;
      if (si < 0) return t;  // before the thread's first record
      const Segment &seg = th->segs[si];
      if (seg.label != s_) {
        // The thread took up s here; follow the created-by edge if one exists.
        const Dequeue *d = created_by(*th, std::max(lo, seg.begin), t);
        if (!d) return t;
        const Enqueue &e = tl_.enqueues[d->enqueue];
        run_stack(*th, d->ts, t);  // picked the task up, not yet joined: dispatch
        int64_t q = std::max(lo, e.ts);
        acc_[StackTrie::kQueue] += double(d->ts - q);
        ++counters.created_by_edges_followed;
        // Edges at one instant can form a cycle (A enqueues what B dequeues and
        // back, all at time t); without progress in time, stop following.
        if (q == t && ++stalled > 16) return t;
        if (q < t) stalled = 0;
        t = q;
        ti = e.thread;
        continue;
      }
      int64_t a = std::max(lo, seg.begin);
      if (seg.wait < 0) {
        run_stack(*th, a, t);
        t = a;
        hint = si - 1;
        continue;
      }
      const Wait &w = th->waits[seg.wait];
      int64_t wk = w.waker_tid ? tl_.thread_of(w.waker_tid) : -1;
      bool released_during_wait = wk >= 0 && uint32_t(wk) != ti && w.release_ts >= w.begin;
      if (released_during_wait) {
        const ThreadTimeline &wt = tl_.threads[wk];
        uint64_t wl = label_at(wt, w.release_ts);
        int64_t r = std::min(w.release_ts, t);
        if (wl == s_) {
          if (r > a && depth < opt_.max_wake_depth) {
            // The waker worked for s: the path moves to it for the blocked
            // stretch; the wake-up latency [r, t) stays with the wait.
            run_stack(*th, r, t);
            ++counters.wake_edges_followed;
            int64_t j = cover(uint32_t(wk), a, r, depth + 1);
            run_stack(*th, a, j);
            t = a;
            hint = si - 1;
            continue;
          }
          if (r > a) ++counters.depth_limit_hits;
        } else {
          // The holder/signaller worked for someone else: the time stays with
          // the wait call site and the waker is blamed.
          blame[{th->node_before(t), w.waker_tid, wt.node_before(w.release_ts), wl}] += t - a;
        }
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
  double *acc_ = nullptr;
  bool lossy_ = false, gap_ = false;
};

}  // namespace

CriticalPaths compute_critical_paths(const Timeline &tl, const PathOptions &opt) {
  CriticalPaths out;
  out.nodes = tl.trie.size();
  std::vector<const IntervalInfo *> todo;
  for (const IntervalInfo &iv : tl.intervals) {
    if (iv.begin_ts < 0 || iv.end_ts < 0) {
      ++out.counters.incomplete_intervals;
    } else if (iv.end_ts < iv.begin_ts) {
      ++out.counters.inverted_intervals;
    } else {
      todo.push_back(&iv);
    }
  }
  // Rows are computed in place, then compacted to drop intervals whose path
  // was lossy or whose tiling failed.
  std::vector<double> self;
  reserve_huge(self, todo.size() * out.nodes);
  self.resize(todo.size() * out.nodes, 0.0);
  std::vector<uint8_t> keep(todo.size(), 0);
  unsigned nw = std::max(1u, std::min<unsigned>(opt.threads, std::max<size_t>(todo.size(), 1)));
  std::vector<Walker> walkers(nw, Walker(tl, opt));
  auto work = [&](unsigned w) {
    Walker &wk = walkers[w];
    for (size_t i = w; i < todo.size(); i += nw) {
      double *acc = self.data() + i * out.nodes;
      bool ok = wk.walk(*todo[i], acc);
      if (wk.gap()) ++wk.counters.path_gaps;
      if (!ok) {
        ++wk.counters.lossy_intervals;
        continue;
      }
      double sum = 0;
      for (size_t n = 0; n < out.nodes; ++n) sum += acc[n];
      if (sum != double(todo[i]->end_ts - todo[i]->begin_ts)) {
        ++wk.counters.tiling_violations;
        continue;
      }
      keep[i] = 1;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < nw; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto &p : pool) p.join();

  size_t kept = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!keep[i]) continue;
    if (kept != i)
      std::copy_n(self.begin() + i * out.nodes, out.nodes, self.begin() + kept * out.nodes);
    const IntervalInfo &iv = *todo[i];
    out.rows.push_back({iv.id, iv.begin_ts, iv.end_ts - iv.begin_ts, iv.type_label, iv.client_label});
    ++kept;
  }
  self.resize(kept * out.nodes);
  out.self = std::move(self);

  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t>, int64_t> blame;
  for (Walker &w : walkers) {
    PathCounters &c = w.counters;
    out.counters.lossy_intervals += c.lossy_intervals;
    out.counters.tiling_violations += c.tiling_violations;
    out.counters.path_gaps += c.path_gaps;
    out.counters.wake_edges_followed += c.wake_edges_followed;
    out.counters.created_by_edges_followed += c.created_by_edges_followed;
    out.counters.depth_limit_hits += c.depth_limit_hits;
    for (auto &[k, ns] : w.blame) blame[k] += ns;
  }
  for (auto &[k, ns] : blame)
    out.blame.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), ns});
  std::sort(out.blame.begin(), out.blame.end(),
            [](const Blame &a, const Blame &b) { return a.ns > b.ns; });
  return out;
}

}  // namespace vprof::analyzer
