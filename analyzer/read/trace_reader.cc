#include "analyzer/read/trace_reader.h"

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

// A read-only mapping of one file, unmapped on scope exit.
class MappedFile {
 public:
  explicit MappedFile(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error_ = std::strerror(errno);
      return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      error_ = std::strerror(errno);
      close(fd);
      return;
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void *p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED)
        error_ = std::strerror(errno);
      else
        data_ = static_cast<const uint8_t *>(p);
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<uint8_t *>(data_), size_);
  }
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &error() const { return error_; }

 private:
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  std::string error_;
};

// Checks the header; on failure appends an Error and returns false.
bool check_header(const std::string &path, const MappedFile &f, vprof_file_header &h,
                  std::vector<Diagnostic> &diags) {
  auto fail = [&](uint64_t off, std::string msg) {
    diags.push_back({Severity::Error, path, off, std::move(msg)});
    return false;
  };
  if (!f.error().empty()) return fail(0, "cannot read: " + f.error());
  if (f.size() < VPROF_HEADER_BYTES)
    return fail(f.size(), fmt::format("truncated header: {} bytes, a header is {}", f.size(),
                                      VPROF_HEADER_BYTES));
  std::memcpy(&h, f.data(), sizeof h);
  if (std::memcmp(h.magic, VPROF_TRACE_MAGIC, 8) != 0)
    return fail(0, "not a vprof trace file (bad magic)");
  if (h.min_readable > VPROF_TRACE_VERSION)
    return fail(8, fmt::format("format version {} needs a reader of version {} or later; this "
                               "reader reads version {}",
                               h.version, h.min_readable, VPROF_TRACE_VERSION));
  if (h.header_bytes != VPROF_HEADER_BYTES)
    return fail(12, fmt::format("header size {} is not {}", h.header_bytes, VPROF_HEADER_BYTES));
  if (h.chunk_bytes == 0 || h.chunk_bytes % VPROF_SLOT_BYTES != 0)
    return fail(32, fmt::format("chunk size {} is not a positive multiple of {}", h.chunk_bytes,
                                VPROF_SLOT_BYTES));
  if (!(h.ticks_per_ns > 0) || !std::isfinite(h.ticks_per_ns))
    return fail(48, fmt::format("clock calibration {} ticks/ns is not a positive number",
                                h.ticks_per_ns));
  return true;
}

std::string fixed_string(const char *s, size_t n) { return std::string(s, strnlen(s, n)); }

// Per-stream facts used only while resolving wake-up edges.
struct RawInfo {
  std::vector<uint64_t> ticks;  // absolute tick of each event (parallel to events)
  // WaitEnd events naming a waker: (event index, modular release-to-wake delta).
  std::vector<std::pair<uint32_t, uint32_t>> wakes;
  std::vector<uint32_t> releases;  // indices of Release events
  std::unordered_map<uint32_t, std::string> strings;  // per-thread string table
};

struct Clock {
  double ticks_per_ns;
  uint64_t anchor_ticks;
  int64_t anchor_ns;
  int64_t ns(uint64_t ticks) const {
    int64_t d = static_cast<int64_t>(ticks - anchor_ticks);
    if (ticks_per_ns == 1.0) return anchor_ns + d;  // CLOCK_MONOTONIC: ticks are ns
    // Rounded half away from zero, as llround, without the library call
    // (one per record: it was a tenth of the reading time).
    double x = static_cast<double>(d) / ticks_per_ns;
    return anchor_ns + static_cast<int64_t>(x < 0 ? x - 0.5 : x + 0.5);
  }
};

