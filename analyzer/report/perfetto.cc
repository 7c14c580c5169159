#include "analyzer/report/perfetto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/report/perfetto_capture.h"
#include "analyzer/tree/stats.h"

namespace vprof::analyzer {

std::vector<ChosenInterval> choose_intervals(const CriticalPaths &cp, size_t n) {
  std::vector<size_t> rows(cp.rows.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  auto row = [&](size_t i) -> const IntervalRow & { return cp.rows[i]; };
  std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    return std::make_pair(-row(a).latency_ns, row(a).id) < std::make_pair(-row(b).latency_ns, row(b).id);
  });
  std::vector<ChosenInterval> out;
  auto chose = [&](size_t i, int rank) {
    const IntervalRow &r = row(i);
    out.push_back({r.id, r.begin_ts, r.latency_ns, r.type_label, r.client_label, rank});
  };
  const size_t slow = std::min(n, rows.size());
  for (size_t k = 0; k < slow; ++k) chose(rows[k], int(k) + 1);
  if (rows.empty()) return out;
  // p50 by nearest rank (tree/stats.h), over all of them.
  std::vector<double> lat;
  for (const IntervalRow &r : cp.rows) lat.push_back(double(r.latency_ns));
  const double p50 = quantiles(lat, {0.5})[0];
  std::vector<size_t> rest(rows.begin() + ptrdiff_t(slow), rows.end());
  auto dist = [&](size_t i) { return std::fabs(double(row(i).latency_ns) - p50); };
  std::sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
    return std::make_pair(dist(a), row(a).id) < std::make_pair(dist(b), row(b).id);
  });
  rest.resize(std::min(n, rest.size()));
  std::sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
    return std::make_pair(row(a).latency_ns, row(a).id) < std::make_pair(row(b).latency_ns, row(b).id);
  });
  for (size_t i : rest) chose(i, 0);
  return out;
}

namespace {

using nlohmann::json;

// One trace event and where it sorts: by time; at one instant async ends
// first (the one begun last first, an inner one before its outer), then
// slices and async begins, longest first (a parent before its children),
// then zero-length slices each with the flow event bound to it; ties in the
// order made. Keys are doubled to leave room for the inner/outer tie-break.
struct Event {
  int64_t ts;
  int order;
  int64_t key;
  uint64_t seq;
  json j;
};

class Writer {
 public:
  Writer(const Capture &cap, const RunAnalysis &run, const trace::Trace &meta)
      : cap_(cap), run_(run) {
    for (const trace::ThreadStream &t : meta.threads) {
      thread_names_[t.tid] = t.thread_name.empty() ? t.comm : t.thread_name;
      process_names_.emplace(t.pid, t.comm);
    }
  }

  std::vector<Event> events() {
    critical_pieces();
    for (uint32_t ti = 0; ti < cap_.windows.size(); ++ti)
      for (const ThreadWindow &w : cap_.windows[ti]) frames(ti, w);
    for (size_t k = 0; k < cap_.intervals.size(); ++k) interval(k);
    for (size_t f = 0; f < cap_.flows.size(); ++f) flow(f);
    metadata();
    std::sort(events_.begin(), events_.end(), [](const Event &a, const Event &b) {
      return std::tie(a.ts, a.order, a.key, a.seq) < std::tie(b.ts, b.order, b.key, b.seq);
    });
    return std::move(events_);
  }

 private:
  // Microseconds from the trace's first timestamp; exact to the ns when
  // read back and rounded (Perfetto rounds ts * 1000 to the nearest ns).
  double us(int64_t ts) const { return double(ts - cap_.first_ts) / 1000.0; }
  static double us_dur(int64_t ns) { return double(ns) / 1000.0; }

  json base(const char *ph, int64_t ts, uint32_t thread) {
    used_.insert(thread);
    const auto &t = cap_.threads[thread];
    return {{"ph", ph}, {"ts", us(ts)}, {"pid", t.pid}, {"tid", t.tid}};
  }

  void add(int64_t ts, int order, int64_t key, json j) {
    events_.push_back({ts, order, key, seq_++, std::move(j)});
  }

  // A slice; zero-length ones sort after the longer ones at their instant.
  void slice(uint32_t thread, int64_t b, int64_t e, const std::string &name, const std::string &cat,
             json args) {
    json j = base("X", b, thread);
    j["dur"] = us_dur(e - b);
    j["name"] = name;
    j["cat"] = cat;
    if (!args.empty()) j["args"] = std::move(args);
    add(b, e > b ? 1 : 2, e > b ? 2 * (b - e) : 0, std::move(j));
  }

  std::string thread_text(uint32_t thread) const {
    const auto &t = cap_.threads[thread];
    auto it = thread_names_.find(t.tid);
    std::string name = it == thread_names_.end() ? std::string() : it->second;
    return name.empty() ? fmt::format("tid {}", t.tid) : fmt::format("tid {} ({})", t.tid, name);
  }

  std::string label_text(uint32_t label) const {
    return label && label < run_.labels.size() ? run_.labels[label] : std::string();
  }

