#include "analyzer/critpath/critical_path.h"

#include "analyzer/critpath/walker.h"
#include "analyzer/util/prefault.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

namespace vprof::analyzer {

double CriticalPaths::at(size_t r, uint32_t node) const {
  auto it = std::lower_bound(row_begin(r), row_end(r), node,
                             [](const PathCell &c, uint32_t n) { return c.node < n; });
  double ns = 0;
  for (; it != row_end(r) && it->node == node; ++it) ns += it->ns;
  return ns;
}

TracePaths compute_critical_paths(const trace::Trace &trace, const PathOptions &opt) {
  std::vector<std::unique_ptr<trace::VectorSource>> owned;
  std::vector<trace::EventSource *> sources;
  for (const trace::ThreadStream &s : trace.threads) {
    owned.push_back(std::make_unique<trace::VectorSource>(s));
    sources.push_back(owned.back().get());
  }
  return compute_critical_paths(sources, opt);
}

TracePaths compute_critical_paths(const std::vector<trace::EventSource *> &sources,
                                  const PathOptions &opt) {
  TracePaths result;
  CriticalPaths &out = result.paths;
  // Small epochs keep the window in cache; with workers each epoch costs two
  // hand-offs to the pool.
  const unsigned nw = opt.workers ? opt.workers->size() : std::max(1u, opt.threads);
  size_t epoch = opt.epoch_records ? opt.epoch_records : nw > 1 ? 2048 : 1024;
  Merger merger(sources, nw, epoch, opt.max_window, opt.workers, opt.direct_calls);
  const Timeline &tl = merger.timeline();
  std::vector<Walker<NoRecord>> walkers(nw, Walker<NoRecord>(tl, opt));
  // Per worker: the cells of the intervals it walked and, per interval, where
  // they are and whether the interval is kept; assembled in epoch order.
  struct Walked {
    size_t begin, end;
    bool keep, held;
  };
  std::vector<std::vector<PathCell>> cells(nw);
  std::vector<Walked> walked;
  std::vector<IntervalInfo> done;
  // The Held leaves' (wait node, holder node), numbered as first kept.
  std::vector<std::pair<uint32_t, uint32_t>> held;
  std::unordered_map<uint64_t, uint32_t> held_index;
  std::vector<std::vector<uint32_t>> held_global(nw);  // per walker: its index -> held's
  std::vector<size_t> held_at;  // where the Held cells are in out.cells
  // Reserving address space costs nothing until pages are written; growing
  // by doubling would write (and fault in) every page twice or more.
  // Bounds: a row takes a begin and an end record; a row's cells come from
  // its stack changes and edges, plus (outside), (queue wait), (untracked).
  size_t records = 0;
  for (const trace::EventSource *s : sources) records += s->size_hint();
  constexpr size_t kMaxReserve = size_t{1} << 30;
  out.rows.reserve(std::min(records / 2, kMaxReserve / sizeof(IntervalRow)));
  out.row_start.reserve(std::min(records / 2 + 1, kMaxReserve / sizeof(size_t)));
  out.cells.reserve(std::min(records + 3 * (records / 2), kMaxReserve / sizeof(PathCell)));
  PrefaultAhead cells_ahead, rows_ahead, starts_ahead;
  cells_ahead(out.cells);
  rows_ahead(out.rows);
  starts_ahead(out.row_start);
  while (merger.next_epoch(done)) {
    walked.assign(done.size(), {0, 0, false, false});
    for (auto &c : cells) c.clear();
    auto work = [&](unsigned w) {
      Walker<NoRecord> &wk = walkers[w];
      wk.prepare(tl.trie.size());
      for (size_t i = w; i < done.size(); i += nw) {
        size_t from = cells[w].size();
        bool ok = wk.walk(done[i], cells[w]);
        if (wk.gap()) ++wk.counters.path_gaps;
        if (wk.unrecorded()) ++wk.counters.unrecorded_holders;
        if (!ok) {
          ++wk.counters.lossy_intervals;
          cells[w].resize(from);
          continue;
        }
        double sum = 0;
        for (size_t k = from; k < cells[w].size(); ++k) sum += cells[w][k].ns;
        if (sum != double(done[i].end_ts - done[i].begin_ts)) {
          ++wk.counters.tiling_violations;
          cells[w].resize(from);
          continue;
        }
        walked[i] = {from, cells[w].size(), true, wk.held_cells()};
      }
    };
    merger.workers().run(work);
    for (size_t i = 0; i < done.size(); ++i) {
      if (!walked[i].keep) continue;
      const std::vector<PathCell> &src = cells[i % nw];
      size_t from = out.cells.size();
      out.cells.insert(out.cells.end(), src.begin() + ptrdiff_t(walked[i].begin),
                       src.begin() + ptrdiff_t(walked[i].end));
      // A Held cell's index is its walker's: made one numbering for all.
      for (size_t k = from; walked[i].held && k < out.cells.size(); ++k) {
        PathCell &c = out.cells[k];
        if ((c.node & (kPreemptedMark | kHeldMark)) != kHeldMark) continue;
        std::vector<uint32_t> &g = held_global[i % nw];
        uint32_t local = c.node & ~kHeldMark;
        if (g.size() <= local) g.resize(local + 1, UINT32_MAX);
        if (g[local] == UINT32_MAX) {
          auto [w, h] = walkers[i % nw].held_pairs()[local];
          auto [it, fresh] = held_index.try_emplace(uint64_t{w} << 32 | h, uint32_t(held.size()));
          if (fresh) held.push_back({w, h});
          g[local] = it->second;
        }
        c.node = kHeldMark | g[local];
        held_at.push_back(k);
      }
      out.row_start.push_back(out.cells.size());
      const IntervalInfo &iv = done[i];
      out.rows.push_back(
          {iv.id, iv.begin_ts, iv.end_ts - iv.begin_ts, iv.type_label, iv.client_label});
    }
    merger.trim();
    cells_ahead(out.cells);
    rows_ahead(out.rows);
    starts_ahead(out.row_start);
  }
  out.nodes = tl.trie.size();
  out.counters.incomplete_intervals = merger.incomplete();
  out.counters.inverted_intervals = merger.inverted();
  out.counters.abandoned_intervals = merger.abandoned();

  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t, uint32_t>, int64_t> blame;
  for (Walker<NoRecord> &w : walkers) {
    PathCounters &c = w.counters;
#define VPROF_PATH_COUNTER(name, per_walker, level, what) \
  if (per_walker) out.counters.name += c.name;
#include "analyzer/critpath/path_counters.def"
#undef VPROF_PATH_COUNTER
    for (auto &[k, ns] : w.blame) blame[k] += ns;
  }
  // Node ids in the order first seen depend on epochs and workers; the
  // canonical numbering does not (timeline.h, I5).
  std::vector<uint32_t> renum;
  bool preemption = false;
  for (Walker<NoRecord> &w : walkers) preemption = preemption || w.saw_preemption();
  size_t walked_nodes = tl.trie.size();
  // A release place (1 + index in tl.places) as the Held leaf and the blame
  // name it: kHeldPlace | the namer's number, or 0 when it names none.
  const std::vector<ReleasePlaces::Place> places = tl.places.all();
  std::vector<uint32_t> place_id(places.size() + 1, UINT32_MAX);  // computed once each
  auto named = [&](uint32_t place) {
    if (place == 0 || place > places.size()) return 0u;
    if (place_id[place] == UINT32_MAX) {
      const ReleasePlaces::Place &p = places[place - 1];
      const int64_t t = tl.thread_of(p.tid);
      const uint32_t n = t >= 0 && opt.name_place ? opt.name_place(tl.threads[size_t(t)].pid, p.pc) : 0;
      place_id[place] = n ? kHeldPlace | n : 0;
    }
    return place_id[place];
  };
  if (preemption || !held.empty()) {
    StackTrie full = tl.trie;
    // A Held leaf is named by the holder's innermost frame (held_id): the
    // same place reached by other paths is one leaf under a wait.
    std::vector<uint32_t> held_node(held.size());
    for (size_t i = 0; i < held.size(); ++i) {
      const uint32_t holder = held[i].second;
      uint32_t id = kHeldUnrecorded;
      if (holder == kRecorderHolder) {
        id = kHeldRecorder;
      } else if (holder != kUnrecordedHolder) {
        const uint32_t at = holder & ~kOffCpuHolder;
        if (is_place_holder(at)) {
          id = named(at & ~kPlaceHolder);
        } else {
          const StackNode &h = tl.trie[at];
          id = h.kind == FrameKind::Site ? h.id : h.kind == FrameKind::Function ? h.id | kHeldFunction : 0;
        }
        if (holder & kOffCpuHolder) id |= kHeldPreempted;
      }
      held_node[i] = full.child(held[i].first, FrameKind::Held, id);
    }
    if (preemption) {
      for (PathCell &c : out.cells)
        if ((c.node & kRecorderMark) == kRecorderMark)
          c.node = full.child(c.node & ~kRecorderMark, FrameKind::Recorder, 0);
        else if (c.node & kPreemptedMark)
          c.node = full.child(c.node & ~kPreemptedMark, FrameKind::Preempted, 0);
    }
    for (size_t k : held_at) out.cells[k].node = held_node[out.cells[k].node & ~kHeldMark];
    walked_nodes = full.size();
    result.trie = full.canonical(renum, opt.direct_calls);
    out.nodes = std::max(out.nodes, result.trie.size());  // cells name the leaves made here
  } else {
    result.trie = tl.trie.canonical(renum, opt.direct_calls);
  }
  // A direct call's function node folds into its site's (timeline.h): a row
  // can then hold both under one node, merged into one cell where it fits.
  const bool folded = result.trie.size() < walked_nodes;
  constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
  auto mergeable = [&](const PathCell &x, const PathCell &y) {
    return x.node == y.node && uint64_t{x.ns} + y.ns <= kMax;
  };
  size_t shift = 0;  // cells merged away in the rows so far
  for (size_t r = 0; r < out.rows.size(); ++r) {
    PathCell *b = out.cells.data() + out.row_start[r], *e = out.cells.data() + out.row_start[r + 1];
    for (PathCell *c = b; c != e; ++c) c->node = renum[c->node];
    auto key = [](const PathCell &c) { return uint64_t{c.node} << 32 | c.ns; };
    std::sort(b, e, [&](const PathCell &x, const PathCell &y) { return key(x) < key(y); });
    if (!folded) continue;
    PathCell *w = b - shift, *c = b;
    out.row_start[r] -= shift;
    if (shift == 0) {
      // Rows stay where they are until the first pair to merge: read only.
      while (c + 1 < e && !mergeable(c[0], c[1])) ++c;
      if (c + 1 >= e) continue;
      ++c;
    }
    PathCell *o = w + (c - b);
    for (; c != e; ++c) {
      if (o > w && mergeable(o[-1], *c)) o[-1].ns += c->ns;
      else *o++ = *c;
    }
    shift += size_t(e - b) - size_t(o - w);
  }
  if (shift) {
    out.row_start.back() -= shift;
    out.cells.resize(out.row_start.back());
  }
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t, uint32_t>, int64_t> renamed;
  for (auto &[k, ns] : blame)
    renamed[{renum[std::get<0>(k)], std::get<1>(k), renum[std::get<2>(k)], std::get<3>(k), named(std::get<4>(k))}] +=
        ns;
  for (auto &[k, ns] : renamed)
    out.blame.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), ns, std::get<4>(k)});
  std::sort(out.blame.begin(), out.blame.end(), [](const Blame &a, const Blame &b) {
    return std::make_tuple(-a.ns, a.wait_node, a.waker_tid, a.waker_node, a.waker_label, a.place) <
           std::make_tuple(-b.ns, b.wait_node, b.waker_tid, b.waker_node, b.waker_label, b.place);
  });
  result.merge = merger.counters();
  result.merge_stats = merger.stats();
  for (const ThreadTimeline &th : tl.threads)
    result.looped_sites.insert(result.looped_sites.end(), th.looped_sites.begin(), th.looped_sites.end());
  std::sort(result.looped_sites.begin(), result.looped_sites.end());
  result.looped_sites.erase(std::unique(result.looped_sites.begin(), result.looped_sites.end()),
                            result.looped_sites.end());
  return result;
}

}  // namespace vprof::analyzer
