// Internals shared by the trace reader (whole trace in memory) and the trace
// stream (decoded on demand): file mapping, header checks, the clock, and a
// record-at-a-time decoder. Not part of the reader's interface.
#ifndef VPROF_ANALYZER_READ_DECODER_H
#define VPROF_ANALYZER_READ_DECODER_H

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/read/trace_dir.h"
#include "analyzer/read/trace_reader.h"

namespace vprof::trace::detail {

// A read-only mapping of one regular file of a directory, unmapped on scope
// exit. Opened relative to the directory, never through a link (link() says
// it was one), O_NONBLOCK: anything but a regular file (a FIFO, a directory,
// a device) is an error, and a FIFO's open() does not wait for a writer.
class MappedFile {
 public:
  MappedFile(int dir, const std::string &name) {
    int fd = openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    struct stat st;
    if (fd < 0) {
      const int err = errno;
      link_ = err == ELOOP && fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      error_ = std::strerror(err);
      return;
    }
    if (fstat(fd, &st) != 0) {
      error_ = std::strerror(errno);
      close(fd);
      return;
    }
    if (!S_ISREG(st.st_mode)) {
      error_ = not_regular(st.st_mode);
      close(fd);
      return;
    }
    owner_ = st.st_uid;
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void *p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        error_ = std::strerror(errno);
      } else {
        data_ = static_cast<const uint8_t *>(p);
        zero_holes(fd);
      }
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
  bool link() const { return link_; }   // not opened: a symbolic link
  uid_t owner() const { return owner_; }

 private:
  // A file's holes (the runtime punches a finished ring's unused tail) read
  // as zeros, but through a mapping of a file on a full tmpfs the first read
  // of a hole must allocate a page, and gets SIGBUS instead. Each hole is
  // mapped over with anonymous zero pages, which read the same and never
  // fault to the file system (tests/reader: a trace on a full tmpfs).
  void zero_holes(int fd) {
    off_t end = static_cast<off_t>(size_);
    for (off_t hole = lseek(fd, 0, SEEK_HOLE); hole >= 0 && hole < end;) {
      off_t data = lseek(fd, hole, SEEK_DATA);
      if (data < 0 || data > end) data = end;  // ENXIO: a hole up to the end
      long page = sysconf(_SC_PAGESIZE);
      off_t from = (hole + page - 1) / page * page;
      off_t to = data >= end ? (end + page - 1) / page * page : data / page * page;
      if (to > from)
        mmap(const_cast<uint8_t *>(data_) + from, size_t(to - from), PROT_READ,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (data >= end) break;
      hole = lseek(fd, data, SEEK_HOLE);
    }
  }

 public:

  static std::string not_regular(mode_t m) {
    const char *what = S_ISFIFO(m)   ? "a FIFO"
                       : S_ISDIR(m)  ? "a directory"
                       : S_ISCHR(m)  ? "a character device"
                       : S_ISBLK(m)  ? "a block device"
                       : S_ISSOCK(m) ? "a socket"
                                     : "not a regular file";
    return std::string("not a regular file (") + what + ")";
  }

 private:
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  std::string error_;
  bool link_ = false;
  uid_t owner_ = 0;
};

double median(std::vector<double> v);



// Checks the header; on failure appends an Error and returns false.
bool check_header(const std::string &path, const MappedFile &f, vprof_file_header &h,
                  std::vector<Diagnostic> &diags);

struct Clock {
  Clock() = default;
  Clock(double ticks_per_ns, uint64_t anchor_ticks, int64_t anchor_ns)
      : ticks_per_ns(ticks_per_ns), ns_per_tick(1.0 / ticks_per_ns),
        anchor_ticks(anchor_ticks), anchor_ns(anchor_ns) {}
  double ticks_per_ns = 1.0;
  double ns_per_tick = 1.0;  // multiplied, not divided: a division per record was
                             // the reader's longest dependency chain
  uint64_t anchor_ticks = 0;
  int64_t anchor_ns = 0;
  // Rounded to the nearest ns, halves away from zero (as std::llround).
  int64_t ns(uint64_t ticks) const {
    return anchor_ns + round_half_away(
                           static_cast<double>(static_cast<int64_t>(ticks - anchor_ticks)) * ns_per_tick);
  }
  // std::llround without the library call, for |x| < 2^63: truncating x plus
  // the largest double below 1/2 (with x's sign) rounds halves away from zero,
  // and, being below 1/2, never carries x + 0.4999... over the next integer.
  static int64_t round_half_away(double x) {
    return static_cast<int64_t>(x + std::copysign(0.49999999999999994, x));
  }
};

// Interval labels of a whole trace: strings numbered in order of first use.
struct Labels {
  std::vector<std::string> names{""};
  std::unordered_map<std::string, uint32_t> index{{"", 0}};
  uint32_t id(const std::string &s);
};

// Decodes one file's records in order, one at a time: data chunks, then the
// ring (trace_format.h). Strings are consumed; timestamps that go backwards
// are clamped; a record whose time jumps more than kMaxStep ahead while the
// next record's does not is corrupt and dropped; damage ends a chunk with an
// Error at its offset. What damage cost is counted in loss().
//
// Damage checks stay off the per-record path: the batch loop's one test of
// the time step (which was the regression test) sends any step outside
// [0, kMaxStep] to next(), which sorts regressions from jumps; a cut or a
// partial slot shows where a chunk ends, once per chunk.
class Decoder {
 public:
  Decoder(const std::string &path, const MappedFile &f, const vprof_file_header &h,
          const Clock &clock, std::vector<Diagnostic> &diags, Labels &labels);
  // The next event, its absolute tick and (WaitEnd with a waker) the
  // runtime's modular release-to-wake delta. False at the end of the data.
  bool next(Event &e, uint64_t &tick, uint32_t &wake_delta);
  // Up to n records into e[0, n) and their (tick, wake delta) into a[0, n),
  // as next() gives them; plain records inside a chunk take a loop with the
  // position in locals. Returns how many, fewer only at the end of the data.
  struct TickDelta {
    uint64_t tick;
    uint32_t delta;
  };
  size_t next_batch(Event *__restrict e, TickDelta *__restrict a, size_t n);
  // Diagnostics about the file as a whole, once next() returned false.
  void finish(ThreadStream &meta, uint64_t events);
  // What damage cost this file so far (complete after finish()).
  const FileLoss &loss() const { return loss_; }
  // A forward step of the clock on one thread beyond which the next
  // record's time is checked (2^20 ticks: 0.3 ms at 3 GHz, 1 ms at 1 tick/ns).
  static constexpr uint64_t kMaxStep = uint64_t{1} << 20;
  // A data chunk is appended when a record no longer fits in the ring, so it
  // holds at least the chunk less its two reserved slots and the longest
  // record (a 255-byte string: 17 slots). A last data chunk shorter than
  // that was cut.
  static constexpr uint64_t kFullChunkSlack = (2 + 17) * VPROF_SLOT_BYTES;
  // Thread metadata from the header (no events).
  void describe(ThreadStream &meta) const;
  int64_t drop_begin_ts() const { return drop_begin_ts_; }