  // Per thread, the stretches on some chosen interval's critical path,
  // disjoint and in order (for the frames' "critical" mark).
  void critical_pieces() {
    pieces_.assign(cap_.windows.size(), {});
    for (const CapturedInterval &c : cap_.intervals)
      for (const PathPiece &p : c.path.pieces)
        if (p.thread >= 0) pieces_[size_t(p.thread)].push_back({p.begin, p.end});
    for (auto &v : pieces_) {
      std::sort(v.begin(), v.end());
      std::vector<std::pair<int64_t, int64_t>> joined;
      for (const auto &p : v) {
        if (!joined.empty() && p.first <= joined.back().second)
          joined.back().second = std::max(joined.back().second, p.second);
        else
          joined.push_back(p);
      }
      v = std::move(joined);
    }
  }

  int64_t critical_ns(uint32_t thread, int64_t b, int64_t e) const {
    int64_t ns = 0;
    for (const auto &[pb, pe] : pieces_[thread]) {
      if (pb >= e) break;
      ns += std::max<int64_t>(0, std::min(e, pe) - std::max(b, pb));
    }
    return ns;
  }

  // A frame of a thread's stack as shown: its identity (to tell which stay
  // open from one step to the next), name, category and args.
  struct Frame {
    std::string key, name, cat;
    json args;
  };

  void describe_node(uint32_t node, Frame &f) const {
    const StackNode &s = cap_.trie[node];
    const Names &names = run_.names;
    f.key = fmt::format("n{}", node);
    if (s.kind == FrameKind::Function) {
      f.name = names.function(s.id);
      f.cat = "function";
      f.args = {{"function", f.name}};
      return;
    }
    f.cat = "call_site";
    if (const CallSiteInfo *si = names.site(s.id)) {
      f.name = fmt::format("{} ({}:{})", si->callee, si->file, si->line);
      f.args = {{"call_site", fmt::format("{}:{}:{}", si->file, si->line, si->column)},
                {"callee", si->callee},
                {"caller", names.function(si->function_id)}};
    } else {
      f.name = fmt::format("{} (site#{})", names.callee(s.id), s.id);
      f.args = {{"callee", names.callee(s.id)}};
    }
  }

  // Outermost first: the interval worked for, the call stack, the wait.
  std::vector<Frame> path_of(const ThreadStep &s) const {
    std::vector<Frame> out;
    if (s.label) {
      Frame f{fmt::format("l{}", s.label), fmt::format("interval {}", s.label), "interval",
              {{"interval", s.label}}};
      out.push_back(std::move(f));
    }
    std::vector<uint32_t> chain;
    for (uint32_t n = s.node; n != StackTrie::kRoot; n = cap_.trie[n].parent) chain.push_back(n);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      Frame f;
      describe_node(*it, f);
      out.push_back(std::move(f));
    }
    if (s.wait_begin >= 0) {
      Frame f{fmt::format("w{}", s.wait_begin), "blocked", "wait", json::object()};
      if (s.waker_tid) f.args["waker_tid"] = s.waker_tid;
      out.push_back(std::move(f));
    }
    return out;
  }

  // A thread's window as nested slices: at each step the frames no longer
  // on the stack end and the new ones begin, so slices nest by construction.
  void frames(uint32_t thread, const ThreadWindow &w) {
    struct Open {
      Frame f;
      int64_t begin;
    };
    std::vector<Open> open;
    auto close_to = [&](size_t depth, int64_t t) {
      while (open.size() > depth) {
        Open &o = open.back();
        if (t > o.begin) {
          if (int64_t crit = critical_ns(thread, o.begin, t)) {
            o.f.cat += ",critical";
            o.f.args["critical_ns"] = crit;
          }
          slice(thread, o.begin, t, o.f.name, o.f.cat, std::move(o.f.args));
        }
        open.pop_back();
      }
    };
    for (const ThreadStep &s : w.steps) {
      std::vector<Frame> p = path_of(s);
      size_t k = 0;
      while (k < open.size() && k < p.size() && open[k].f.key == p[k].key) ++k;
      close_to(k, s.ts);
      for (; k < p.size(); ++k) open.push_back({std::move(p[k]), s.ts});
    }
    close_to(0, w.end);
  }

  void interval(size_t k) {
    const CapturedInterval &c = cap_.intervals[k];
    const ChosenInterval &ch = c.chosen;
    const uint32_t th = c.info.begin_thread;
    const uint64_t id = k + 1;
    std::string name = ch.slowest_rank
                           ? fmt::format("interval {} (slowest #{})", ch.id, ch.slowest_rank)
                           : fmt::format("interval {} (median)", ch.id);
    json args = {{"interval", ch.id},
                 {"latency_ns", ch.latency_ns},
                 {"chosen", ch.slowest_rank ? fmt::format("slowest #{}", ch.slowest_rank)
                                            : std::string("near the median")}};
    if (std::string t = label_text(ch.type_label); !t.empty()) args["type"] = t;
    if (std::string cl = label_text(ch.client_label); !cl.empty()) args["client"] = cl;
    async(th, c.info.begin_ts, c.info.end_ts, id, name, "interval", std::move(args), false);
    for (const PathPiece &p : c.path.pieces) {
      std::string on = p.thread == PathPiece::kQueue       ? frame_label(FrameKind::Queue)
                       : p.thread == PathPiece::kUntracked ? frame_label(FrameKind::Untracked)
                                                           : thread_text(uint32_t(p.thread));
      async(th, p.begin, p.end, id, "critical path", "critical", {{"on", on}, {"interval", ch.id}},
            true);
    }
  }

