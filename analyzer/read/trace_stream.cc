#include "analyzer/read/trace_stream.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "analyzer/read/decoder.h"
#include "analyzer/read/open_frames.h"
#include "analyzer/util/gallop.h"

namespace vprof::trace {

using detail::Clock;
using detail::Decoder;
using detail::MappedFile;

struct TraceStream::Impl {
  std::string dir;
  std::shared_ptr<const TraceDir> trace_dir;
  std::vector<std::unique_ptr<FileSource>> files;  // (pid, tid) order
  std::vector<std::pair<uint32_t, const FileSource *>> by_tid;  // sorted by tid, then file
  std::vector<Diagnostic> diagnostics;
  size_t listed = 0;
  std::vector<FileLoss> unreadable;
  detail::Labels labels;
  double ticks_per_ns = 1.0;
  Overhead overhead;
  uint64_t unresolved = 0;
  // Found at open, then each file's (in (pid, tid) order; each in the order found).
  std::vector<Diagnostic> all_diagnostics() const;
  // A release tick the runtime gave as a delta from a wake at `wake_ns`, in
  // the waker's own clock: its process's anchor, not the waiter's, so that it
  // falls where the waker's records put it (before the frame it released in
  // ends). Among files of a reused tid, the latest process begun by the wake.
  int64_t waker_ns(uint32_t waker_tid, uint64_t tick, int64_t wake_ns, uint32_t delta) const;
  // The files of thread `tid` (more than one when a tid was reused), in file order.
  auto files_of(uint32_t tid) const {
    return std::equal_range(by_tid.begin(), by_tid.end(), std::make_pair(tid, (const FileSource *)nullptr),
                            [](const auto &a, const auto &b) { return a.first < b.first; });
  }
};

// One trace file, decoded a record at a time into a buffer the merge consumes.
class FileSource : public EventSource {
  static constexpr size_t kBatch = size_t{1} << 16;  // events decoded at most a step, but a window's stack

 public:
  FileSource(TraceStream &ts, std::string path, std::unique_ptr<MappedFile> f,
             const vprof_file_header &h, const Clock &clock)
      : ts_(ts), path_(std::move(path)), file_(std::move(f)), h_(h), clock_(clock),
        dec_(path_, *file_, h_, clock, diags_, labels_) {
    pid_ = h.pid;
    tid_ = h.tid;
    dec_.describe(meta_);
  }

  void fill(size_t n) override {
    while (size() < n && !exhausted()) {
      if (!done_) {
        // Past a window whose stack is still being read, at least as many
        // again: the decoded part is scanned again at each step. A request
        // for more than a batch is met a batch at a time: the buffer grows
        // with what the file holds, not with n (an epoch of 2^30 records
        // asked for 2^30 events of a 10-record file: bad_alloc).
        const size_t old = end_, want = std::max(std::min(n - size(), kBatch), end_ - ready_);
        if (buf_.size() < old + want) {  // grows only: decoding overwrites what is there
          buf_.resize(old + want);
          aux_.resize(old + want);
        }
        const size_t got = dec_.next_batch(buf_.data() + old, aux_.data() + old, want);
        end_ = old + got;
        count_ += got;
        if (got < want) {
          done_ = true;
          dec_.finish(meta_, count_);
        }
      }
      make_ready();
    }
  }
  const Event *data() const override { return buf_.data() + head_; }
  size_t size() const override { return ready_ - head_; }
  bool exhausted() const override { return done_ && ready_ == end_; }
  size_t size_hint() const override {
    return (file_->size() - VPROF_HEADER_BYTES) / VPROF_SLOT_BYTES;
  }
  void consume(size_t k) override {
    head_ += k;
    if (head_ > 4096 && 2 * head_ > end_) {  // moved to the front; the storage stays
      std::copy(buf_.begin() + ptrdiff_t(head_), buf_.begin() + ptrdiff_t(end_), buf_.begin());
      std::copy(aux_.begin() + ptrdiff_t(head_), aux_.begin() + ptrdiff_t(end_), aux_.begin());
      end_ -= head_;
      ready_ -= head_;
      // (Both lists are empty unless events were consumed before settle():
      // then the consumed ones are gone, unsettled.)
      for (std::vector<size_t> *v : {&wakes_, &labeled_}) {
        size_t kept = 0;
        for (size_t i : *v)
          if (i >= head_) (*v)[kept++] = i - head_;
        v->resize(kept);
      }
      head_ = 0;
    }
  }

