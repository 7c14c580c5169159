// A change and its interval as the reports print them, one way for the
// gate's verdict and analyze's "if fixed" line.
#ifndef VPROF_ANALYZER_UTIL_PERCENT_H
#define VPROF_ANALYZER_UTIL_PERCENT_H

#include <optional>
#include <string>
#include <utility>

namespace vprof::analyzer {

// 0.38 and [0.21, 0.57] -> "+38.0% [+21.0%, +57.0%]"; without an interval,
// "+38.0%".
std::string percent_change(double change, const std::optional<std::pair<double, double>> &ci);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_PERCENT_H