  void async(uint32_t thread, int64_t b, int64_t e, uint64_t id, const std::string &name,
             const std::string &cat, json args, bool inner) {
    json jb = base("b", b, thread), je = base("e", e, thread);
    for (json *j : {&jb, &je}) {
      (*j)["id"] = id;
      (*j)["name"] = name;
      (*j)["cat"] = cat;
    }
    jb["args"] = std::move(args);
    add(b, 1, 2 * (b - e) + inner, std::move(jb));
    add(e, 0, -2 * b - inner, std::move(je));
  }

  // A flow between zero-length slices at its two instants, each event right
  // after its slice: Perfetto binds a flow event to the slice on top of its
  // track's stack when it comes.
  void flow(size_t f) {
    const Flow &fl = cap_.flows[f];
    const PathEdge &e = fl.edge;
    std::string name = e.created_by ? "created-by" : "wake-up";
    if (fl.critical) name += " (critical path)";
    // One end: its slice, then the flow event (s or f) bound to it.
    auto end = [&](const char *ph, uint32_t thread, int64_t ts, const char *slice_name,
                   const char *other_key, uint32_t other) {
      slice(thread, ts, ts, slice_name, "edge", {{other_key, thread_text(other)}});
      json j = base(ph, ts, thread);
      j["id"] = f + 1;
      j["cat"] = e.created_by ? "created_by" : "wakeup";
      j["name"] = name;
      if (ph[0] == 'f') j["bp"] = "e";
      add(ts, 2, 0, std::move(j));
    };
    end("s", e.from_thread, e.from_ts, e.created_by ? "enqueue" : "release", "to", e.to_thread);
    end("f", e.to_thread, e.to_ts, e.created_by ? "dequeue" : "wake-up", "from", e.from_thread);
  }

  // Names of every process and thread with an event.
  void metadata() {
    std::set<uint32_t> pids;
    for (uint32_t thread : used_) {
      const auto &t = cap_.threads[thread];
      auto it = thread_names_.find(t.tid);
      std::string name = it == thread_names_.end() || it->second.empty()
                             ? fmt::format("tid {}", t.tid)
                             : it->second;
      metadata_event("thread_name", t.pid, t.tid, name);
      if (pids.insert(t.pid).second) {
        auto p = process_names_.find(t.pid);
        metadata_event("process_name", t.pid, t.pid,
                       p == process_names_.end() || p->second.empty() ? fmt::format("pid {}", t.pid)
                                                                      : p->second);
      }
    }
  }

  void metadata_event(const char *what, uint32_t pid, uint32_t tid, const std::string &name) {
    json j = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
    events_.push_back({std::numeric_limits<int64_t>::min(), 0, 0, seq_++, std::move(j)});
  }

  const Capture &cap_;
  const RunAnalysis &run_;
  std::map<uint32_t, std::string> thread_names_, process_names_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pieces_;
  std::set<uint32_t> used_;  // threads with an event
  std::vector<Event> events_;
  uint64_t seq_ = 0;
};

}  // namespace

Status write_perfetto(const std::vector<trace::EventSource *> &sources, const trace::Trace &meta,
                      const RunAnalysis &run, const std::vector<ChosenInterval> &chosen,
                      unsigned threads, std::ostream &out) {
  Capture cap = capture_windows(sources, chosen, threads);
  std::vector<Event> events = Writer(cap, run, meta).events();
  // One event a line: a file people open in an editor too.
  out << "{\"traceEvents\": [\n";
  // Names come from the program (thread names, symbols): bytes that are not
  // UTF-8 become U+FFFD rather than an exception.
  for (size_t i = 0; i < events.size(); ++i)
    out << (i ? ",\n" : "") << events[i].j.dump(-1, ' ', false, json::error_handler_t::replace);
  json other = {{"producer", "vprof analyze --perfetto"},
                {"trace_dir", run.dir},
                {"first_ts_ns", cap.first_ts},
                {"intervals", cap.intervals.size()},
                {"edges_left_out",
                 {{"an_end_outside_the_windows", cap.edges_outside},
                  {"release_after_the_wake_up", cap.edges_backwards}}},
                {"time_unit", "us from the trace's first timestamp"}};
  out << "\n],\n\"otherData\": " << other.dump(-1, ' ', false, json::error_handler_t::replace) << "}\n";
  if (!out) return Error{"cannot write the Perfetto JSON"};
  return Status::Ok();
}

}  // namespace vprof::analyzer
