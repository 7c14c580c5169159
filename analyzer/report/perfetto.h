// `vprof analyze --perfetto FILE`: a few intervals' timelines as Chrome Trace
// Event JSON (the format chrome://tracing and ui.perfetto.dev open): the
// slowest N intervals and the N nearest the median latency, each with what
// every thread did during it.
//
// What the file holds, per chosen interval (its window [begin, end]):
//   - one track per thread (pid/tid, named from the trace: process_name and
//     thread_name metadata): complete events (ph "X") for what the thread
//     did in the windows, nested as its stack was: the interval it worked for
//     ("interval N", outermost), its instrumented functions and wrapped call
//     sites, and "blocked" inside a wrapped wait. A frame open at a window's
//     edge is cut there; overlapping windows are joined first;
//   - the interval as an async slice (ph "b"/"e", one id per chosen
//     interval) on its process, and the critical path beside it, one async
//     slice ("critical path") per stretch the walk spent on one thread, in
//     the queue or untracked (args.on);
//   - every wake-up edge (the waker's release to the waiter's wake-up) and
//     created-by edge (enqueue to dequeue) whose both ends lie in a window,
//     as a flow (ph "s" then "f" with bp "e", one id per edge), each end
//     bound to a zero-length slice at its instant ("release"/"wake-up",
//     "enqueue"/"dequeue") so that it has a slice to bind to;
//   - frames on the critical path of a chosen interval have category
//     "critical" added and args.critical_ns; flows the path followed are
//     named "... (critical path)".
// Timestamps and durations are in microseconds (floating point, exact to the
// ns) from the trace's first timestamp. Events are sorted by time, parents
// before children.
//
// The timelines come from a second pass over the trace (the merge again,
// with no manifest's direct calls, so a function called through a wrapped
// site shows as its own frame under the site's): the analysis keeps no
// timeline, and this costs nothing when --perfetto is not given.
#ifndef VPROF_ANALYZER_REPORT_PERFETTO_H
#define VPROF_ANALYZER_REPORT_PERFETTO_H

#include <cstdint>
#include <ostream>
#include <vector>

#include "common/expected.h"

#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_stream.h"

namespace vprof::analyzer {

// One interval chosen for the export.
struct ChosenInterval {
  uint64_t id = 0;
  int64_t begin_ts = 0, latency_ns = 0;
  uint32_t type_label = 0, client_label = 0;
  int slowest_rank = 0;  // 1 = the slowest; 0: one of those nearest the median
};

// The n slowest complete intervals of a run (ties: smaller id first), then
// the n nearest its median latency (p50 by nearest rank; ties: smaller id)
// among the others, in order of latency. Fewer when the run has fewer.
std::vector<ChosenInterval> choose_intervals(const CriticalPaths &cp, size_t n);

// Reads the run's trace again from `sources` (a fresh TraceStream of the
// same directory: every thread, in (pid, tid) order) and writes the chosen
// intervals as Chrome Trace Event JSON to `out`. `run`: the analysis of that
// trace (names, labels, threads). `threads`: worker threads for the merge.
Status write_perfetto(const std::vector<trace::EventSource *> &sources, const trace::Trace &meta,
                      const RunAnalysis &run, const std::vector<ChosenInterval> &chosen,
                      unsigned threads, std::ostream &out);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_REPORT_PERFETTO_H
