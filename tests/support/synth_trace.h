// Writes trace files in format v1 without the runtime, for tests that need a
// trace with known contents: exact timestamps (1 tick = 1 ns), chosen
// threads, and deliberately broken files.
//
//   SynthThread t(dir, /*pid=*/1, /*tid=*/11);
//   t.interval_begin(100, 7, "NewOrder");
//   t.fn_enter(110, 1); t.fn_exit(150, 1);
//   t.interval_end(200, 7);
//   t.close();   // writes THREAD_EXIT and the file
#ifndef VPROF_TESTS_SUPPORT_SYNTH_TRACE_H
#define VPROF_TESTS_SUPPORT_SYNTH_TRACE_H

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <vprof/trace_format.h>

namespace vprof::testing {

class SynthThread {
 public:
  SynthThread(std::string dir, uint32_t pid, uint32_t tid, uint64_t chunk_bytes = 1 << 16)
      : dir_(std::move(dir)), pid_(pid), tid_(tid), chunk_bytes_(chunk_bytes) {}

  void fn_enter(uint64_t ts, uint32_t id) { rec(ts, VPROF_K_FUNC_ENTER, id); }
  void fn_exit(uint64_t ts, uint32_t id) { rec(ts, VPROF_K_FUNC_EXIT, id); }
  void site_begin(uint64_t ts, uint32_t id) { rec(ts, VPROF_K_SITE_BEGIN, id); }
  void site_end(uint64_t ts, uint32_t id) { rec(ts, VPROF_K_SITE_END, id); }
  // A call with nothing recorded inside, as the runtime's site end leaves it.
  void site_span(uint64_t ts, uint32_t id, uint32_t length) {
    rec(ts, VPROF_K_SITE_SPAN, id | (uint64_t)length << 32);
  }
  // `count` calls of one site in a row, `calls` ns of them in `length` ns
  // from the first begin to the last end, as the runtime's site end folds them.
  void site_run(uint64_t ts, uint32_t id, uint32_t length, uint64_t calls, uint64_t count) {
    slots_.push_back({(ts << VPROF_TS_SHIFT) | VPROF_K_SITE_RUN, id | (uint64_t)length << 32});
    slots_.push_back({calls << VPROF_TS_SHIFT, id | count << 32});
  }
  void interval_begin(uint64_t ts, uint64_t id, const char *type = nullptr,
                      const char *client = nullptr) {
    if (!type && !client) return rec(ts, VPROF_K_IV_BEGIN, id);
    uint64_t t = str(ts, type), c = str(ts, client);
    slots_.push_back({(ts << VPROF_TS_SHIFT) | VPROF_K_IV_BEGIN_LABELED, id});
    slots_.push_back({t, c});
  }
  void interval_end(uint64_t ts, uint64_t id) { rec(ts, VPROF_K_IV_END, id); }
  void join(uint64_t ts, uint64_t id) { rec(ts, VPROF_K_IV_JOIN, id); }
  void leave(uint64_t ts) { rec(ts, VPROF_K_IV_LEAVE, 0); }
  void wait_begin(uint64_t ts, uint64_t obj, uint32_t role = VPROF_SYNC_MUTEX) {
    rec(ts, VPROF_K_WAIT_BEGIN, (uint64_t)role << 56 | obj);
  }
  // `release_ts` is the waker's RELEASE timestamp (ticks == ns here).
  void wait_end(uint64_t ts, uint32_t waker_tid = 0, uint64_t release_ts = 0, bool acquired = true) {
    uint64_t arg = acquired ? 0 : VPROF_WAIT_NOT_ACQUIRED;
    if (waker_tid) arg |= waker_tid | (uint64_t)(uint32_t)(ts - release_ts) << 32;
    rec(ts, VPROF_K_WAIT_END, arg);
  }
  void release(uint64_t ts, uint64_t obj, uint32_t role = VPROF_SYNC_MUTEX) {
    rec(ts, VPROF_K_RELEASE, (uint64_t)role << 56 | obj);
  }
  void enqueue(uint64_t ts, uint64_t task) { rec(ts, VPROF_K_TASK_ENQUEUE, task); }
  void dequeue(uint64_t ts, uint64_t task) { rec(ts, VPROF_K_TASK_DEQUEUE, task); }
  void drop_begin(uint64_t ts) { rec(ts, VPROF_K_DROP_BEGIN, 0); }
  // A WINDOW record (windowed recording); `unknown`: recording resumes with
  // the stack unknown (version 8).
  void window(uint64_t ts, uint32_t state, uint32_t seq, bool made = false, bool unknown = false) {
    rec(ts, VPROF_K_WINDOW, VPROF_WINDOW_ARG(state, made, 0, 0, 0, seq) | (unknown ? VPROF_WINDOW_UNKNOWN_BIT : 0));
  }
  void raw(uint64_t w0, uint64_t arg) { slots_.push_back({w0, arg}); }

