// What share of Var(latency) the (preempted) leaves carry (METHOD §4): the
// time the kernel took the critical path's threads off their CPUs
// involuntarily, which is no function's doing.
#ifndef VPROF_ANALYZER_REPORT_PREEMPTION_H
#define VPROF_ANALYZER_REPORT_PREEMPTION_H

#include <optional>

#include "analyzer/pipeline/analyze.h"

namespace vprof::analyzer {

// Cov(P, root) / Var(root), P the sum of the run's (preempted) leaves per
// interval; nullopt when the run did not measure preemption (perf_event_open
// refused or turned off, or a trace recorded before it was measured).
std::optional<double> preemption_share(const RunAnalysis &r);

}  // namespace vprof::analyzer

#endif