  void settle(int64_t until) override {
    publish_labels();
    // Releases older than the last settle's end serve only as "the latest
    // release before" for later wake-ups: one per object is enough.
    if (++settles_ % 64 == 0) prune(prev_until_);
    prev_until_ = until;
    size_t j = 0;
    for (; j < wakes_.size(); ++j) {
      const size_t i = wakes_[j];
      if (i < head_) continue;  // consumed unsettled: nothing to keep
      Event &e = buf_[i];
      if (e.ts >= until) break;  // times do not go back: the rest are later too
      const Aux &a = aux_[i];
      uint32_t want = static_cast<uint32_t>(a.tick) - a.delta;
      if (!ts_.find_release(e.waker_tid, e.arg, a.tick, want, e.release_ts)) {
        // The waker's record is lost (dropped, killed, or another run), or
        // the runtime does not write it (a lock's release): take the
        // runtime's delta at its word.
        e.release_ts = ts_.impl_->waker_ns(e.waker_tid, a.tick - a.delta, e.ts, a.delta);
        if (vprof_release_recorded_by_default(e.role)) ++ts_.impl_->unresolved;
      }
    }
    wakes_.erase(wakes_.begin(), wakes_.begin() + ptrdiff_t(j));
  }

  // The latest release of obj at or before tick, if its low 32 bits match.
  bool release(uint64_t obj, uint64_t tick, uint32_t low_bits, int64_t &ts) const {
    auto it = releases_.find(obj);
    if (it == releases_.end()) return false;
    const Releases &rs = it->second;
    // One thread's wake-ups come in time order: gallop from the last answer.
    const Release *b = rs.rel.data(), *e = b + rs.rel.size();
    const Release *r = analyzer::upper_bound_from(b, e, b + std::min(rs.hint, rs.rel.size()), tick,
                                                  [](const Release &x) { return x.tick; });
    rs.hint = size_t(r - b);
    if (r == b || static_cast<uint32_t>(std::prev(r)->tick) != low_bits) return false;
    ts = std::prev(r)->ts;
    return true;
  }

  const ThreadStream &meta() const { return meta_; }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }
  uint64_t count() const { return count_; }
  const vprof_file_header &header() const { return h_; }
  const Clock &clock() const { return clock_; }
  const FileLoss &loss() const { return dec_.loss(); }

 private:
  using Aux = detail::Decoder::TickDelta;
  struct Release {
    uint64_t tick;
    int64_t ts;
  };
  struct Releases {
    std::vector<Release> rel;  // in tick order
    mutable size_t hint = 0;   // where the last lookup ended
  };

  // The decoder numbers labels in this file's table (so that sources can be
  // filled in parallel); here, serially and in (pid, tid) order as settle()
  // runs, they get the trace's numbers in order of first use: the numbering
  // a serial decode of the same fills would give.
  void publish_labels() {
    detail::Labels &global = ts_.impl_->labels;
    for (size_t l = label_map_.size(); l < labels_.names.size(); ++l)
      label_map_.push_back(global.id(labels_.names[l]));
    for (size_t i : labeled_) {
      buf_[i].type_label = label_map_[buf_[i].type_label];
      buf_[i].client_label = label_map_[buf_[i].client_label];
    }
    labeled_.clear();
  }

  // Decoded events become readable: indexed for settle(), and, after a
  // WINDOW record that resumed with the stack unknown, the enters of the
  // frames open at it put in after it (open_frames.h). Stops at such a
  // record while the rest of its window is not decoded yet.
  void make_ready() {
    for (; ready_ < end_; ++ready_) {
      const Event &e = buf_[ready_];
      if (e.kind == Kind::Release)
        releases_[e.arg].rel.push_back({aux_[ready_].tick, e.ts});
      else if (e.kind == Kind::WaitEnd && e.waker_tid)
        wakes_.push_back(ready_);
      else if (e.kind == Kind::IntervalBegin && (e.type_label | e.client_label))
        labeled_.push_back(ready_);
      else if (resumes_unknown(e) && !insert_open_frames())
        return;
    }
  }

