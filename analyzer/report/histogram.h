// The latency distribution on a log axis, for the HTML report's histogram
// (JSON `latency.histogram`, docs/analyze.md): bins of equal width in
// log10(ns), `bins_per_decade` a decade, their edges on the powers of
// 10^(1/bins_per_decade) around the smallest and largest latency, so two
// reports of the same target share their edges. Bin i counts the latencies L
// with edges[i] <= L < edges[i+1]. An interval of 0 ns (begun and ended in the
// same clock tick) has no place on a log axis and is counted in `zero`
// instead; nothing is dropped or clipped.
#ifndef VPROF_ANALYZER_REPORT_HISTOGRAM_H
#define VPROF_ANALYZER_REPORT_HISTOGRAM_H

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/pipeline/analyze.h"

namespace vprof::analyzer {

struct LatencyHistogram {
  int bins_per_decade = 10;
  std::vector<double> edges_ns;  // counts.size() + 1 of them; empty when there is no latency > 0
  std::vector<uint64_t> counts;
  uint64_t zero = 0;
  // With type labels, the same bins per type, in the order of TypeSplit::types.
  struct ByType {
    std::string type;
    std::vector<uint64_t> counts;
    uint64_t zero = 0;
  };
  std::vector<ByType> by_type;
};

// The base run's latencies (the ones `latency` summarizes), by type when a
// is labeled.
LatencyHistogram latency_histogram(const Analysis &a, int bins_per_decade = 10);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_REPORT_HISTOGRAM_H
