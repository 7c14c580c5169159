#include "analyzer/tree/by_type.h"

#include <algorithm>
#include <map>

#include "analyzer/tree/merge_runs.h"

namespace vprof::analyzer {

TypeSplit split_by_type(const CriticalPaths &cp, const Columns &c,
                        const std::vector<std::string> &labels) {
  TypeSplit out;
  const Eigen::Index n = c.rows();
  if (n == 0) return out;
  std::map<uint32_t, std::vector<double>> groups;
  const Eigen::VectorXd root = c.root();
  for (Eigen::Index i = 0; i < n; ++i) {
    uint32_t t = cp.rows[size_t(i)].type_label;
    if (t) out.labeled = true;
    groups[t].push_back(root(i));
  }
  double mean = root.mean();
  double total_var = (root.array() - mean).square().mean();
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

void type_trees(TypeSplit &split, const std::vector<TypeRun> &runs, const std::string &root_label) {
  if (!split.labeled || runs.empty()) return;
  // Per run, each type's rows, by the type's name (label numbers are a run's own).
  std::vector<std::map<std::string, std::vector<Eigen::Index>>> rows(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    const TypeRun &run = runs[r];
    std::map<uint32_t, std::vector<Eigen::Index>> by_label;
    for (size_t i = 0; i < run.paths->rows.size(); ++i)
      by_label[run.paths->rows[i].type_label].push_back(Eigen::Index(i));
    for (auto &[l, v] : by_label) {
      std::string name = l < run.labels->size() ? (*run.labels)[l] : std::string();
      auto &into = rows[r][name];
      into.insert(into.end(), v.begin(), v.end());
    }
  }
  for (TypeStats &t : split.types) {
    std::vector<VarNode> trees;
    for (size_t r = 0; r < runs.size(); ++r) {
      auto it = rows[r].find(t.type);
      // Runs merge by fractions of the base's tree: none without the base's.
      if (it == rows[r].end()) {
        if (r == 0) break;
        continue;
      }
      std::sort(it->second.begin(), it->second.end());
      Columns c = select_rows(*runs[r].columns, it->second);
      trees.push_back(build_variance_tree(c, *runs[r].names, root_label, int(r)));
    }
    if (!trees.empty()) t.tree = merge_runs(trees);
  }
}

}  // namespace vprof::analyzer