  bool insert_open_frames() {
    enters_.clear();
    if (!open_frames(buf_.data() + ready_, buf_.data() + end_, done_, enters_)) return false;
    const size_t k = enters_.size(), at = ready_ + 1;
    if (k == 0) return true;
    if (buf_.size() < end_ + k) {
      buf_.resize(end_ + k);
      aux_.resize(end_ + k);
    }
    std::move_backward(buf_.begin() + ptrdiff_t(at), buf_.begin() + ptrdiff_t(end_),
                       buf_.begin() + ptrdiff_t(end_ + k));
    std::move_backward(aux_.begin() + ptrdiff_t(at), aux_.begin() + ptrdiff_t(end_),
                       aux_.begin() + ptrdiff_t(end_ + k));
    std::copy(enters_.begin(), enters_.end(), buf_.begin() + ptrdiff_t(at));
    std::fill(aux_.begin() + ptrdiff_t(at), aux_.begin() + ptrdiff_t(at + k), Aux{aux_[ready_].tick, 0});
    end_ += k;
    ready_ += k;  // the enters need no index; the loop steps past the last
    return true;
  }

  void prune(int64_t before) {
    for (auto &[obj, rs] : releases_) {
      std::vector<Release> &rel = rs.rel;
      size_t k = 0;  // keep the last one before `before` and everything after
      while (k + 1 < rel.size() && rel[k + 1].ts < before) ++k;
      rel.erase(rel.begin(), rel.begin() + ptrdiff_t(k));
      rs.hint = rs.hint > k ? rs.hint - k : 0;
    }
  }

  TraceStream &ts_;
  std::string path_;
  std::unique_ptr<MappedFile> file_;
  vprof_file_header h_;
  Clock clock_;
  // This file's own diagnostics and label table: fill() touches nothing
  // another source's fill() does (the merge fills sources in parallel).
  std::vector<Diagnostic> diags_;
  detail::Labels labels_;
  std::vector<uint32_t> label_map_;  // labels_ id -> the trace's id
  std::vector<size_t> labeled_;      // buffered labeled begins not yet renumbered
  std::vector<size_t> wakes_;        // buffered wake-ups (WaitEnd with a waker) not yet settled
  Decoder dec_;
  ThreadStream meta_;
  // Buffered events are [head_, end_); the vectors' sizes are their capacity,
  // so that refilling does not value-initialize each slot before decoding.
  std::vector<Event> buf_;
  std::vector<Aux> aux_;  // parallel to buf_
  // [head_, ready_) are readable, [ready_, end_) decoded and not yet.
  size_t head_ = 0, ready_ = 0, end_ = 0;
  std::vector<Event> enters_;  // insert_open_frames' scratch
  uint64_t count_ = 0, settles_ = 0;
  int64_t prev_until_ = std::numeric_limits<int64_t>::min();
  bool done_ = false;
  std::unordered_map<uint64_t, Releases> releases_;
};

std::vector<Diagnostic> TraceStream::Impl::all_diagnostics() const {
  std::vector<Diagnostic> all = diagnostics;
  for (const auto &f : files) all.insert(all.end(), f->diagnostics().begin(), f->diagnostics().end());
  return all;
}

int64_t TraceStream::Impl::waker_ns(uint32_t waker_tid, uint64_t tick, int64_t wake_ns,
                                    uint32_t delta) const {
  const FileSource *waker = nullptr;
  auto begun = [wake_ns](const FileSource *f) { return f->clock().anchor_ns <= wake_ns; };
  auto [b, e] = files_of(waker_tid);
  for (auto it = b; it != e; ++it) {
    const FileSource *f = it->second;
    if (!waker || (begun(f) && (!begun(waker) || f->clock().anchor_ns > waker->clock().anchor_ns)))
      waker = f;
  }
  if (!waker) return wake_ns - static_cast<int64_t>(std::llround(delta / ticks_per_ns));
  return waker->clock().ns(tick);
}

TraceStream::~TraceStream() = default;

