#include "analyzer/report/preemption.h"

#include <cmath>

#include <fmt/format.h>

namespace vprof::analyzer {

std::optional<double> preemption_share(const RunAnalysis &r) {
  const Columns &c = r.columns;
  const Eigen::Index n = c.rows();
  Eigen::VectorXd p = Eigen::VectorXd::Zero(n);
  bool any = false;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.nodes[i].kind == FrameKind::Preempted ||
        (c.nodes[i].kind == FrameKind::Held && held_preempted(c.nodes[i].id))) {
      c.total.add_into(int(i), 1.0, p);
      any = true;
    }
  if (!any && !r.processes.preemption_measured()) return std::nullopt;
  if (n < 2 || c.total.cols() == 0) return 0.0;
  Eigen::VectorXd root = c.root();
  root.array() -= root.mean();
  double var = root.squaredNorm();
  if (!(var > 0)) return 0.0;
  return (p.array() - p.mean()).matrix().dot(root) / var;
}

std::optional<double> root_share(const RunAnalysis &r) {
  const Eigen::Index n = r.columns.rows();
  if (n < 2 || r.columns.total.cols() == 0 || size_t(n) != r.paths.rows.size()) return std::nullopt;
  Eigen::VectorXd l(n);
  for (Eigen::Index i = 0; i < n; ++i) l(i) = double(r.paths.rows[size_t(i)].latency_ns);
  Eigen::VectorXd root = r.columns.root();
  root.array() -= root.mean();
  l.array() -= l.mean();
  const double var = l.squaredNorm();
  if (var <= 0) return std::nullopt;
  return root.dot(l) / var;
}

std::string preemption_line(const std::optional<double> &share) {
  if (!share) return "preemption: not measured";
  // A covariance near zero may be a hair below it: "-0.0%" read as a defect (Redis).
  const double pct = std::fabs(*share) < 0.0005 ? 0.0 : 100.0 * *share;
  std::string line = fmt::format("preemption: {:.1f}% of Var(latency), in the (preempted) leaves", pct);
  if (*share >= kPreemptionTopCause)
    line += ": a top cause, the kernel taking the path's threads off their CPUs (more runnable threads "
            "than cores)";
  return line;
}

}  // namespace vprof::analyzer
