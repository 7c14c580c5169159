#include "analyzer/util/percent.h"

#include <fmt/format.h>

namespace vprof::analyzer {

std::string percent_change(double change, const std::optional<std::pair<double, double>> &ci) {
  std::string s = fmt::format("{:+.1f}%", 100 * change);
  if (ci) s += fmt::format(" [{:+.1f}%, {:+.1f}%]", 100 * ci->first, 100 * ci->second);
  return s;
}

}  // namespace vprof::analyzer
