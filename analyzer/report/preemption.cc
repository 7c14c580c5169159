#include "analyzer/report/preemption.h"

namespace vprof::analyzer {

std::optional<double> preemption_share(const RunAnalysis &r) {
  const Columns &c = r.columns;
  const Eigen::Index n = c.total.rows();
  Eigen::VectorXd p = Eigen::VectorXd::Zero(n);
  bool any = false;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.nodes[i].kind == FrameKind::Preempted) {
      p += c.total.col(Eigen::Index(i));
      any = true;
    }
  if (!any && !r.processes.preemption_measured()) return std::nullopt;
  if (n < 2 || c.total.cols() == 0) return 0.0;
  Eigen::VectorXd root = c.total.col(0).array() - c.total.col(0).mean();
  double var = root.squaredNorm();
  if (!(var > 0)) return 0.0;
  return (p.array() - p.mean()).matrix().dot(root) / var;
}

}  // namespace vprof::analyzer