// Decodes one file whose header already passed check_header.
void decode(const std::string &path, const MappedFile &f, const vprof_file_header &h,
            const Clock &clock, ThreadStream &out, RawInfo &raw, std::vector<Diagnostic> &diags,
            std::vector<std::string> &labels,
            std::unordered_map<std::string, uint32_t> &label_index) {
  out.pid = h.pid;
  out.tid = h.tid;
  out.ppid = h.ppid;
  out.file = path;
  out.comm = fixed_string(h.comm, sizeof h.comm);
  out.thread_name = fixed_string(h.thread_name, sizeof h.thread_name);
  out.dropped_records = h.dropped_records;
  // At most one event per slot; fault the pages in at once (util/prefault.h).
  out.events.reserve((f.size() - VPROF_HEADER_BYTES) / VPROF_SLOT_BYTES);
  raw.ticks.reserve(out.events.capacity());
  analyzer::prefault(out.events.data(), out.events.capacity() * sizeof(Event));
  analyzer::prefault(raw.ticks.data(), raw.ticks.capacity() * sizeof(uint64_t));

  const uint8_t *base = f.data();
  uint64_t size = f.size();
  uint64_t last_tick = 0;
  uint64_t regressions = 0, first_regression = 0;
  uint64_t pending_obj = 0;
  uint8_t pending_role = 0;
  bool ended = false;
  auto label_of = [&](uint32_t sid, uint64_t off) -> uint32_t {
    if (sid == 0) return 0;
    auto it = raw.strings.find(sid);
    if (it == raw.strings.end()) {
      diags.push_back({Severity::Warning, path, off,
                       fmt::format("label string {} was never defined; interval left unlabeled", sid)});
      return 0;
    }
    auto [pos, inserted] = label_index.emplace(it->second, static_cast<uint32_t>(labels.size()));
    if (inserted) labels.push_back(it->second);
    return pos->second;
  };

  // Data chunks in order, then the ring (trace_format.h).
  std::vector<uint64_t> chunks;
  for (uint64_t i = 0; i < h.data_chunks; ++i) {
    uint64_t off = VPROF_HEADER_BYTES + (1 + i) * h.chunk_bytes;
    if (off >= size) {
      diags.push_back({Severity::Warning, path, 192,
                       fmt::format("the header counts {} data chunks but the file holds {}: "
                                   "the file was cut",
                                   h.data_chunks, i)});
      break;
    }
    chunks.push_back(off);
  }
  if (h.ring_valid) chunks.push_back(VPROF_HEADER_BYTES);
  for (uint64_t chunk : chunks) {
    if (ended) break;
    uint64_t chunk_end = std::min<uint64_t>(chunk + h.chunk_bytes, size);
    uint64_t off = chunk;
    while (off + VPROF_SLOT_BYTES <= chunk_end) {
      vprof_slot s;
      std::memcpy(&s, base + off, sizeof s);
      uint32_t kind = static_cast<uint32_t>(s.w0 & VPROF_KIND_MASK);
      if (kind == VPROF_K_NONE) break;  // the rest of this chunk was never written
      if (kind >= VPROF_K_MAX_) {
        diags.push_back({Severity::Error, path, off,
                         fmt::format("unknown record kind {}: data corrupted; the rest of this "
                                     "chunk is skipped",
                                     kind)});
        break;
      }
      uint64_t tick = h.tsc_base + (s.w0 >> VPROF_TS_SHIFT);
      if (tick < last_tick) {
        if (regressions++ == 0) first_regression = off;
        tick = last_tick;
      }
      last_tick = tick;
      uint64_t next = off + VPROF_SLOT_BYTES;
      Event e;
      e.ts = clock.ns(tick);
      e.arg = s.arg;
      e.kind = static_cast<Kind>(kind);
      bool keep = true;
      switch (kind) {
        case VPROF_K_IV_BEGIN_LABELED: {
          if (next + VPROF_SLOT_BYTES > chunk_end) {
            diags.push_back({Severity::Error, path, off, "labeled interval record cut short"});
            keep = false;
            break;
          }
          vprof_slot ext;
          std::memcpy(&ext, base + next, sizeof ext);
          next += VPROF_SLOT_BYTES;
          e.kind = Kind::IntervalBegin;
          e.type_label = label_of(static_cast<uint32_t>(ext.w0), off);
          e.client_label = label_of(static_cast<uint32_t>(ext.arg), off);
          break;
        }
        case VPROF_K_STRING: {
          uint32_t sid = static_cast<uint32_t>(s.arg);
          uint64_t len = s.arg >> 32;
          uint64_t slots = (len + VPROF_SLOT_BYTES - 1) / VPROF_SLOT_BYTES;
          if (len > 4096 || next + slots * VPROF_SLOT_BYTES > chunk_end) {
            diags.push_back({Severity::Error, path, off,
                             fmt::format("string record of {} bytes cut short or too long", len)});
            next = chunk_end;
          } else {
            raw.strings[sid] = std::string(reinterpret_cast<const char *>(base + next), len);
            next += slots * VPROF_SLOT_BYTES;
          }
          keep = false;
          break;
        }
        case VPROF_K_WAIT_BEGIN:
          pending_obj = s.arg & VPROF_OBJ_MASK;
          pending_role = static_cast<uint8_t>(s.arg >> 56);
          e.arg = pending_obj;
          e.role = pending_role;
          break;
        case VPROF_K_RELEASE:
          raw.releases.push_back(static_cast<uint32_t>(out.events.size()));
          e.arg = s.arg & VPROF_OBJ_MASK;
          e.role = static_cast<uint8_t>(s.arg >> 56);
          break;
        case VPROF_K_WAIT_END: {
          uint32_t lo = static_cast<uint32_t>(s.arg);
          e.arg = pending_obj;
          e.role = pending_role;
          e.acquired = (lo & VPROF_WAIT_NOT_ACQUIRED) ? 0 : 1;
          e.waker_tid = lo & ~static_cast<uint32_t>(VPROF_WAIT_NOT_ACQUIRED);
          if (e.waker_tid)
            raw.wakes.emplace_back(static_cast<uint32_t>(out.events.size()),
                                   static_cast<uint32_t>(s.arg >> 32));
          break;
        }
        case VPROF_K_DROP_BEGIN:
          out.drop_begin_ts = e.ts;
          break;
        case VPROF_K_THREAD_EXIT:
          ended = true;
          break;
        default:
          break;
      }
      if (keep) {
        out.events.push_back(e);
        raw.ticks.push_back(tick);
      }
      off = next;
      if (ended) break;
    }
  }
  if (regressions)
    diags.push_back({Severity::Warning, path, first_regression,
                     fmt::format("{} timestamps went backwards on one thread; clamped to the "
                                 "previous record's",
                                 regressions)});
  out.clean_exit = ended || (h.flags & VPROF_FLAG_CLOSED) || (h.flags & VPROF_FLAG_PROCESS_EXITED);
  out.torn = !out.clean_exit;
  if (out.torn)
    diags.push_back({Severity::Warning, path, size,
                     fmt::format("no thread-exit record: the process was killed (or still runs); "
                                 "{} records recovered, the tail after the last one is lost",
                                 out.events.size())});
  else if (!ended && (h.flags & VPROF_FLAG_PROCESS_EXITED))
    diags.push_back({Severity::Info, path, size,
                     "the process exited while this thread still ran; its records end there"});
  if (h.dropped_records)
    diags.push_back({Severity::Warning, path, 88,
                     fmt::format("{} records dropped (trace budget full)", h.dropped_records)});
}

