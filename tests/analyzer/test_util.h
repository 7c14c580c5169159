// Small helpers shared by the analyzer tests.
#ifndef VPROF_TESTS_ANALYZER_TEST_UTIL_H
#define VPROF_TESTS_ANALYZER_TEST_UTIL_H

#include <initializer_list>
#include <map>
#include <string>
#include <utility>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"
#include "analyzer/names/names.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/tree/variance_tree.h"

namespace vprof::testing {

using analyzer::FrameKind;

// Trie node of a stack given outermost first, or -1 when never seen.
inline int64_t node_of(const analyzer::StackTrie &trie,
                       std::initializer_list<std::pair<FrameKind, uint32_t>> path) {
  int64_t n = analyzer::StackTrie::kRoot;
  for (const auto &[k, id] : path) {
    if (n < 0) return -1;
    n = trie.find(uint32_t(n), k, id);
  }
  return n;
}

// ns of one leaf in one interval row (0 when the node does not exist).
inline double leaf_ns(const analyzer::CriticalPaths &cp, size_t row, int64_t node) {
  return node < 0 ? 0.0 : cp.at(row, uint32_t(node));
}

// Two analyses of one trace agree on everything the walk produces.
inline void expect_same(const analyzer::TracePaths &a, const analyzer::TracePaths &b) {
  ASSERT_EQ(a.trie.size(), b.trie.size());
  for (uint32_t n = 0; n < a.trie.size(); ++n) {
    EXPECT_EQ(a.trie[n].parent, b.trie[n].parent) << "node " << n;
    EXPECT_EQ(a.trie[n].id, b.trie[n].id) << "node " << n;
    EXPECT_EQ(a.trie[n].callee_fn, b.trie[n].callee_fn) << "node " << n;
  }
  ASSERT_EQ(a.paths.rows.size(), b.paths.rows.size());
  for (size_t r = 0; r < a.paths.rows.size(); ++r) {
    EXPECT_EQ(a.paths.rows[r].id, b.paths.rows[r].id) << "row " << r;
    EXPECT_EQ(a.paths.rows[r].latency_ns, b.paths.rows[r].latency_ns) << "row " << r;
  }
  EXPECT_EQ(a.paths.row_start, b.paths.row_start);
  EXPECT_EQ(a.paths.cells, b.paths.cells);
  ASSERT_EQ(a.paths.blame.size(), b.paths.blame.size());
  for (size_t i = 0; i < a.paths.blame.size(); ++i) {
    EXPECT_EQ(a.paths.blame[i].wait_node, b.paths.blame[i].wait_node);
    EXPECT_EQ(a.paths.blame[i].waker_node, b.paths.blame[i].waker_node);
    EXPECT_EQ(a.paths.blame[i].ns, b.paths.blame[i].ns);
  }
  // Every counter of the walk and of the merge, from their lists (*.def).
  std::map<std::string, uint64_t> counts;
  auto keep = [&](const analyzer::Counter &c) { counts[c.name] = c.value; };
  for_each_counter(a.paths.counters, keep);
  for_each_counter(a.merge, keep);
  auto same = [&](const analyzer::Counter &c) { EXPECT_EQ(counts.at(c.name), c.value) << c.name; };
  for_each_counter(b.paths.counters, same);
  for_each_counter(b.merge, same);
}

struct SiteSpec {
  uint32_t id, caller;
  std::string callee;
  int line;
};

inline analyzer::Names make_names(std::initializer_list<std::pair<uint32_t, std::string>> fns,
                                  std::initializer_list<SiteSpec> sites) {
  analyzer::Names n;
  for (const auto &[id, name] : fns) n.functions[id] = {name, "t.cc", 1};
  for (const auto &s : sites) n.sites[s.id] = {s.caller, s.callee, "t.cc", s.line, 3};
  return n;
}

// A hand-made leaf of a run's tree whose variance, contribution and share
// are all `share` (for merge_runs tests).
inline analyzer::VarNode share_leaf(const std::string &key, const std::string &label, double share,
                                    int run) {
  analyzer::VarNode n;
  n.key = key;
  n.label = label;
  n.share = share;
  n.value_ns2 = n.contribution = share;
  n.run = run;
  n.kind = analyzer::VarNode::Kind::Leaf;
  return n;
}

// One trace analysed as `vprof analyze` does, as a one-run analysis.
inline std::unique_ptr<analyzer::Analysis> analyze_one(const trace::Trace &t,
                                                       const analyzer::Names &names,
                                                       const analyzer::AnalyzeOptions &opt) {
  std::vector<std::unique_ptr<analyzer::RunAnalysis>> runs;
  runs.push_back(analyzer::analyze_run(t, names, opt, 0).value());
  return analyzer::combine(std::move(runs), opt);
}

// The first node (pre-order) whose label equals `label`, or nullptr.
inline const analyzer::VarNode *find_label(const analyzer::VarNode &n, const std::string &label) {
  if (n.label == label) return &n;
  for (const auto &c : n.children)
    if (const auto *f = find_label(c, label)) return f;
  return nullptr;
}

}  // namespace vprof::testing

#endif  // VPROF_TESTS_ANALYZER_TEST_UTIL_H
