#include "analyzer/read/trace_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <vprof/trace_format.h>

#include "common/trace_dir_rules.h"

namespace vprof::trace {
namespace {

// Reads with pread, never a mapping: on a full tmpfs, a read fault on a hole
// (the ring's unused tail) must allocate a page, and fails with SIGBUS.
class File {
 public:
  File(int dir, const std::string &name) : fd_(openat(dir, name.c_str(), O_RDONLY | O_NONBLOCK | tracedir::kReopen)) {
    struct stat st;
    if (fd_ >= 0 && fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<uint64_t>(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) close(fd_);
  }
  File(const File &) = delete;
  File &operator=(const File &) = delete;
  uint64_t size() const { return size_; }
  bool read(void *buf, uint64_t n, uint64_t off) const {
    auto *p = static_cast<char *>(buf);
    while (n > 0) {
      ssize_t r = pread(fd_, p, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      p += r;
      n -= static_cast<uint64_t>(r);
      off += static_cast<uint64_t>(r);
    }
    return true;
  }

 private:
  int fd_;
  uint64_t size_ = 0;
};

// Records in the chunk at [off, off + len), read a block at a time: a zero
// kind ends the chunk, and so does an unknown one (damage is the analyzer's
// to report, not ours).
uint64_t count_chunk(const File &f, uint64_t off, uint64_t len, std::vector<vprof_slot> &block) {
  if (off >= f.size()) return 0;
  uint64_t slots = std::min(len, f.size() - off) / VPROF_SLOT_BYTES, n = 0;
  uint64_t first = 0, have = 0;  // block holds slots [first, first + have)
  for (uint64_t i = 0; i < slots;) {
    if (i >= first + have) {
      first = i;
      have = std::min<uint64_t>(block.size(), slots - i);
      if (!f.read(block.data(), have * VPROF_SLOT_BYTES, off + i * VPROF_SLOT_BYTES)) break;
    }
    const vprof_slot &s = block[i - first];
    uint32_t kind = static_cast<uint32_t>(s.w0 & VPROF_KIND_MASK);
    const uint64_t slots = vprof_record_slots(s.w0, s.arg);
    if (slots == 0) break;
    if (vprof_kind_by_program(kind)) ++n;  // not the runtime's own (the kinds table's writer)
    i += slots;
  }
  return n;
}

void add_thread_file(int dir, const std::string &name, RecordCount &s) {
  File f(dir, name);
  vprof_file_header h;
  if (f.size() < sizeof h || !f.read(&h, sizeof h, 0) ||
      std::memcmp(h.magic, VPROF_TRACE_MAGIC, 8) != 0 || h.chunk_bytes == 0 ||
      std::max(h.version, h.min_readable) < VPROF_TRACE_OLDEST_READ) {  // as the reader refuses it
    ++s.unreadable;
    return;
  }
  ++s.thread_files;
  s.dropped += h.dropped_records;
  s.late_switches += h.late_switches;
  std::vector<vprof_slot> block(65536);  // 1 MiB
  // Data chunks, a pending ring, the current ring (trace_format.h).
  const uint64_t cur = vprof_current_ring(&h);
  for (uint64_t c = 0; c < h.data_chunks; ++c)
    s.records += count_chunk(f, VPROF_HEADER_BYTES + (vprof_rings_before_data(&h) + c) * h.chunk_bytes,
                             h.chunk_bytes, block);
  if (vprof_ring_pending(&h))
    s.records += count_chunk(f, VPROF_HEADER_BYTES + (1 - cur) * h.chunk_bytes, h.chunk_bytes, block);
  if (h.ring_valid) s.records += count_chunk(f, VPROF_HEADER_BYTES + cur * h.chunk_bytes, h.chunk_bytes, block);
}

}  // namespace

bool is_thread_file(const std::string &name) {
  return name.size() > 6 && name.compare(0, 2, "t-") == 0 && name.compare(name.size() - 4, 4, ".vpt") == 0;
}

bool has_thread_files(const std::string &dir) {
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(dir, ec))
    if (is_thread_file(e.path().filename().string())) return true;
  return false;
}

Expected<std::unique_ptr<TraceDir>> TraceDir::open(const std::string &dir) {
  std::unique_ptr<TraceDir> t(new TraceDir);
  t->path_ = dir;
  t->fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (t->fd_ < 0) return Error{fmt::format("{}: cannot open trace directory: {}", dir, std::strerror(errno))};
  const int listing = dup(t->fd_);  // closedir closes what fdopendir was given
  DIR *d = listing >= 0 ? fdopendir(listing) : nullptr;
  if (!d) {
    if (listing >= 0) close(listing);
    return Error{fmt::format("{}: cannot open trace directory: {}", dir, std::strerror(errno))};
  }
  while (dirent *ent = readdir(d))
    if (is_thread_file(ent->d_name)) t->thread_files_.emplace_back(ent->d_name);
  closedir(d);
  std::sort(t->thread_files_.begin(), t->thread_files_.end());
  t->processes_ = read_process_files(dir);
  return t;
}

TraceDir::~TraceDir() {
  if (fd_ >= 0) close(fd_);
}

RecordCount TraceDir::count() const {
  RecordCount s;
  for (const std::string &name : thread_files_) add_thread_file(fd_, name, s);
  return s;
}

std::string describe(const RecordCount &s, const ProcessFiles &p) {
  std::string out = fmt::format("({} thread files): {} records, {} dropped", s.thread_files,
                                s.records, s.dropped);
  if (p.lost_threads || p.lost_records)
    out += fmt::format(", {} threads without a file ({} records lost)", p.lost_threads,
                       p.lost_records);
  if (p.ownership_misses)
    out += fmt::format(", {} waits or signals on objects without a slot in the ownership map (their wake-ups name no waker: "
                       "raise VPROF_OWNERSHIP_SLOTS)",
                       p.ownership_misses);
  if (s.unreadable) out += fmt::format(", {} unreadable files", s.unreadable);
  if (s.late_switches)
    out += fmt::format(", {} ring switches appended by their thread (the writer lagged: every core busy)",
                       s.late_switches);
  return out;
}

}  // namespace vprof::trace
