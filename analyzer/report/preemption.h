// What share of Var(latency) the (preempted) leaves carry (docs/method.md, "The
// variance tree"): the time the kernel took the critical path's threads off
// their CPUs involuntarily, which is no function's doing.
#ifndef VPROF_ANALYZER_REPORT_PREEMPTION_H
#define VPROF_ANALYZER_REPORT_PREEMPTION_H

#include <optional>
#include <string>

#include "analyzer/pipeline/analyze.h"

namespace vprof::analyzer {

// Cov(P, root) / Var(root), P the sum of the run's (preempted) leaves per
// interval; nullopt when the run did not measure preemption (perf_event_open
// refused or turned off, or a trace recorded before it was measured).
std::optional<double> preemption_share(const RunAnalysis &r);

// With a root function, the part of Var(latency) its time holds:
// Cov(root's time, L) / Var(L); what it leaves out is (outside), (queue
// wait) and (untracked) time (Redis: aeProcessEvents 14.9%). Nullopt when
// the latency does not vary.
std::optional<double> root_share(const RunAnalysis &r);

// From this share of Var(latency) on, preemption is a top cause and reports
// say so beside the factors (31-55% on Apache's ~75 workers on 2 cores was
// never listed): more runnable threads than cores. It is no
// function's doing, so it is shown, not ranked (docs/method.md).
inline constexpr double kPreemptionTopCause = 0.10;
// "preemption: 45.3% of Var(latency), ..." with what it means when it is a
// top cause; "preemption: not measured" when it was not.
std::string preemption_line(const std::optional<double> &share);

}  // namespace vprof::analyzer

#endif
