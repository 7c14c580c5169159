// A session's answer in one line (docs/iterate.md, "The loop"): the top
// cause when a wait's holder is in it (what the waits came down to), else the
// top factor beside what the machine took (preemption is no factor).
#ifndef VPROF_ITERATE_ANSWER_H
#define VPROF_ITERATE_ANSWER_H

#include <string>

#include "analyzer/pipeline/analyze.h"

namespace vprof::iterate {

// "Top cause: fsync, 78.0% of the latency's variance: 0.3 its own, 77.7
// holding up std::condition_variable::wait_until (lock_manager.cc:84)." or
// "Top factor: compress_reply, 13.3% of the latency's variance (84.9% is
// preemption: the machine, not the code)."; "" when nothing ranks first.
std::string answer_line(const analyzer::Analysis &a);

}  // namespace vprof::iterate

#endif
