#include "analyzer/report/perfetto_capture.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace vprof::analyzer {
namespace {

// th's steps over [a, b): a step at a, then one wherever its frame, its
// interval or its wait changes. The window is in memory (I6: an open
// interval keeps every thread's data from its begin on).
// The first segment of th that ends after t, and the stack change in force
// at t (or the first one, when none is yet).
const Segment *segment_after(const ThreadTimeline &th, int64_t t) {
  return std::upper_bound(th.segs.begin(), th.segs.end(), t,
                          [](int64_t v, const Segment &g) { return v < g.end; });
}
const StackChange *change_at(const ThreadTimeline &th, int64_t t) {
  const StackChange *c = std::upper_bound(th.stack.begin(), th.stack.end(), t,
                                          [](int64_t v, const StackChange &x) { return v < x.ts; });
  return c == th.stack.begin() ? c : std::prev(c);
}

// th's steps over [a, b): a step at a, then one wherever its frame, its
// interval or its wait changes. The window is in memory (I6: an open
// interval keeps every thread's data from its begin on).
std::vector<ThreadStep> steps_of(const ThreadTimeline &th, int64_t a, int64_t b) {
  const StackChange *first_change = change_at(th, a);
  const Segment *first_seg = segment_after(th, a);
  std::vector<int64_t> at{a};
  for (const StackChange *c = first_change; c != th.stack.end() && c->ts < b; ++c)
    if (c->ts > a) at.push_back(c->ts);
  for (const Segment *g = first_seg; g != th.segs.end() && g->begin < b; ++g) {
    if (g->begin > a) at.push_back(g->begin);
    if (g->end < b) at.push_back(g->end);
  }
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  std::vector<ThreadStep> out;
  const StackChange *sc = first_change;
  const Segment *g = first_seg;
  uint32_t node = StackTrie::kRoot;
  for (int64_t t : at) {
    for (; sc != th.stack.end() && sc->ts <= t; ++sc) node = sc->node;
    while (g != th.segs.end() && g->end <= t) ++g;
    ThreadStep s{t, node, 0, -1, 0};
    if (g != th.segs.end() && g->begin <= t) {
      s.label = g->label;
      s.wait_begin = g->wait_begin;
      s.waker_tid = g->waiting() ? g->waker_tid : 0;
    }
    if (out.empty() || !(out.back() == s)) out.push_back(s);
  }
  return out;
}

// The windows of one thread, sorted and joined where they overlap or touch:
// the later window's steps take over where the earlier one ends (both are
// the same timeline, so they agree where they overlap).
std::vector<ThreadWindow> join(std::vector<ThreadWindow> w) {
  std::sort(w.begin(), w.end(),
            [](const ThreadWindow &x, const ThreadWindow &y) { return x.begin < y.begin; });
  std::vector<ThreadWindow> out;
  for (ThreadWindow &x : w) {
    if (out.empty() || x.begin > out.back().end) {
      out.push_back(std::move(x));
      continue;
    }
    ThreadWindow &y = out.back();
    if (x.end <= y.end) continue;
    // x's state at y.end, then its later steps.
    auto later = std::upper_bound(x.steps.begin(), x.steps.end(), y.end,
                                  [](int64_t t, const ThreadStep &s) { return t < s.ts; });
    ThreadStep at = *std::prev(later);
    at.ts = y.end;
    if (!(y.steps.back() == at)) y.steps.push_back(at);
    for (; later != x.steps.end(); ++later)
      if (!(y.steps.back() == *later)) y.steps.push_back(*later);
    y.end = x.end;
  }
  return out;
}

bool inside(const std::vector<ThreadWindow> &w, int64_t t) {
  auto it = std::upper_bound(w.begin(), w.end(), t,
                             [](int64_t v, const ThreadWindow &x) { return v < x.begin; });
  return it != w.begin() && t <= std::prev(it)->end;
}

}  // namespace

