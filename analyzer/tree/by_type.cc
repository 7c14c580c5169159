#include "analyzer/tree/by_type.h"

#include <algorithm>
#include <map>

namespace vprof::analyzer {

TypeSplit split_by_type(const CriticalPaths &cp, const Columns &c,
                        const std::vector<std::string> &labels) {
  TypeSplit out;
  const Eigen::Index n = c.total.rows();
  if (n == 0) return out;
  std::map<uint32_t, std::vector<double>> groups;
  for (Eigen::Index i = 0; i < n; ++i) {
    uint32_t t = cp.rows[size_t(i)].type_label;
    if (t) out.labeled = true;
    groups[t].push_back(c.total(i, 0));
  }
  double mean = c.total.col(0).mean();
  double total_var = (c.total.col(0).array() - mean).square().mean();
  double within = 0, between = 0;
  for (auto &[t, v] : groups) {
    Eigen::Map<const Eigen::VectorXd> x(v.data(), Eigen::Index(v.size()));
    TypeStats s;
    s.type = t < labels.size() ? labels[t] : std::string();
    s.intervals = v.size();
    s.mean_ns = x.mean();
    s.variance_ns2 = (x.array() - s.mean_ns).square().mean();
    double w = double(v.size()) / double(n);
    within += w * s.variance_ns2;
    between += w * (s.mean_ns - mean) * (s.mean_ns - mean);
    out.types.push_back(std::move(s));
  }
  std::stable_sort(out.types.begin(), out.types.end(),
                   [](const TypeStats &a, const TypeStats &b) { return a.intervals > b.intervals; });
  if (total_var > 0) {
    out.within_fraction = within / total_var;
    out.between_fraction = between / total_var;
  }
  return out;
}

}  // namespace vprof::analyzer