Expected<std::unique_ptr<TraceStream>> TraceStream::open(const std::string &dir) {
  auto d = TraceDir::open(dir);
  if (!d) return d.error();
  return open(std::shared_ptr<const TraceDir>(std::move(*d)));
}

Expected<std::unique_ptr<TraceStream>> TraceStream::open(std::shared_ptr<const TraceDir> dir) {
  std::unique_ptr<TraceStream> ts(new TraceStream);
  ts->impl_ = std::make_unique<Impl>();
  Impl &im = *ts->impl_;
  im.dir = dir->path();
  im.trace_dir = dir;
  auto opened = detail::open_trace(*dir, im.diagnostics);
  if (!opened) return opened.error();
  im.ticks_per_ns = opened->ticks_per_ns;
  im.overhead = opened->overhead;
  im.listed = opened->listed;
  im.unreadable = std::move(opened->unreadable);
  for (detail::OpenedFile &f : opened->files)
    im.files.push_back(std::make_unique<FileSource>(*ts, f.path, std::move(f.map), f.header, f.clock));
  // (pid, tid) order, keeping file order for reused tids, as read_trace_dir.
  std::stable_sort(im.files.begin(), im.files.end(), [](const auto &a, const auto &b) {
    return a->pid() != b->pid() ? a->pid() < b->pid() : a->tid() < b->tid();
  });
  for (const auto &f : im.files) im.by_tid.emplace_back(f->tid(), f.get());
  std::stable_sort(im.by_tid.begin(), im.by_tid.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  return ts;
}

const std::string &TraceStream::dir() const { return impl_->dir; }
const TraceDir &TraceStream::trace_dir() const { return *impl_->trace_dir; }

std::string TraceStream::first_error() const {
  // In summary()'s order: files by name, each in the order found.
  const Diagnostic *first = nullptr;
  size_t n = 0;
  const std::vector<Diagnostic> all = impl_->all_diagnostics();
  for (const Diagnostic &d : all) {
    if (d.severity != Severity::Error) continue;
    ++n;
    if (!first || d.file < first->file) first = &d;
  }
  if (!first) return std::string();
  return first->str() + (n > 1 ? fmt::format(" (and {} more errors)", n - 1) : "");
}

std::vector<EventSource *> TraceStream::sources() {
  std::vector<EventSource *> out;
  for (auto &f : impl_->files) out.push_back(f.get());
  return out;
}

bool TraceStream::find_release(uint32_t waker_tid, uint64_t obj, uint64_t wake_tick,
                               uint32_t low_bits, int64_t &release_ts) const {
  auto [b, e] = impl_->files_of(waker_tid);
  for (auto it = b; it != e; ++it)
    if (it->second->release(obj, wake_tick, low_bits, release_ts)) return true;
  return false;
}

Trace TraceStream::summary() const {
  const Impl &im = *impl_;
  Trace t;
  t.dir = im.dir;
  t.labels = im.labels.names;
  t.diagnostics = im.all_diagnostics();
  // Files in name order, as read_trace_dir reports them.
  std::stable_sort(t.diagnostics.begin(), t.diagnostics.end(),
                   [](const Diagnostic &a, const Diagnostic &b) { return a.file < b.file; });
  if (im.unresolved)
    t.diagnostics.push_back(
        {Severity::Info, im.dir, 0,
         fmt::format("{} wake-ups name a waker whose release record is missing; their release "
                     "time comes from the runtime's delta",
                     im.unresolved)});
  t.overhead = im.overhead;
  t.ticks_per_ns = im.ticks_per_ns;
  t.files = im.listed;
  t.losses = im.unreadable;
  for (const auto &f : im.files)
    if (f->loss().lost_anything() || f->loss().clamped) t.losses.push_back(f->loss());
  std::sort(t.losses.begin(), t.losses.end(),
            [](const FileLoss &a, const FileLoss &b) { return a.file < b.file; });
  for (const auto &f : im.files) {
    t.threads.push_back(f->meta());
    t.total_records += f->count();
    t.dropped_records += f->meta().dropped_records;
    t.late_switches += f->meta().late_switches;
    t.off_intervals += f->meta().off_intervals;
  }
  return t;
}

}  // namespace vprof::trace
