#include "analyzer/tree/columns.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "analyzer/util/prefault.h"

namespace vprof::analyzer {

Expected<Columns> build_columns(const StackTrie &trie, const CriticalPaths &cp, uint32_t root_fn,
                                uint64_t max_bytes) {
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
  const size_t rows = cp.rows.size(), cols = c.nodes.size();
  c.has_self.assign(cols, false);
  c.latency.resize(Eigen::Index(rows));
  // Two passes over the paths: the first counts each column's cells, the
  // second writes them in place, rows ascending, with no copy between.
  // A node's cell in a row is the sum of the path cells at or below it; a
  // path cell of 0 ns makes none, so that a column with a cell has time.
  std::vector<int> parent(cols);
  for (size_t n = 0; n < cols; ++n) parent[n] = c.nodes[n].parent;
  std::vector<int32_t> seen(cols, -1);  // the last row that reached the node
  NodeTotals &t = c.total;
  t.rows = Eigen::Index(rows);
  t.begin.assign(cols + 1, 0);
  // A row's cells are each at most its root's, their sum: when no row's
  // passes 2^31 ns, the values are kept as 32-bit integers (NodeTotals).
  uint64_t most = 0;
  for (size_t r = 0; r < rows; ++r) {
    uint64_t sum = 0;
    for (const PathCell *p = cp.row_begin(r); p != cp.row_end(r); ++p) {
      int n = proj[p->node];
      if (n < 0 || p->ns == 0) continue;
      sum += p->ns;
      for (; n >= 0 && seen[size_t(n)] != int32_t(r); n = parent[size_t(n)]) {
        seen[size_t(n)] = int32_t(r);
        ++t.begin[size_t(n) + 1];
      }
    }
    most = std::max(most, sum);
  }
  const bool narrow = most <= uint64_t(INT32_MAX);
  for (size_t i = 0; i < cols; ++i) t.begin[i + 1] += t.begin[i];
  const size_t cells = t.begin[cols];
  if (uint64_t(cells) * kCellBytes > max_bytes)
    return Error{fmt::format(
        "{} intervals x {} call-tree nodes have {} cells on their critical paths, {:.1f} GiB "
        "(limit {:.1f} GiB)",
        rows, cols, cells, double(cells * kCellBytes) / double(1ull << 30),
        double(max_bytes) / double(1ull << 30))};
  // Fresh arrays: fault their pages in one call each (util/prefault.h).
  t.row.reserve(cells);
  prefault(t.row.data(), cells * sizeof(int32_t));
  t.row.resize(cells);
  auto fill = [&](auto &value) {
    using V = typename std::decay_t<decltype(value)>::value_type;
    value.reserve(cells);
    prefault(value.data(), cells * sizeof(V));
    value.resize(cells);
    std::vector<size_t> at(t.begin.begin(), t.begin.end() - 1);  // the next free cell
    std::fill(seen.begin(), seen.end(), -1);
    for (size_t r = 0; r < rows; ++r) {
      for (const PathCell *p = cp.row_begin(r); p != cp.row_end(r); ++p) {
        int n = proj[p->node];
        if (n < 0) continue;
        c.has_self[size_t(n)] = true;
        if (p->ns == 0) continue;
        for (; n >= 0; n = parent[size_t(n)]) {
          if (seen[size_t(n)] != int32_t(r)) {  // the row's first time here: its cell
            seen[size_t(n)] = int32_t(r);
            t.row[at[size_t(n)]++] = int32_t(r);
          }
          value[at[size_t(n)] - 1] += V(p->ns);
        }
      }
      c.latency(Eigen::Index(r)) = double(cp.rows[r].latency_ns);
    }
  };
  if (narrow) fill(t.narrow);
  else fill(t.value);
  // A dense column's rows are not kept (NodeTotals): the others' move down,
  // and the array shrinks to them (a branch per cell in the pass above cost
  // more instructions than this copy of the sparse ones).
  t.row_begin.assign(cols + 1, 0);
  for (size_t i = 0; i < cols; ++i) {
    const size_t n = t.begin[i + 1] - t.begin[i];
    if (n == rows) {
      t.row_begin[i + 1] = t.row_begin[i];
      continue;
    }
    if (t.row_begin[i] != t.begin[i])
      std::memmove(t.row.data() + t.row_begin[i], t.row.data() + t.begin[i], n * sizeof(int32_t));
    t.row_begin[i + 1] = t.row_begin[i] + n;
  }
  t.row.resize(t.row_begin[cols]);
  t.row.shrink_to_fit();
  return c;
}

Columns select_rows(const Columns &c, const std::vector<Eigen::Index> &rows) {
  Columns out;
  out.nodes = c.nodes;
  out.latency = c.latency(rows);
  std::vector<int32_t> to(size_t(c.rows()), -1);
  bool ascending = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    to[size_t(rows[i])] = int32_t(i);
    if (i && rows[i] < rows[i - 1]) ascending = false;
  }
  NodeTotals &t = out.total;
  t.rows = Eigen::Index(rows.size());
  std::vector<std::pair<int32_t, double>> col;
  for (int n = 0; n < int(c.nodes.size()); ++n) {
    col.clear();
    c.total.for_each(n, [&](Eigen::Index row, double v) {
      if (int32_t r = to[size_t(row)]; r >= 0) col.push_back({r, v});
    });
    if (!ascending) std::sort(col.begin(), col.end());
    t.push_column(col, !c.total.narrow.empty());  // some of the rows: narrow if all were
  }
  // A node has own time in these rows when its total exceeds its children's
  // in one of them (the times are integer ns: exact).
  out.has_self.assign(c.nodes.size(), false);
  Eigen::VectorXd self(t.rows);
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    if (!c.has_self[n]) continue;
    out.part_into(int(n), true, self);
    out.has_self[n] = (self.array() != 0.0).any();
  }
  return out;
}

double NodeTotals::at(Eigen::Index r, int c) const {
  auto value_at = [&](size_t i) { return narrow.empty() ? value[i] : double(narrow[i]); };
  if (dense(c)) return value_at(begin[size_t(c)] + size_t(r));
  auto first = row.begin() + std::ptrdiff_t(row_begin[size_t(c)]);
  auto last = first + std::ptrdiff_t(cells(c));
  auto it = std::lower_bound(first, last, int32_t(r));
  return it != last && *it == int32_t(r) ? value_at(begin[size_t(c)] + size_t(it - first)) : 0.0;
}

void NodeTotals::push_column(const std::vector<std::pair<int32_t, double>> &cells, bool into_narrow) {
  const bool all = cells.size() == size_t(rows);
  for (const auto &[r, v] : cells) {
    if (!all) row.push_back(r);
    if (into_narrow) narrow.push_back(int32_t(v));
    else value.push_back(v);
  }
  begin.push_back(begin.back() + cells.size());
  row_begin.push_back(row.size());
}

}  // namespace vprof::analyzer
