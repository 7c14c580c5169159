// Heights for factor specificity (docs/method.md, "Factors"): the longest path
// from a function down the call graph, leaves 0, strongly connected components
// (recursion) collapsed to one node. The static call graph (`vprof callgraph
// --json`) decides where it knows a function; elsewhere (calls through
// pointers, or no call graph given) the dynamic call graph observed in the
// variance tree does.
#ifndef VPROF_ANALYZER_FACTORS_HEIGHTS_H
#define VPROF_ANALYZER_FACTORS_HEIGHTS_H

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/names/names.h"
#include "analyzer/tree/variance_tree.h"

namespace vprof::analyzer {

using Graph = std::map<std::string, std::set<std::string>>;

// Longest path below each function of g, with SCCs collapsed.
std::unordered_map<std::string, int> graph_heights(const Graph &g);

// Caller -> callee edges seen in the tree (Var/Leaf terms nested under a
// function's term; bodies are not functions).
Graph dynamic_call_graph(const VarNode &tree);

struct Heights {
  std::unordered_map<std::string, int> of;  // per function name
  int root = 0;                             // H
  int height(const std::string &fn) const;  // 0 when unknown
};

// static_graph may be null. root_function empty: the root is the latency,
// one level above every function in the tree.
Heights compute_heights(const VarNode &tree, const CallGraph *static_graph,
                        const std::string &root_function);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_HEIGHTS_H