  // Timestamps are TSC ticks at this rate (the runtime's clock on x86)
  // instead of nanoseconds.
  void tsc(double ticks_per_ns) { tsc_rate_ = ticks_per_ns; }

  vprof_file_header &header() { return header_; }
  std::string path() const {
    return dir_ + "/t-" + std::to_string(pid_) + "-" + std::to_string(tid_) + ".vpt";
  }

  // Writes the file. `thread_exit` adds the THREAD_EXIT record and the closed flag.
  void close(bool thread_exit = true, uint64_t exit_ts = 0) {
    if (thread_exit) {
      uint64_t ts = exit_ts ? exit_ts : last_ts_;
      rec(ts, VPROF_K_THREAD_EXIT, 0);
      header_.flags |= VPROF_FLAG_CLOSED;
    }
    // As the runtime leaves them: the rest in the ring, full chunks after it
    // (version 3: after two rings, the second empty; header().version = 2
    // writes one ring). A record never straddles two chunks here: tests
    // write small records into big chunks.
    size_t per_chunk = chunk_bytes_ / VPROF_SLOT_BYTES - 2;
    size_t full = slots_.empty() ? 0 : (slots_.size() - 1) / per_chunk;
    header_.data_chunks = full;
    header_.ring_valid = 1;
    fill_header();
    std::ofstream f(path(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(&header_), sizeof header_);
    auto write_chunk = [&](size_t first, size_t n, bool pad) {
      f.write(reinterpret_cast<const char *>(slots_.data() + first), (std::streamsize)(n * VPROF_SLOT_BYTES));
      if (pad) {
        std::vector<char> zero(chunk_bytes_ - n * VPROF_SLOT_BYTES, 0);
        f.write(zero.data(), (std::streamsize)zero.size());
      }
    };
    write_chunk(full * per_chunk, slots_.size() - full * per_chunk, full > 0);  // ring 0
    if (header_.version >= 3 && full > 0) write_chunk(0, 0, true);             // ring 1: empty
    for (size_t i = 0; i < full; ++i) write_chunk(i * per_chunk, per_chunk, i + 1 < full);
  }

 private:
  void rec(uint64_t ts, uint32_t kind, uint64_t arg) {
    last_ts_ = ts;
    slots_.push_back({(ts << VPROF_TS_SHIFT) | kind, arg});
  }
  uint64_t str(uint64_t ts, const char *s) {
    if (!s) return 0;
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    uint32_t id = (uint32_t)strings_.size() + 1;
    strings_[s] = id;
    size_t len = std::strlen(s);
    slots_.push_back({(ts << VPROF_TS_SHIFT) | VPROF_K_STRING, id | (uint64_t)len << 32});
    std::vector<vprof_slot> payload((len + 15) / 16, vprof_slot{0, 0});
    std::memcpy(payload.data(), s, len);
    slots_.insert(slots_.end(), payload.begin(), payload.end());
    return id;
  }
  void fill_header() {
    std::memcpy(header_.magic, VPROF_TRACE_MAGIC, 8);
    if (!header_.version) header_.version = VPROF_TRACE_VERSION;
    if (header_.version >= 3 && !header_.pending_chunk) header_.pending_chunk = UINT64_MAX;
    if (!header_.min_readable) header_.min_readable = VPROF_TRACE_MIN_READABLE;
    if (!header_.header_bytes) header_.header_bytes = VPROF_HEADER_BYTES;
    header_.pid = pid_;
    header_.tid = tid_;
    header_.clock_source = tsc_rate_ > 0 ? VPROF_CLOCK_TSC : VPROF_CLOCK_MONOTONIC;
    header_.chunk_bytes = chunk_bytes_;
    header_.ticks_per_ns = tsc_rate_ > 0 ? tsc_rate_ : 1.0;
  }

  std::string dir_;
  uint32_t pid_, tid_;
  uint64_t chunk_bytes_;
  uint64_t last_ts_ = 0;
  double tsc_rate_ = 0;
  vprof_file_header header_{};
  std::vector<vprof_slot> slots_;
  std::map<std::string, uint32_t> strings_;
};

}  // namespace vprof::testing

#endif