// One clock for all files: the rate from the widest anchor span seen (all
// processes of one machine share the tick counter), each process's own anchor.
double common_rate(const std::vector<vprof_file_header> &headers) {
  double best = 0;
  uint64_t best_span = 0;
  std::vector<double> startup;
  for (const auto &h : headers) {
    if (h.clock_source == VPROF_CLOCK_MONOTONIC) return 1.0;
    startup.push_back(h.ticks_per_ns);
    if (h.anchor1_ns > h.anchor0_ns && h.anchor1_ticks > h.anchor0_ticks) {
      uint64_t span = h.anchor1_ns - h.anchor0_ns;
      if (span > best_span) {
        best_span = span;
        best = static_cast<double>(h.anchor1_ticks - h.anchor0_ticks) / static_cast<double>(span);
      }
    }
  }
  // Below 50 ms the anchors' jitter (tens of ns) outweighs the start-up calibration.
  if (best_span >= 50'000'000) return best;
  std::sort(startup.begin(), startup.end());
  return startup.empty() ? 1.0 : startup[startup.size() / 2];
}

}  // namespace

bool read_trace_file(const std::string &path, ThreadStream &out, std::vector<Diagnostic> &diags) {
  MappedFile f(path);
  vprof_file_header h;
  if (!check_header(path, f, h, diags)) return false;
  Clock clock{h.clock_source == VPROF_CLOCK_MONOTONIC ? 1.0 : h.ticks_per_ns, h.anchor0_ticks,
              static_cast<int64_t>(h.anchor0_ns)};
  RawInfo raw;
  std::vector<std::string> labels{""};
  std::unordered_map<std::string, uint32_t> index{{"", 0}};
  decode(path, f, h, clock, out, raw, diags, labels, index);
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
        // The waker's record is lost (dropped, killed, or another run): take
        // the runtime's delta at its word.
        e.release_ts = e.ts - static_cast<int64_t>(std::llround(delta / ticks_per_ns));
        ++unresolved;
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
  DIR *d = opendir(dir.c_str());
  if (!d) return Error{fmt::format("{}: cannot open trace directory: {}", dir, std::strerror(errno))};
  std::vector<std::string> files;
  while (dirent *ent = readdir(d)) {
    std::string name = ent->d_name;
    if (name.size() > 6 && name.rfind("t-", 0) == 0 && name.substr(name.size() - 4) == ".vpt")
      files.push_back(dir + "/" + name);
  }
  closedir(d);
  if (files.empty())
    return Error{fmt::format("{}: no trace files (t-*.vpt) in this directory", dir)};
  std::sort(files.begin(), files.end());

  Trace trace;
  trace.dir = dir;
  trace.labels.push_back("");
  std::unordered_map<std::string, uint32_t> label_index{{"", 0}};

  std::vector<std::unique_ptr<MappedFile>> maps;
  std::vector<vprof_file_header> headers;
  std::vector<std::string> paths;
  for (const auto &path : files) {
    auto f = std::make_unique<MappedFile>(path);
    vprof_file_header h;
    if (!check_header(path, *f, h, trace.diagnostics)) continue;
    maps.push_back(std::move(f));
    headers.push_back(h);
    paths.push_back(path);
  }
  trace.ticks_per_ns = common_rate(headers);

  std::vector<RawInfo> raw(headers.size());
  trace.threads.resize(headers.size());
  std::vector<double> probe, empty;
  for (size_t i = 0; i < headers.size(); ++i) {
    const auto &h = headers[i];
    Clock clock{trace.ticks_per_ns, h.anchor0_ticks, static_cast<int64_t>(h.anchor0_ns)};
    decode(paths[i], *maps[i], h, clock, trace.threads[i], raw[i], trace.diagnostics,
           trace.labels, label_index);
    trace.total_records += trace.threads[i].events.size();
    trace.dropped_records += trace.threads[i].dropped_records;
    if (h.probe_pair_ns > 0) probe.push_back(h.probe_pair_ns);
    if (h.empty_interval_ns > 0) empty.push_back(h.empty_interval_ns);
  }
  maps.clear();
  resolve_wakeups(trace, raw, trace.ticks_per_ns);

  // Sort streams by (pid, tid), keeping file order for reused tids.
  std::stable_sort(trace.threads.begin(), trace.threads.end(),
                   [](const ThreadStream &a, const ThreadStream &b) {
                     return a.pid != b.pid ? a.pid < b.pid : a.tid < b.tid;
                   });
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  trace.overhead.probe_pair_ns = median(probe);
  trace.overhead.empty_interval_ns = median(empty);
  return trace;
}

}  // namespace vprof::trace
