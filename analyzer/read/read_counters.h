// The reader's data-quality counters for one run, from read_counters.def.
#ifndef VPROF_ANALYZER_READ_READ_COUNTERS_H
#define VPROF_ANALYZER_READ_READ_COUNTERS_H

#include <cstdint>

#include "analyzer/util/quality.h"

namespace vprof::analyzer {

struct ReadCounters {
#define VPROF_READ_COUNTER(name, level, what) uint64_t name = 0;
#include "analyzer/read/read_counters.def"
#undef VPROF_READ_COUNTER
};

// f(Counter) for every counter, in the list's order.
template <class F>
void for_each_counter(const ReadCounters &c, F &&f) {
#define VPROF_READ_COUNTER(name, level, what) f(Counter{#name, c.name, Level::level, what});
#include "analyzer/read/read_counters.def"
#undef VPROF_READ_COUNTER
}

}  // namespace vprof::analyzer

#endif
