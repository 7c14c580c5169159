// Small helpers shared by the analyzer tests.
#ifndef VPROF_TESTS_ANALYZER_TEST_UTIL_H
#define VPROF_TESTS_ANALYZER_TEST_UTIL_H

#include <initializer_list>
#include <string>
#include <utility>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"
#include "analyzer/names/names.h"
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
  return node < 0 ? 0.0 : cp.row(row)[node];
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

// The first node (pre-order) whose label equals `label`, or nullptr.
inline const analyzer::VarNode *find_label(const analyzer::VarNode &n, const std::string &label) {
  if (n.label == label) return &n;
  for (const auto &c : n.children)
    if (const auto *f = find_label(c, label)) return f;
  return nullptr;
}

}  // namespace vprof::testing

#endif  // VPROF_TESTS_ANALYZER_TEST_UTIL_H
