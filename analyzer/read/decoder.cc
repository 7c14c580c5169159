#include "analyzer/read/decoder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include "analyzer/read/process_files.h"
#include "analyzer/util/utf8.h"

namespace vprof::trace::detail {

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
  // Fields that pick the layout, cross-checked: a damaged one read as it
  // stands would put every chunk in the wrong place or drop a ring, silently.
  auto warn = [&](uint64_t off, std::string msg) {
    diags.push_back({Severity::Warning, path, off, std::move(msg)});
  };
  if (h.version == 0 && h.min_readable == 0)
    return fail(8, "format version 0 and min_readable 0: the header is damaged (no version is 0)");
  if (h.version < h.min_readable) {
    // Every writer sets min_readable <= version; a file of version v needs a
    // reader of min_readable: the larger is the truer layout.
    warn(8, fmt::format("format version {} is below its min_readable {}: the header is damaged; "
                        "read as version {}",
                        h.version, h.min_readable, h.min_readable));
    h.version = h.min_readable;
  }
  // Every vprof since format 8 writes min_readable 8 or later, and this reader reads
  // no older layout: a file that says it is older came from a vprof of before
  // 2026-11-26, or was relabelled (a file of this format read by an older
  // layout was misread: 11 660 of 12 000 records).
  if (h.version < VPROF_TRACE_OLDEST_READ)
    return fail(8, fmt::format("format version {}: written by a vprof older than any this one reads (format {} "
                               "and later); record the run again",
                               h.version, VPROF_TRACE_OLDEST_READ));
  if (h.cur_ring > 1) {
    warn(208, fmt::format("cur_ring {} is neither 0 nor 1: the header is damaged; ring 0 is read as "
                          "the current one",
                          h.cur_ring));
  }
  if (h.ring_valid > 1)
    warn(200, fmt::format("ring_valid {} is neither 0 nor 1: the header is damaged; read as 1", h.ring_valid));
  // No ring pending is UINT64_MAX; a pending ring becomes chunk data_chunks.
  if (h.pending_chunk != UINT64_MAX && h.pending_chunk > h.data_chunks) {
    const uint64_t other = VPROF_HEADER_BYTES + (1 - vprof_current_ring(&h)) * h.chunk_bytes;
    bool holds = other + VPROF_SLOT_BYTES <= f.size() && (f.data()[other] != 0);
    warn(216, fmt::format("pending_chunk {} is past data_chunks {}: the header is damaged; ring {} "
                          "{}",
                          h.pending_chunk, h.data_chunks, 1 - vprof_current_ring(&h),
                          holds ? "holds records and is read as pending" : "is empty"));
    if (holds) h.pending_chunk = h.data_chunks;
  }
  return true;
}

namespace {
std::string fixed_string(const char *s, size_t n) { return analyzer::valid_utf8(std::string_view(s, strnlen(s, n))); }
}  // namespace

