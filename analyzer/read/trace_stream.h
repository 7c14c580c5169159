// A trace read on demand: per-thread sources the streaming merge pulls events
// from, so that memory holds a window of each stream, not the whole trace
// (analyzer/merge/timeline.h). read_trace_dir() is the same data in memory.
//
// What the sources yield is exactly what read_trace_dir() would hold: the
// same events, clamped times and clock, and WAIT_END release times resolved
// against the waker's RELEASE record — done in settle(), once every stream
// has been decoded past the epoch's end (a release precedes its wake-up).
#ifndef VPROF_ANALYZER_READ_TRACE_STREAM_H
#define VPROF_ANALYZER_READ_TRACE_STREAM_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"

#include "analyzer/read/trace_dir.h"
#include "analyzer/read/trace_reader.h"

namespace vprof::trace {

// One thread's events, in order, decoded ahead on request and dropped once
// consumed.
class EventSource {
 public:
  virtual ~EventSource() = default;
  uint32_t pid() const { return pid_; }
  uint32_t tid() const { return tid_; }
  // Buffers at least n unconsumed events, or all that are left. Different
  // sources' fill() may run at once (the merge fills them in parallel).
  virtual void fill(size_t n) = 0;
  virtual const Event *data() const = 0;  // the buffered, unconsumed events
  virtual size_t size() const = 0;
  virtual bool exhausted() const = 0;     // fill() can add nothing more
  virtual void consume(size_t k) = 0;
  // Completes the buffered events with what other streams hold: release
  // times of wake-ups before `until`, the trace's numbers for interval
  // labels. Called after every fill(), serially, in (pid, tid) order, once
  // every source was filled past `until`; before the events are read.
  virtual void settle(int64_t until) { (void)until; }
  virtual int64_t drop_begin_ts() const { return -1; }  // when known up front
  virtual size_t size_hint() const = 0;                 // events in all, at most

 protected:
  uint32_t pid_ = 0, tid_ = 0;
};

// A stream already in memory (tests, benchmarks, read_trace_dir's result).
class VectorSource : public EventSource {
 public:
  explicit VectorSource(const ThreadStream &s) : s_(s) {
    pid_ = s.pid;
    tid_ = s.tid;
  }
  void fill(size_t) override {}
  const Event *data() const override { return s_.events.data() + pos_; }
  size_t size() const override { return s_.events.size() - pos_; }
  bool exhausted() const override { return true; }
  void consume(size_t k) override { pos_ += k; }
  int64_t drop_begin_ts() const override { return s_.drop_begin_ts; }
  size_t size_hint() const override { return s_.events.size(); }

 private:
  const ThreadStream &s_;
  size_t pos_ = 0;
};

class FileSource;

class TraceStream {
 public:
  // Opens every thread file `dir` lists and checks its header; decodes
  // nothing. Fails only as read_trace_dir does (no trace file).
  static Expected<std::unique_ptr<TraceStream>> open(std::shared_ptr<const TraceDir> dir);
  // The same, with the directory opened first (fails too when it cannot be).
  static Expected<std::unique_ptr<TraceStream>> open(const std::string &dir);
  ~TraceStream();
  TraceStream(const TraceStream &) = delete;
  TraceStream &operator=(const TraceStream &) = delete;

  const std::string &dir() const;
  const TraceDir &trace_dir() const;  // its process files, its listing
  // One per readable file, in (pid, tid) order.
  std::vector<EventSource *> sources();
  // The first Error found so far, as one line ("(and N more errors)" when
  // there are), or "" when none. Header damage shows at open, damage in the
  // data once it is decoded.
  std::string first_error() const;
  // Everything read_trace_dir() gives but the events (threads carry their
  // metadata and counts). Complete once every source is exhausted.
  Trace summary() const;

 private:
  friend class FileSource;
  TraceStream() = default;
  // The waker's release time for a wake-up, or false when its record is gone.
  bool find_release(uint32_t waker_tid, uint64_t obj, uint64_t wake_tick, uint32_t low_bits,
                    int64_t &release_ts) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vprof::trace

#endif  // VPROF_ANALYZER_READ_TRACE_STREAM_H
