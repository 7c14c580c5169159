#include "analyzer/tree/columns.h"

#include <map>

#include "analyzer/util/prefault.h"
#include <tuple>

namespace vprof::analyzer {

Columns build_columns(const StackTrie &trie, const CriticalPaths &cp, uint32_t root_fn) {
  Columns c;
  std::vector<int> proj(trie.size(), -1);
  if (root_fn == 0) {
    c.nodes.resize(trie.size());
    for (uint32_t n = 0; n < trie.size(); ++n) {
      const StackNode &s = trie[n];
      c.nodes[n] = {n == 0 ? -1 : int(s.parent), s.kind, s.id, s.callee_fn, {}};
      if (n) c.nodes[s.parent].children.push_back(int(n));
      proj[n] = int(n);
    }
  } else {
    c.nodes.push_back({-1, FrameKind::Function, root_fn, 0, {}});
    std::map<std::tuple<int, FrameKind, uint32_t>, int> index;
    // Trie parents precede children (merge invariant I3): one forward pass.
    for (uint32_t n = 3; n < trie.size(); ++n) {
      const StackNode &s = trie[n];
      int p = proj[s.parent];
      if (p < 0) {
        bool is_root = (s.kind == FrameKind::Function && s.id == root_fn) ||
                       (s.kind == FrameKind::Site && s.callee_fn == root_fn);
        proj[n] = is_root ? 0 : -1;
        continue;
      }
      auto [it, inserted] = index.emplace(std::make_tuple(p, s.kind, s.id), int(c.nodes.size()));
      if (inserted) {
        c.nodes.push_back({p, s.kind, s.id, s.callee_fn, {}});
        c.nodes[p].children.push_back(it->second);
      }
      proj[n] = it->second;
    }
  }
  const Eigen::Index rows = Eigen::Index(cp.rows.size());
  const Eigen::Index cols = Eigen::Index(c.nodes.size());
  // A fresh matrix: fault its pages in one call (util/prefault.h).
  c.total.resize(rows, cols);
  prefault(c.total.data(), size_t(c.total.size()) * sizeof(double));
  c.total.setZero();
  c.has_self.assign(size_t(cols), false);
  c.latency.resize(rows);
  for (Eigen::Index r = 0; r < rows; ++r) {
    for (const PathCell *p = cp.row_begin(size_t(r)); p != cp.row_end(size_t(r)); ++p) {
      int n = proj[p->node];
      if (n < 0) continue;
      c.has_self[size_t(n)] = true;
      for (; n >= 0; n = c.nodes[size_t(n)].parent) c.total(r, n) += p->ns;
    }
    c.latency(r) = double(cp.rows[size_t(r)].latency_ns);
  }
  return c;
}

Columns select_rows(const Columns &c, const std::vector<Eigen::Index> &rows) {
  Columns out;
  out.nodes = c.nodes;
  out.total = c.total(rows, Eigen::all);
  out.latency = c.latency(rows);
  // A node has own time in these rows when its total exceeds its children's
  // in one of them (the times are integer ns: exact).
  out.has_self.assign(c.nodes.size(), false);
  Eigen::VectorXd self(out.total.rows());
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    if (!c.has_self[n]) continue;
    out.part_into(int(n), true, self);
    out.has_self[n] = (self.array() != 0.0).any();
  }
  return out;
}

}  // namespace vprof::analyzer
