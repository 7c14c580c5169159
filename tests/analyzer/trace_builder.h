// Builds vprof::trace::Trace objects in memory for analyzer tests: exact
// nanosecond timestamps, chosen threads, no files. Events may be added in any
// order; build() sorts each thread's events by time (stable, so same-time
// events keep the order they were added in, as a real thread writes them).
//
//   TraceBuilder tb;
//   tb.thread(1).begin(0, 7).enter(0, 1).exit(40, 1).end(40, 7);
//   trace::Trace t = tb.build();
#ifndef VPROF_TESTS_ANALYZER_TRACE_BUILDER_H
#define VPROF_TESTS_ANALYZER_TRACE_BUILDER_H

#include <algorithm>
#include <map>
#include <string>

#include "analyzer/read/trace_reader.h"

namespace vprof::testing {

class ThreadBuilder {
 public:
  using K = trace::Kind;
  ThreadBuilder &enter(int64_t ts, uint32_t fn) { return add(ts, K::FuncEnter, fn); }
  ThreadBuilder &exit(int64_t ts, uint32_t fn) { return add(ts, K::FuncExit, fn); }
  ThreadBuilder &site(int64_t ts, uint32_t id) { return add(ts, K::SiteBegin, id); }
  ThreadBuilder &site_end(int64_t ts, uint32_t id) { return add(ts, K::SiteEnd, id); }
  // The end of `calls` calls of one site in a row, as the reader gives a
  // SITE_RUN (the time between them before, the calls' sum from `site`).
  ThreadBuilder &site_run_end(int64_t ts, uint32_t id, uint32_t calls) {
    add(ts, K::SiteEnd, id);
    s.events.back().type_label = calls;
    return *this;
  }
  // A call of an instrumented function through a wrapped call site.
  ThreadBuilder &call(int64_t b, int64_t e, uint32_t site_id, uint32_t fn) {
    return site(b, site_id).enter(b, fn).exit(e, fn).site_end(e, site_id);
  }
  // Labels are TraceBuilder::label() numbers (0: none).
  ThreadBuilder &begin(int64_t ts, uint64_t iv, uint32_t type_label = 0, uint32_t client_label = 0) {
    add(ts, K::IntervalBegin, iv);
    s.events.back().type_label = type_label;
    s.events.back().client_label = client_label;
    return *this;
  }
  ThreadBuilder &end(int64_t ts, uint64_t iv) { return add(ts, K::IntervalEnd, iv); }
  // A PREEMPTED record as the runtime drains it: stamped `drained`, about [out, in).
  ThreadBuilder &preempted(int64_t drained, int64_t out, int64_t in) {
    add(drained, K::Preempted, uint64_t(in));
    s.events.back().release_ts = out;
    return *this;
  }
  // A PREEMPTED record of a sleep (format 10): the thread blocked at out
  // and ran again at in.
  ThreadBuilder &slept(int64_t drained, int64_t out, int64_t in) {
    preempted(drained, out, in);
    s.events.back().role = 1;
    return *this;
  }
  // A RECORDER record: the recorder paused the thread over [ts, end).
  ThreadBuilder &recorder(int64_t ts, int64_t end) {
    add(ts, K::Recorder, uint64_t(end));
    s.events.back().release_ts = ts;
    return *this;
  }
  // A WINDOW record (windowed recording): state VPROF_WINDOW_*, `made` when
  // this thread changed it, `pops` frames ended while nothing recorded.
  ThreadBuilder &window(int64_t ts, uint32_t state, uint32_t seq, bool made = false, uint32_t pops = 0,
                        bool capped = false) {
    return add(ts, K::Window, VPROF_WINDOW_ARG(state, made, 0, capped, pops, seq));
  }
  ThreadBuilder &join(int64_t ts, uint64_t iv) { return add(ts, K::IntervalJoin, iv); }
  ThreadBuilder &leave(int64_t ts) { return add(ts, K::IntervalLeave, 0); }
  // `role`: trace_format.h's vprof_sync_role (0: none given).
  ThreadBuilder &wait(int64_t ts, uint64_t obj, uint8_t role = 0) {
    add(ts, K::WaitBegin, obj);
    s.events.back().role = role;
    return *this;
  }
  ThreadBuilder &wait_end(int64_t ts, uint64_t obj, uint32_t waker, int64_t release_ts) {
    add(ts, K::WaitEnd, obj);
    s.events.back().waker_tid = waker;
    s.events.back().release_ts = waker ? release_ts : -1;
    s.events.back().acquired = 1;
    return *this;
  }
  ThreadBuilder &release(int64_t ts, uint64_t obj, uint8_t role = 0) {
    add(ts, K::Release, obj);
    s.events.back().role = role;
    return *this;
  }
  // The mutex the preceding wait (a condition's) gives up and takes back
  // (trace_format.h's WAIT_MUTEX; at the wait's begin).
  ThreadBuilder &wait_mutex(int64_t ts, uint64_t mutex) {
    return add(ts, K::WaitMutex, uint64_t{VPROF_SYNC_MUTEX} << 56 | mutex);
  }
  // Where the preceding wait_end's waker released (trace_format.h's WAKER_AT).
  ThreadBuilder &waker_at(int64_t ts, uint64_t pc) { return add(ts, K::WakerAt, pc); }
  ThreadBuilder &enqueue(int64_t ts, uint64_t task) { return add(ts, K::TaskEnqueue, task); }
  ThreadBuilder &dequeue(int64_t ts, uint64_t task) { return add(ts, K::TaskDequeue, task); }
  ThreadBuilder &drop(int64_t ts, uint64_t lost) {
    add(ts, K::DropBegin, 0);
    s.drop_begin_ts = ts;
    s.dropped_records = lost;
    return *this;
  }
  trace::ThreadStream s;

 private:
  ThreadBuilder &add(int64_t ts, trace::Kind k, uint64_t arg) {
    trace::Event e;
    e.ts = ts;
    e.kind = k;
    e.arg = arg;
    s.events.push_back(e);
    return *this;
  }
};

class TraceBuilder {
 public:
  ThreadBuilder &thread(uint32_t tid, uint32_t pid = 100) {
    ThreadBuilder &t = threads_[{pid, tid}];
    t.s.pid = pid;
    t.s.tid = tid;
    return t;
  }
  uint32_t label(const std::string &l) {
    labels_.push_back(l);
    return uint32_t(labels_.size() - 1);
  }
  trace::Trace build() const {
    trace::Trace t;
    t.dir = "mem";
    t.labels = labels_;
    for (const auto &[key, tb] : threads_) {
      trace::ThreadStream s = tb.s;
      std::stable_sort(s.events.begin(), s.events.end(),
                       [](const trace::Event &a, const trace::Event &b) { return a.ts < b.ts; });
      s.clean_exit = true;
      t.total_records += s.events.size();
      t.dropped_records += s.dropped_records;
      t.threads.push_back(std::move(s));
    }
    t.overhead.probe_pair_ns = 12.5;
    t.overhead.empty_interval_ns = 40.0;
    return t;
  }

 private:
  std::map<std::pair<uint32_t, uint32_t>, ThreadBuilder> threads_;
  std::vector<std::string> labels_{""};
};

}  // namespace vprof::testing

#endif  // VPROF_TESTS_ANALYZER_TRACE_BUILDER_H