// A thread file another user put in a trace directory that root shares
// (docs/run.md) is not read: a link (it points at some other file), or a file
// whose owner is none its process made thread files as (process files of
// version 8 keep them: ProcessFiles::thread_owners).
// A thread file whose process left no process file, in a directory where
// others did, is read but said at the loss level: another recording's file,
// or one another user put here with a pid of its own.
bool written_by_its_process(const std::string &path, const MappedFile &f, const vprof_file_header &h,
                            const trace::ProcessFiles &p, std::vector<Diagnostic> &diags) {
  const auto &owners = p.thread_owners;
  std::string why;
  if (f.link()) {
    why = "a symbolic link, not a file a recording process made; not read";
  } else if (p.files > 0 && h.pid && !p.pids.count(h.pid)) {
    diags.push_back({Severity::Warning, path, 0,
                     fmt::format("no process file p-{}.vpp beside it, as every recording process leaves: "
                                 "another recording's file, or one another user put here; read, but nothing "
                                 "vouches that it belongs to this run",
                                 h.pid)});
    return true;
  } else if (auto it = owners.find(h.pid); it != owners.end() && !it->second.count(f.owner())) {
    std::string uids;
    for (uint32_t u : it->second) uids += (uids.empty() ? "" : ", ") + std::to_string(u);
    why = fmt::format("belongs to uid {}, but its process (pid {}) made its files as uid {}: another user "
                      "put it here; not read",
                      f.owner(), h.pid, uids);
  }
  if (why.empty()) return true;
  diags.push_back({Severity::Error, path, 0, why});
  return false;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Expected<OpenedTrace> open_trace(const TraceDir &dir, std::vector<Diagnostic> &diags) {
  if (dir.thread_files().empty())
    return Error{fmt::format("{}: no trace files (t-*.vpt) in this directory", dir.path())};
  OpenedTrace out;
  out.listed = dir.thread_files().size();
  std::vector<vprof_file_header> headers;
  for (const std::string &name : dir.thread_files()) {
    const std::string path = dir.path() + "/" + name;
    auto f = std::make_unique<MappedFile>(dir.fd(), name);
    vprof_file_header h{};
    // A link is refused before its header is read: what it points to is no
    // file of this run's.
    if ((!f->link() && !check_header(path, *f, h, diags)) ||
        !written_by_its_process(path, *f, h, dir.processes(), diags)) {
      FileLoss l;
      l.file = path;
      l.unreadable = true;
      l.bytes = f->size();
      l.first = diags.back().str();
      out.unreadable.push_back(std::move(l));
      continue;
    }
    out.files.push_back({path, std::move(f), h, Clock{}});
    headers.push_back(h);
  }
  out.ticks_per_ns = common_rate(headers);
  std::vector<double> probe, empty;
  for (OpenedFile &f : out.files) {
    const vprof_file_header &h = f.header;
    f.clock = Clock{out.ticks_per_ns, h.anchor0_ticks, static_cast<int64_t>(h.anchor0_ns)};
    if (h.probe_pair_ns > 0) probe.push_back(h.probe_pair_ns);
    if (h.empty_interval_ns > 0) empty.push_back(h.empty_interval_ns);
  }
  out.overhead.probe_pair_ns = median(probe);
  out.overhead.empty_interval_ns = median(empty);
  return out;
}

uint32_t Labels::id(const std::string &s) {
  auto [pos, inserted] = index.emplace(s, static_cast<uint32_t>(names.size()));
  if (inserted) names.push_back(s);
  return pos->second;
}

Decoder::Decoder(const std::string &path, const MappedFile &f, const vprof_file_header &h,
                 const Clock &clock, std::vector<Diagnostic> &diags, Labels &labels)
    : path_(path), base_(f.data()), size_(f.size()), h_(h), clock_(clock), diags_(diags),
      labels_(labels) {
  loss_.file = path;
  // Two rings before the data chunks, one of them maybe pending
  // (trace_format.h); overflow-safe: the header may be damaged.
  const uint64_t rings = vprof_rings_before_data(&h);
  auto chunk_at = [&](uint64_t i) {
    using u128 = unsigned __int128;
    u128 off = u128{VPROF_HEADER_BYTES} + (u128{i} + rings) * h.chunk_bytes;
    return off > u128{UINT64_MAX} ? UINT64_MAX : static_cast<uint64_t>(off);
  };
  const uint64_t cur = vprof_current_ring(&h);
  const uint64_t current = VPROF_HEADER_BYTES + cur * h.chunk_bytes;
  const bool pending = vprof_ring_pending(&h);
  const uint64_t pending_at = VPROF_HEADER_BYTES + (1 - cur) * h.chunk_bytes;
  // The chunk after the last data chunk: its first record is the one that
  // did not fit in it.
  const uint64_t after = pending ? pending_at : current;
  const bool after_valid = pending || h.ring_valid;
  for (uint64_t i = 0; i < h.data_chunks; ++i) {
    uint64_t off = chunk_at(i);
    if (off >= size_) break;
    chunks_.push_back(off);
  }
  if (h.data_chunks > 0) {
    // Every full chunk but the last in full, and most of the last one: the
    // writer moves on when a record does not fit before the chunk's two
    // reserved slots, and then writes that record first in the current
    // chunk. So the last full chunk holds more than the chunk less the
    // reserved slots and that record (kFullChunkSlack when the current chunk
    // has nothing to say).
    uint64_t slack = kFullChunkSlack;
    if (after_valid && after < size_ && size_ - after >= VPROF_SLOT_BYTES) {
      vprof_slot s;
      std::memcpy(&s, base_ + after, sizeof s);
      if (uint64_t slots = vprof_record_slots(s.w0, s.arg)) slack = (2 + slots - 1) * VPROF_SLOT_BYTES;
    }
    using u128 = unsigned __int128;
    u128 want = u128{chunk_at(h.data_chunks - 1)} + h.chunk_bytes - std::min<uint64_t>(slack, h.chunk_bytes);
    if (want > size_) {
      uint64_t w = want > u128{UINT64_MAX} ? UINT64_MAX : static_cast<uint64_t>(want);
      loss_.missing_bytes += w - size_;
      lose(Severity::Warning, size_,
           fmt::format("the file was cut: its header counts {} full chunks of {} bytes, so it "
                       "held at least {} bytes, but {} are left ({} of the chunks); {} or more "
                       "bytes of records are gone",
                       h.data_chunks, h.chunk_bytes, w, size_, chunks_.size(), w - size_));
    }
  }
  if (pending && pending_at < size_) chunks_.push_back(pending_at);
  if (h.ring_valid && current < size_) chunks_.push_back(current);
}

void Decoder::lose(Severity sev, uint64_t off, std::string msg) {
  diags_.push_back({sev, path_, off, std::move(msg)});
  if (loss_.first.empty()) loss_.first = diags_.back().str();
}

void Decoder::skip_rest(uint64_t from) {
  uint64_t used_end = from, records = 0;
  for (uint64_t o = from; o + VPROF_SLOT_BYTES <= chunk_end_; o += VPROF_SLOT_BYTES) {
    vprof_slot s;
    std::memcpy(&s, base_ + o, sizeof s);
    if (s.w0 & VPROF_KIND_MASK) ++records;
    if (s.w0 | s.arg) used_end = o + VPROF_SLOT_BYTES;
  }
  loss_.bytes += std::max(used_end, std::min(from + VPROF_SLOT_BYTES, chunk_end_)) - from;
  loss_.records += std::max<uint64_t>(records, 1);
}

void Decoder::chunk_ran_out() {
  if (off_ < chunk_end_) {  // part of a slot: the writer writes whole slots
    loss_.bytes += chunk_end_ - off_;
    loss_.records += 1;
    lose(Severity::Warning, off_,
         fmt::format("the file ends {} bytes into a record: it was cut; the record is lost",
                     chunk_end_ - off_));
  }
  if (chunk_start_ == VPROF_HEADER_BYTES && chunk_end_ == size_ &&
      size_ < chunk_start_ + h_.chunk_bytes)
    eof_in_ring_ = true;
}

void Decoder::describe(ThreadStream &meta) const {
  meta.pid = h_.pid;
  meta.tid = h_.tid;
  meta.ppid = h_.ppid;
  meta.file = path_;
  meta.comm = fixed_string(h_.comm, sizeof h_.comm);
  meta.thread_name = fixed_string(h_.thread_name, sizeof h_.thread_name);
  meta.dropped_records = h_.dropped_records;
  meta.late_switches = h_.late_switches;
  meta.off_intervals = h_.off_intervals;
}

uint32_t Decoder::label_of(uint32_t sid, uint64_t off) {
  if (sid == 0) return 0;
  auto it = strings_.find(sid);
  if (it == strings_.end()) {
    diags_.push_back({Severity::Warning, path_, off,
                      fmt::format("label string {} was never defined; interval left unlabeled", sid)});
    return 0;
  }
  return labels_.id(it->second);
}

bool Decoder::next_chunk() {
  if (chunk_ > 0) {
    // Done with the previous chunk: unmap its pages so that a stream's
    // resident memory stays one chunk, not the file (the page cache keeps
    // them; nothing is read twice).
    constexpr uint64_t kPage = 4096;
    uint64_t b = (chunks_[chunk_ - 1] + kPage - 1) & ~(kPage - 1);
    uint64_t e = std::min<uint64_t>(chunks_[chunk_ - 1] + h_.chunk_bytes, size_) & ~(kPage - 1);
    if (e > b) madvise(const_cast<uint8_t *>(base_) + b, e - b, MADV_DONTNEED);
  }
  if (ended_ || chunk_ >= chunks_.size()) return false;
  off_ = chunk_start_ = chunks_[chunk_++];
  chunk_end_ = std::min<uint64_t>(off_ + h_.chunk_bytes, size_);
  in_chunk_ = true;
  return true;
}

// A record of one slot the reader takes as it is (the kinds table's
// VPROF_READ_PLAIN: it changes nothing but the wait it may open). One bit per
// kind: a test per record, where six comparisons were.
constexpr uint32_t kPlainKinds = 0u
#define VPROF_PLAIN_BIT_(NAME, value, slots, writer, read, name) | ((read) == VPROF_READ_PLAIN ? 1u << (value) : 0u)
    VPROF_RECORD_KINDS(VPROF_PLAIN_BIT_);
#undef VPROF_PLAIN_BIT_
static_assert(VPROF_K_MAX_ <= 32, "kPlainKinds holds one bit per kind");
inline bool is_plain(uint32_t kind) { return kind < 32 && ((kPlainKinds >> kind) & 1u); }

// The fields every kind has.
inline void Decoder::fill(const vprof_slot &s, uint32_t kind, uint64_t tick, Event &e) const {
  e = Event{};
  e.ts = clock_.ns(tick);
  e.arg = s.arg;
  e.kind = static_cast<Kind>(kind);
}

bool Decoder::peek_tick(uint64_t off, uint64_t &tick) const {
  uint64_t end = chunk_end_;
  if (off + VPROF_SLOT_BYTES > end) {  // the next record is the next chunk's first
    if (chunk_ >= chunks_.size()) return false;
    off = chunks_[chunk_];
    end = std::min<uint64_t>(off + h_.chunk_bytes, size_);
    if (off + VPROF_SLOT_BYTES > end) return false;
  }
  vprof_slot s;
  std::memcpy(&s, base_ + off, sizeof s);
  uint32_t kind = static_cast<uint32_t>(s.w0 & VPROF_KIND_MASK);
  if (kind == VPROF_K_NONE || kind >= VPROF_K_MAX_) return false;
  tick = h_.tsc_base + (s.w0 >> VPROF_TS_SHIFT);
  return true;
}

// A step back is clamped to the previous record's time (time on one thread
// never goes backwards; counted). A step far ahead is the record's own
// damage when the next record is back between the two: dropped, so that it
// does not clamp every record until the clock catches up with it. Unless
// the record after that one is at or past it: then it is a signal handler's
// record, written after a probe read the clock and before the probe wrote
// (PostgreSQL's SIGUSR1 handler setting a latch: a RELEASE, which names a
// waker), and it is kept; the probe's record is clamped.
bool Decoder::odd_step(const vprof_slot &s, uint32_t kind, uint64_t off, uint64_t &tick) {
  if (tick < last_tick_) {
    if (regressions_++ == 0) first_regression_ = off;
    tick = last_tick_;
    return true;
  }
  const uint64_t slots = vprof_record_slots(s.w0, s.arg);
  const uint64_t off1 = off + slots * VPROF_SLOT_BYTES;
  uint64_t next;
  if (!peek_tick(off1, next) || next >= tick || next < last_tick_)
    return true;  // the clock went there (or nothing says otherwise)
  if (off1 + VPROF_SLOT_BYTES <= chunk_end_) {  // the two after it in this chunk
    vprof_slot n;
    std::memcpy(&n, base_ + off1, sizeof n);
    const uint64_t off2 = off1 + vprof_record_slots(n.w0, n.arg) * VPROF_SLOT_BYTES;
    uint64_t after;
    if (off2 + VPROF_SLOT_BYTES <= chunk_end_ && peek_tick(off2, after) && after >= tick) return true;
  }
  if (kind == VPROF_K_STRING) {  // its bytes are still good; its time is not used
    tick = last_tick_;
    return true;
  }
  if (jumps_++ == 0) first_jump_ = off;
  loss_.records += 1;
  loss_.bytes += slots * VPROF_SLOT_BYTES;
  return false;
}

// One of a SITE_SPAN's two events: the site's begin at the record's tick,
// its end `length` ticks later.
inline Event site_event(Kind kind, uint32_t site, uint64_t tick, const Clock &clock) {
  Event e{};
  e.ts = clock.ns(tick);
  e.arg = site;
  e.kind = kind;
  return e;
}

// After fill(): fills what the kind adds (only the sync kinds add
// anything; the others return at the first test, inlined into the loops).
// A site's begin keeps its id only: a kill while its end turned it into a
// SITE_SPAN may have left the length in the high half.
inline void Decoder::plain(uint32_t kind, const vprof_slot &s, Event &e, uint32_t &wake_delta) {
  if (kind == VPROF_K_SITE_BEGIN) e.arg = static_cast<uint32_t>(s.arg);
  if (kind < VPROF_K_WAIT_BEGIN || kind > VPROF_K_RELEASE) return;
  switch (kind) {
    case VPROF_K_WAIT_BEGIN:
      pending_obj_ = s.arg & VPROF_OBJ_MASK;
      pending_role_ = static_cast<uint8_t>(s.arg >> 56);
      e.arg = pending_obj_;
      e.role = pending_role_;
      break;
    case VPROF_K_RELEASE:
      e.arg = s.arg & VPROF_OBJ_MASK;
      e.role = static_cast<uint8_t>(s.arg >> 56);
      break;
    case VPROF_K_WAIT_END: {
      uint32_t lo = static_cast<uint32_t>(s.arg);
      e.arg = pending_obj_;
      e.role = pending_role_;
      e.acquired = (lo & VPROF_WAIT_NOT_ACQUIRED) ? 0 : 1;
      e.waker_tid = lo & ~static_cast<uint32_t>(VPROF_WAIT_NOT_ACQUIRED);
      if (e.waker_tid) wake_delta = static_cast<uint32_t>(s.arg >> 32);
      break;
    }
    default:
      break;
  }
}

// The end of a stretch `length` ticks from `tick` (a call's span, a run, a
// recorder's pause): a length past the step check that would reach beyond
// the record at `next` is damage, and that record's time caps it.
uint64_t Decoder::capped_end(uint64_t tick, uint64_t length, uint64_t next) const {
  uint64_t end = tick + length, after;
  if (length > kMaxStep && peek_tick(next, after) && after < end) end = std::max(after, tick);
  return end;
}

bool Decoder::next(Event &e, uint64_t &tick, uint32_t &wake_delta) {
  if (span_end_) {
    span_end_ = false;
    tick = last_tick_ = span_end_tick_;
    e = site_event(Kind::SiteEnd, span_site_, tick, clock_);
    e.type_label = span_calls_;
    wake_delta = 0;
    return true;
  }
  while (true) {
    if (ended_) return false;
    if (!in_chunk_ && !next_chunk()) return false;
    if (off_ + VPROF_SLOT_BYTES > chunk_end_) {
      chunk_ran_out();
      in_chunk_ = false;
      continue;
    }
    uint64_t off = off_;
    vprof_slot s;
    std::memcpy(&s, base_ + off, sizeof s);
    uint32_t kind = static_cast<uint32_t>(s.w0 & VPROF_KIND_MASK);
    if (kind == VPROF_K_NONE) {  // the rest of this chunk was never written
      in_chunk_ = false;
      continue;
    }
    if (kind >= VPROF_K_MAX_) {
      lose(Severity::Error, off,
           fmt::format("unknown record kind {}: data corrupted; the rest of this chunk is skipped",
                       kind));
      skip_rest(off);
      in_chunk_ = false;
      continue;
    }
    tick = h_.tsc_base + (s.w0 >> VPROF_TS_SHIFT);
    if (tick - last_tick_ > kMaxStep && !odd_step(s, kind, off, tick)) {
      off_ = off + vprof_record_slots(s.w0, s.arg) * VPROF_SLOT_BYTES;
      continue;  // a corrupt time: the record is dropped (counted)
    }
    last_tick_ = tick;
    fill(s, kind, tick, e);
    uint64_t next = off + VPROF_SLOT_BYTES;
    wake_delta = 0;
    bool keep = true;
    // A two-slot record's second slot; a record cut by the chunk's end is damage.
    auto extension = [&](const char *cut, vprof_slot &ext) {
      if (next + VPROF_SLOT_BYTES > chunk_end_) {
        lose(Severity::Error, off, cut);
        skip_rest(off);
        next = chunk_end_;
        return false;
      }
      std::memcpy(&ext, base_ + next, sizeof ext);
      next += VPROF_SLOT_BYTES;
      return true;
    };
    switch (kind) {
      case VPROF_K_IV_BEGIN_LABELED: {
        vprof_slot ext;
        if (!(keep = extension("labeled interval record cut short", ext))) break;
        e.kind = Kind::IntervalBegin;
        e.type_label = label_of(static_cast<uint32_t>(ext.w0), off);
        e.client_label = label_of(static_cast<uint32_t>(ext.arg), off);
        break;
      }
      case VPROF_K_PREEMPTED: {
        vprof_slot ext;
        if (!(keep = extension("preempted record cut short", ext))) break;
        // CLOCK_MONOTONIC ns, the domain every ts is in; an inverted or
        // future stretch is damage: kept as an empty one (changes nothing).
        int64_t out = static_cast<int64_t>(s.arg), in = static_cast<int64_t>(ext.w0);
        if (out < 0 || in < out || in > e.ts + 1000000) out = in = e.ts;
        e.release_ts = out;
        e.arg = static_cast<uint64_t>(in);
        e.role = ext.arg == 1 ? 1 : 0;  // a sleep's, not a preemption (format 10)
        break;
      }
      case VPROF_K_STRING: {
        uint32_t sid = static_cast<uint32_t>(s.arg);
        uint64_t len = s.arg >> 32;
        uint64_t slots = vprof_record_slots(s.w0, s.arg) - 1;  // the payload's
        if (len > VPROF_STRING_MAX_BYTES || next + slots * VPROF_SLOT_BYTES > chunk_end_) {
          lose(Severity::Error, off,
               fmt::format("string record of {} bytes cut short or too long", len));
          skip_rest(off);
          next = chunk_end_;
        } else {
          // Labels come from clients: any bytes (analyzer/util/utf8.h).
          strings_[sid] = analyzer::valid_utf8(std::string_view(reinterpret_cast<const char *>(base_ + next), len));
          next += slots * VPROF_SLOT_BYTES;
        }
        keep = false;
        break;
      }
      case VPROF_K_SITE_SPAN: {
        // The end is given by the next call. A damaged length would put every
        // later record before it: the next record's time caps it.
        const uint64_t end = capped_end(tick, s.arg >> 32, next);
        span_site_ = static_cast<uint32_t>(s.arg);
        e = site_event(Kind::SiteBegin, span_site_, tick, clock_);
        span_end_ = true;
        span_end_tick_ = end;
        span_calls_ = 0;
        break;
      }
      case VPROF_K_SITE_RUN: {
        // Calls of one site in a row: the time between them (the caller's)
        // first, then one call as long as their sum. A damaged length is
        // capped as a span's is; the calls' sum never passes it.
        vprof_slot ext;
        if (!(keep = extension("site run record cut short", ext))) break;
        const uint64_t end = capped_end(tick, s.arg >> 32, next);
        const uint64_t calls = std::min<uint64_t>(ext.w0 >> VPROF_TS_SHIFT, end - tick);
        tick = last_tick_ = end - calls;
        span_calls_ = static_cast<uint32_t>(std::min<uint64_t>(ext.arg >> 32, UINT32_MAX));
        span_site_ = static_cast<uint32_t>(s.arg);
        e = site_event(Kind::SiteBegin, span_site_, tick, clock_);
        span_end_ = true;
        span_end_tick_ = end;
        break;
      }
      case VPROF_K_RECORDER: {
        // The recorder's pause, from this record's time. A damaged length
        // would reach past later records: the next record's time caps it.
        const uint64_t end = capped_end(tick, s.arg, next);
        e.release_ts = e.ts;
        e.arg = static_cast<uint64_t>(clock_.ns(end));
        break;
      }
      case VPROF_K_DROP_BEGIN:
        drop_begin_ts_ = e.ts;
        break;
      case VPROF_K_THREAD_EXIT:
        ended_ = true;
        break;
      default:
        plain(kind, s, e, wake_delta);
        break;
    }
    off_ = next;
    if (keep) return true;
  }
}

size_t Decoder::next_batch(Event *__restrict e, TickDelta *__restrict a, size_t n) {
  size_t k = 0;
  while (k < n) {
    // Plain records inside the current chunk, with the position and the
    // last tick in locals; anything else goes through next().
    if (in_chunk_ && !ended_ && !span_end_) {
      const uint8_t *const base = base_;
      const uint64_t tsc_base = h_.tsc_base;
      uint64_t off = off_, last = last_tick_;
      // As many whole slots as the chunk holds and the caller wants: one
      // bound for the loop instead of two tests per record.
      const size_t stop =
          off + VPROF_SLOT_BYTES <= chunk_end_
              ? k + std::min<uint64_t>(n - k, (chunk_end_ - off) / VPROF_SLOT_BYTES)
              : k;
      for (; k < stop; ++k, off += VPROF_SLOT_BYTES) {
        vprof_slot s;
        std::memcpy(&s, base + off, sizeof s);
        const uint32_t kind = static_cast<uint32_t>(s.w0 & VPROF_KIND_MASK);
        const uint64_t tick = tsc_base + (s.w0 >> VPROF_TS_SHIFT);
        // One test for a step back and a step far ahead: next() sorts them.
        if (!is_plain(kind) || tick - last > kMaxStep) {
          // A call's span, both events here when they fit; a long one
          // (its length checked against the next record) goes to next().
          const uint64_t length = s.arg >> 32;
          if (kind != VPROF_K_SITE_SPAN || tick - last > kMaxStep || length > kMaxStep || k + 1 >= n)
            break;
          e[k] = site_event(Kind::SiteBegin, static_cast<uint32_t>(s.arg), tick, clock_);
          e[k + 1] = site_event(Kind::SiteEnd, static_cast<uint32_t>(s.arg), tick + length, clock_);
          a[k] = {tick, 0};
          a[k + 1] = {tick + length, 0};
          last = tick + length;
          ++k;  // and the loop's: two events from one slot
          continue;
        }
        last = tick;
        a[k].tick = tick;
        fill(s, kind, tick, e[k]);
        a[k].delta = 0;
        plain(kind, s, e[k], a[k].delta);
      }
      off_ = off;
      last_tick_ = last;
      if (k == n) break;
    }
    if (!next(e[k], a[k].tick, a[k].delta)) break;
    ++k;
  }
  return k;
}

void Decoder::finish(ThreadStream &meta, uint64_t events) {
  if (regressions_)
    lose(Severity::Warning, first_regression_,
         fmt::format("{} timestamps went backwards on one thread; clamped to the previous "
                     "record's",
                     regressions_));
  loss_.clamped = regressions_;
  if (jumps_)
    lose(Severity::Warning, first_jump_,
         fmt::format("{} records whose time jumped far ahead of the records around them were "
                     "dropped (corrupt timestamps)",
                     jumps_));
  if (!ended_ && (h_.flags & VPROF_FLAG_CLOSED) && eof_in_ring_) {
    // The thread closed its file with a THREAD_EXIT in the ring, which the
    // runtime keeps at its full size: the end of the ring is gone.
    uint64_t gone = VPROF_HEADER_BYTES + h_.chunk_bytes - size_;
    loss_.missing_bytes += gone;
    loss_.records += 1;
    lose(Severity::Warning, size_,
         fmt::format("the file was cut inside its ring: {} bytes are gone, with at least the "
                     "thread-exit record; {} records before the cut are kept",
                     gone, events));
  }
  meta.drop_begin_ts = drop_begin_ts_;
  meta.clean_exit =
      ended_ || (h_.flags & VPROF_FLAG_CLOSED) || (h_.flags & VPROF_FLAG_PROCESS_EXITED);
  meta.torn = !meta.clean_exit;
  if (meta.torn)
    diags_.push_back({Severity::Warning, path_, size_,
                      fmt::format("no thread-exit record: the process was killed (or still runs); "
                                  "{} records recovered, the tail after the last one is lost",
                                  events)});
  else if (!ended_ && (h_.flags & VPROF_FLAG_PROCESS_EXITED))
    diags_.push_back({Severity::Info, path_, size_,
                      "the process exited while this thread still ran; its records end there"});
  // Counted once, as `dropped_records` (a loss): the note only says where.
  if (h_.dropped_records)
    diags_.push_back({Severity::Info, path_, 88,
                      fmt::format("{} records dropped (trace budget full, no space for the next "
                                  "chunk, or a signal handler re-entered a probe)",
                                  h_.dropped_records)});
}

}  // namespace vprof::trace::detail
