// The second pass behind --perfetto (report/perfetto.h): the merge run again
// over the trace, and at each chosen interval's end (its window still in the
// merge's memory) what every thread did during it and the interval's critical
// path. Internal to report/.
#ifndef VPROF_ANALYZER_REPORT_PERFETTO_CAPTURE_H
#define VPROF_ANALYZER_REPORT_PERFETTO_CAPTURE_H

#include <cstdint>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"
#include "analyzer/report/perfetto.h"

namespace vprof::analyzer {

// A thread's state from `ts` on, until the next step.
struct ThreadStep {
  int64_t ts;
  uint32_t node;        // innermost frame (the merge's trie)
  uint64_t label;       // the interval it works for, 0: none
  int64_t wait_begin;   // -1: running; else inside the wait that began then
  uint32_t waker_tid;   // that wait's waker, 0: none or not known
  bool operator==(const ThreadStep &o) const {
    return node == o.node && label == o.label && wait_begin == o.wait_begin &&
           waker_tid == o.waker_tid;
  }
};

// A thread's steps over [begin, end): the chosen intervals' windows, joined
// where they overlap.
struct ThreadWindow {
  int64_t begin, end;
  std::vector<ThreadStep> steps;  // steps[0].ts == begin; increasing ts
};

struct Flow {
  PathEdge edge;
  bool critical = false;  // a chosen interval's critical path followed it
};

struct CapturedInterval {
  ChosenInterval chosen;
  IntervalInfo info;
  RecordedPath path;
};

struct Capture {
  StackTrie trie;
  struct Thread {
    uint32_t pid, tid;
  };
  std::vector<Thread> threads;                // by index into the merge's Timeline::threads
  std::vector<std::vector<ThreadWindow>> windows;  // per thread, disjoint, in time order
  std::vector<Flow> flows;                    // both ends inside a window of their thread
  std::vector<CapturedInterval> intervals;    // in the order chosen
  int64_t first_ts = 0;                       // the trace's first timestamp
  // Edges seen in a window but not shown: one end outside every window of
  // its thread, or a release the trace times after the wake-up it caused
  // (seen between processes: the flow would run backwards in time).
  size_t edges_outside = 0, edges_backwards = 0;
};

Capture capture_windows(const std::vector<trace::EventSource *> &sources,
                        const std::vector<ChosenInterval> &chosen, unsigned threads);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_REPORT_PERFETTO_CAPTURE_H
