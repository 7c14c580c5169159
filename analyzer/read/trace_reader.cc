#include "analyzer/read/trace_reader.h"

#include "analyzer/read/decoder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "analyzer/util/prefault.h"

namespace vprof::trace {

const char *kind_name(Kind k) {
  switch (k) {
    case Kind::FuncEnter: return "func_enter";
    case Kind::FuncExit: return "func_exit";
    case Kind::SiteBegin: return "site_begin";
    case Kind::SiteEnd: return "site_end";
    case Kind::IntervalBegin: return "interval_begin";
    case Kind::IntervalEnd: return "interval_end";
    case Kind::IntervalJoin: return "interval_join";
    case Kind::IntervalLeave: return "interval_leave";
    case Kind::WaitBegin: return "wait_begin";
    case Kind::WaitEnd: return "wait_end";
    case Kind::Release: return "release";
    case Kind::TaskEnqueue: return "task_enqueue";
    case Kind::TaskDequeue: return "task_dequeue";
    case Kind::DropBegin: return "drop_begin";
    case Kind::ThreadExit: return "thread_exit";
    case Kind::Preempted: return "preempted";
  }
  return "?";
}

const char *severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::string Diagnostic::str() const {
  return fmt::format("{}:{}: {}: {}", file, offset, severity_name(severity), message);
}

size_t Trace::count(Severity s) const {
  return static_cast<size_t>(std::count_if(diagnostics.begin(), diagnostics.end(),
                                           [s](const Diagnostic &d) { return d.severity == s; }));
}

const Diagnostic *Trace::first_error() const {
  for (const auto &d : diagnostics)
    if (d.severity == Severity::Error) return &d;
  return nullptr;
}

namespace {

using detail::Clock;
using detail::Decoder;
using detail::Labels;
using detail::MappedFile;

// Per-stream facts used only while resolving wake-up edges.
struct RawInfo {
  std::vector<uint64_t> ticks;  // absolute tick of each event (parallel to events)
  // WaitEnd events naming a waker: (event index, modular release-to-wake delta).
  std::vector<std::pair<uint32_t, uint32_t>> wakes;
  std::vector<uint32_t> releases;  // indices of Release events
};

// Decodes one whole file whose header already passed check_header.
void decode(const std::string &path, const MappedFile &f, const vprof_file_header &h,
            const Clock &clock, ThreadStream &out, RawInfo &raw, std::vector<Diagnostic> &diags,
            Labels &labels, FileLoss *loss = nullptr) {
  Decoder d(path, f, h, clock, diags, labels);
  d.describe(out);
  // At most one event per slot: reserved (address space only), then faulted
  // in a step ahead of use (util/prefault.h). Not all at once: a thread's
  // file is at least its 1 MiB ring, mostly empty for short-lived threads.
  out.events.reserve((f.size() - VPROF_HEADER_BYTES) / VPROF_SLOT_BYTES);
  raw.ticks.reserve(out.events.capacity());
  analyzer::PrefaultAhead events_ahead, ticks_ahead;
  Event e;
  uint64_t tick;
  uint32_t delta;
  while (d.next(e, tick, delta)) {
    if (!out.events.empty() && out.events.size() % 4096 == 0) {
      events_ahead(out.events);
      ticks_ahead(raw.ticks);
    }
    if (e.kind == Kind::Release) raw.releases.push_back(static_cast<uint32_t>(out.events.size()));
    if (e.kind == Kind::WaitEnd && e.waker_tid)
      raw.wakes.emplace_back(static_cast<uint32_t>(out.events.size()), delta);
    out.events.push_back(e);
    raw.ticks.push_back(tick);
  }
  d.finish(out, out.events.size());
  if (loss) *loss = d.loss();
}

}  // namespace

bool read_trace_file(const std::string &path, ThreadStream &out, std::vector<Diagnostic> &diags) {
  MappedFile f(path);
  vprof_file_header h;
  if (!detail::check_header(path, f, h, diags)) return false;
  Clock clock{h.clock_source == VPROF_CLOCK_MONOTONIC ? 1.0 : h.ticks_per_ns, h.anchor0_ticks,
              static_cast<int64_t>(h.anchor0_ns)};
  RawInfo raw;
  Labels labels;
  decode(path, f, h, clock, out, raw, diags, labels);
  return true;
}

namespace {

// Resolves each WaitEnd's release time against the waker's RELEASE record on
// the same object whose tick has the low 32 bits the runtime recorded.
void resolve_wakeups(Trace &trace, std::vector<RawInfo> &raw, double ticks_per_ns) {
  std::unordered_multimap<uint32_t, size_t> by_tid;
  for (size_t i = 0; i < trace.threads.size(); ++i) by_tid.emplace(trace.threads[i].tid, i);
  // (stream, object) -> indices of its Release events, in time order.
  std::vector<std::unordered_map<uint64_t, std::vector<uint32_t>>> releases(trace.threads.size());
  std::vector<bool> indexed(trace.threads.size(), false);
  auto release_index = [&](size_t s) -> auto & {
    if (!indexed[s]) {
      indexed[s] = true;
      const auto &ev = trace.threads[s].events;
      for (uint32_t i : raw[s].releases) releases[s][ev[i].arg].push_back(i);
    }
    return releases[s];
  };
  uint64_t unresolved = 0;
  for (size_t s = 0; s < trace.threads.size(); ++s) {
    auto &ev = trace.threads[s].events;
    for (auto [i, delta] : raw[s].wakes) {
      Event &e = ev[i];
      uint64_t wake_tick = raw[s].ticks[i];
      uint32_t want = static_cast<uint32_t>(wake_tick) - delta;
      bool found = false;
      auto range = by_tid.equal_range(e.waker_tid);
      for (auto it = range.first; it != range.second && !found; ++it) {
        auto &idx = release_index(it->second);
        auto obj = idx.find(e.arg);
        if (obj == idx.end()) continue;
        const auto &wev = trace.threads[it->second].events;
        const auto &wticks = raw[it->second].ticks;
        // The latest release at or before the wake, if its low bits match.
        // Releases are in time order: a binary search, not a scan back from
        // the newest (quadratic for a lock released once per request).
        const auto &rel = obj->second;
        auto r = std::upper_bound(rel.begin(), rel.end(), wake_tick,
                                  [&](uint64_t v, uint32_t i) { return v < wticks[i]; });
        if (r != rel.begin() && static_cast<uint32_t>(wticks[*std::prev(r)]) == want) {
          e.release_ts = wev[*std::prev(r)].ts;
          found = true;
        }
      }
      if (!found) {
        // The waker's record is lost (dropped, killed, or another run), or
        // the runtime does not write it (a lock's release): take the
        // runtime's delta at its word.
        e.release_ts = e.ts - static_cast<int64_t>(std::llround(delta / ticks_per_ns));
        if (vprof_release_recorded_by_default(e.role)) ++unresolved;
      }
    }
  }
  if (unresolved)
    trace.diagnostics.push_back(
        {Severity::Info, trace.dir, 0,
         fmt::format("{} wake-ups name a waker whose release record is missing; their release "
                     "time comes from the runtime's delta",
                     unresolved)});
}

}  // namespace

Expected<Trace> read_trace_dir(const std::string &dir) {
  Trace trace;
  trace.dir = dir;
  auto opened = detail::open_trace(dir, trace.diagnostics);
  if (!opened) return opened.error();
  trace.ticks_per_ns = opened->ticks_per_ns;
  trace.overhead = opened->overhead;
  trace.files = opened->listed;
  trace.losses = std::move(opened->unreadable);
  Labels labels;
  const size_t n = opened->files.size();
  std::vector<RawInfo> raw(n);
  trace.threads.resize(n);
  for (size_t i = 0; i < n; ++i) {
    detail::OpenedFile &f = opened->files[i];
    FileLoss loss;
    decode(f.path, *f.map, f.header, f.clock, trace.threads[i], raw[i], trace.diagnostics, labels,
           &loss);
    if (loss.lost_anything() || loss.clamped) trace.losses.push_back(std::move(loss));
    f.map.reset();
    trace.total_records += trace.threads[i].events.size();
    trace.dropped_records += trace.threads[i].dropped_records;
  }
  std::sort(trace.losses.begin(), trace.losses.end(),
            [](const FileLoss &a, const FileLoss &b) { return a.file < b.file; });
  trace.labels = std::move(labels.names);
  resolve_wakeups(trace, raw, trace.ticks_per_ns);

  // Sort streams by (pid, tid), keeping file order for reused tids.
  std::stable_sort(trace.threads.begin(), trace.threads.end(),
                   [](const ThreadStream &a, const ThreadStream &b) {
                     return a.pid != b.pid ? a.pid < b.pid : a.tid < b.tid;
                   });
  return trace;
}

}  // namespace vprof::trace