Capture capture_windows(const std::vector<trace::EventSource *> &sources,
                        const std::vector<ChosenInterval> &chosen, unsigned threads) {
  Capture cap;
  // By (id, begin): an id may name several intervals, one after another.
  std::map<std::pair<uint64_t, int64_t>, size_t> wanted;
  for (size_t i = 0; i < chosen.size(); ++i) wanted.emplace(std::make_pair(chosen[i].id, chosen[i].begin_ts), i);
  std::vector<std::vector<ThreadWindow>> windows(sources.size());
  // Edges seen in the windows, by their waiter's end: two overlapping
  // windows see the same ones.
  std::map<std::tuple<uint32_t, int64_t, bool>, PathEdge> edges;
  std::vector<CapturedInterval> found;
  Merger merger(sources, std::max(1u, threads), 1024);
  const Timeline &tl = merger.timeline();
  PathOptions po;
  std::vector<IntervalInfo> done;
  while (merger.next_epoch(done)) {
    for (const IntervalInfo &iv : done) {
      auto it = wanted.find({iv.id, iv.begin_ts});
      if (it == wanted.end()) continue;
      found.push_back({chosen[it->second], iv, record_path(tl, iv, po)});
      const int64_t a = iv.begin_ts, b = iv.end_ts;
      for (uint32_t ti = 0; ti < tl.threads.size(); ++ti) {
        const ThreadTimeline &th = tl.threads[ti];
        if (th.stack.empty()) continue;  // no data yet
        // Kept where the thread did nothing: an edge may start there (a
        // release outside instrumented code), which needs its thread's track.
        windows[ti].push_back({a, b, steps_of(th, a, b)});
        // A wait that ends in the window began in it or in a segment
        // before it that is still in memory (I6 keeps the one holding a).
        for (const Segment *g = segment_after(th, a - 1); g != th.segs.end() && g->begin <= b; ++g)
          if (g->waiting() && g->waker_tid && g->release_ts >= 0 && g->wait_end >= a &&
              g->wait_end <= b) {
            int64_t wk = tl.thread_of(g->waker_tid);
            if (wk >= 0 && uint32_t(wk) != ti)
              edges[{ti, g->wait_end, false}] = {false, uint32_t(wk), g->release_ts, ti, g->wait_end};
          }
        auto d = std::lower_bound(th.dequeues.begin(), th.dequeues.end(), a,
                                  [](const Dequeue &x, int64_t v) { return x.ts < v; });
        for (; d != th.dequeues.end() && d->ts <= b; ++d)
          if (d->enq.ts >= 0 && d->enq.ts <= d->ts)
            edges[{ti, d->ts, true}] = {true, d->enq.thread, d->enq.ts, ti, d->ts};
      }
    }
    merger.trim();
  }
  for (auto &w : windows) w = join(std::move(w));
  for (const auto &[key, e] : edges) {
    if (e.from_ts > e.to_ts) {
      ++cap.edges_backwards;
      continue;
    }
    if (!inside(windows[e.from_thread], e.from_ts) || !inside(windows[e.to_thread], e.to_ts)) {
      ++cap.edges_outside;
      continue;
    }
    Flow f{e, false};
    for (const CapturedInterval &c : found)
      for (const PathEdge &p : c.path.edges)
        f.critical = f.critical || (p.created_by == e.created_by && p.to_thread == e.to_thread &&
                                    p.to_ts == e.to_ts);
    cap.flows.push_back(f);
  }
  std::sort(cap.flows.begin(), cap.flows.end(), [](const Flow &x, const Flow &y) {
    return std::make_tuple(x.edge.from_ts, x.edge.to_ts, x.edge.to_thread) <
           std::make_tuple(y.edge.from_ts, y.edge.to_ts, y.edge.to_thread);
  });
  // In the order chosen (slowest first, then the median ones).
  std::sort(found.begin(), found.end(), [&](const CapturedInterval &x, const CapturedInterval &y) {
    return wanted.at({x.chosen.id, x.chosen.begin_ts}) < wanted.at({y.chosen.id, y.chosen.begin_ts});
  });
  cap.intervals = std::move(found);
  cap.windows = std::move(windows);
  cap.trie = tl.trie;
  bool any = false;
  for (const ThreadTimeline &th : tl.threads) {
    cap.threads.push_back({th.pid, th.tid});
    if (th.stack.empty()) continue;
    cap.first_ts = any ? std::min(cap.first_ts, th.first_ts) : th.first_ts;
    any = true;
  }
  return cap;
}

}  // namespace vprof::analyzer