 private:
  bool next_chunk();
  uint32_t label_of(uint32_t sid, uint64_t off);
  void fill(const vprof_slot &s, uint32_t kind, uint64_t tick, Event &e) const;
  // A record whose step from `last_tick_` is outside [0, kMaxStep]: false
  // when it is to be dropped (a corrupt time), else its (clamped) tick.
  bool odd_step(const vprof_slot &s, uint32_t kind, uint64_t off, uint64_t &tick);
  // The tick of the record at `off` (or, past this chunk, the next chunk's
  // first); false when there is none.
  bool peek_tick(uint64_t off, uint64_t &tick) const;
  uint64_t capped_end(uint64_t tick, uint64_t length, uint64_t next) const;
  // At the end of a chunk's data: a partial slot (the file was cut mid-record)
  // and whether the ring ran into the end of the file.
  void chunk_ran_out();
  // Bytes [from, chunk_end_) are not decoded: counted, with the records the
  // non-empty slots among them may hold.
  void skip_rest(uint64_t from);
  void lose(Severity sev, uint64_t off, std::string msg);
  void plain(uint32_t kind, const vprof_slot &s, Event &e, uint32_t &wake_delta);

  const std::string &path_;
  const uint8_t *base_;
  uint64_t size_;
  const vprof_file_header &h_;
  Clock clock_;
  std::vector<Diagnostic> &diags_;
  Labels &labels_;
  std::unordered_map<uint32_t, std::string> strings_;  // this thread's string table
  std::vector<uint64_t> chunks_;
  size_t chunk_ = 0;
  uint64_t off_ = 0, chunk_end_ = 0;
  uint64_t last_tick_ = 0, regressions_ = 0, first_regression_ = 0;
  uint64_t jumps_ = 0, first_jump_ = 0;
  uint64_t pending_obj_ = 0;
  uint8_t pending_role_ = 0;
  // A SITE_SPAN gave its begin; next() gives its end before anything else.
  bool span_end_ = false;
  uint32_t span_site_ = 0;
  uint64_t span_end_tick_ = 0;
  uint32_t span_calls_ = 0;  // a run's calls (its end's type_label); 0 for a span
  bool ended_ = false, in_chunk_ = false;
  bool eof_in_ring_ = false;  // the ring's data ran into the end of the file
  uint64_t chunk_start_ = 0;
  int64_t drop_begin_ts_ = -1;
  FileLoss loss_;
};

// One clock for all files: the rate from the widest anchor span seen (all
// processes of one machine share the tick counter), each process's own anchor.
inline double common_rate(const std::vector<vprof_file_header> &headers) {
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

// The files of a trace whose headers passed check_header (the others get
// their Error in diags), with the common clock and the start-up overheads.
struct OpenedFile {
  std::string path;
  std::unique_ptr<MappedFile> map;
  vprof_file_header header;
  Clock clock;
};
struct OpenedTrace {
  std::vector<OpenedFile> files;
  size_t listed = 0;                 // trace files in the directory
  std::vector<FileLoss> unreadable;  // the listed files not in `files`
  double ticks_per_ns = 1.0;
  Overhead overhead;
};
Expected<OpenedTrace> open_trace(const TraceDir &dir, std::vector<Diagnostic> &diags);

}  // namespace vprof::trace::detail

#endif  // VPROF_ANALYZER_READ_DECODER_H
