#include "analyzer/factors/heights.h"

#include <algorithm>
#include <functional>

namespace vprof::analyzer {

std::unordered_map<std::string, int> graph_heights(const Graph &g) {
  // Tarjan's SCC; components come out in reverse topological order (callees
  // first), so each component's height is final when it is emitted.
  std::map<std::string, int> index, low;
  std::vector<std::string> stack;
  std::set<std::string> on_stack;
  std::unordered_map<std::string, int> comp_of_height;  // name -> height
  int next = 0;
  static const std::set<std::string> kNone;
  auto callees = [&](const std::string &f) -> const std::set<std::string> & {
    auto it = g.find(f);
    return it == g.end() ? kNone : it->second;
  };
  std::function<void(const std::string &)> visit = [&](const std::string &v) {
    index[v] = low[v] = next++;
    stack.push_back(v);
    on_stack.insert(v);
    for (const auto &w : callees(v)) {
      if (!index.count(w)) {
        visit(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack.count(w)) {
        low[v] = std::min(low[v], index[w]);
      }
    }
    if (low[v] != index[v]) return;
    std::vector<std::string> comp;
    for (;;) {
      std::string w = stack.back();
      stack.pop_back();
      on_stack.erase(w);
      comp.push_back(w);
      if (w == v) break;
    }
    std::set<std::string> members(comp.begin(), comp.end());
    int h = 0;
    for (const auto &m : comp)
      for (const auto &w : callees(m))
        if (!members.count(w)) h = std::max(h, comp_of_height[w] + 1);
    for (const auto &m : comp) comp_of_height[m] = h;
  };
  for (const auto &[f, _] : g)
    if (!index.count(f)) visit(f);
  return comp_of_height;
}

namespace {

void collect(const VarNode &n, const std::string &caller, Graph &g) {
  // A Held part is where another interval's thread was, not a call made
  // by the wait it sits under.
  if (is_held_part(n)) return;
  std::string self = caller;
  if (n.kind != VarNode::Kind::Cov && !n.body && n.functions.size() == 1) {
    self = n.functions[0];
    g[self];  // every function is a node, even without callees
    if (!caller.empty()) g[caller].insert(self);
  }
  for (const auto &c : n.children) collect(c, self, g);
}

}  // namespace

Graph dynamic_call_graph(const VarNode &tree) {
  Graph g;
  collect(tree, "", g);
  return g;
}

int Heights::height(const std::string &fn) const {
  auto it = of.find(fn);
  return it == of.end() ? 0 : it->second;
}

Heights compute_heights(const VarNode &tree, const CallGraph *static_graph,
                        const std::string &root_function) {
  Heights h;
  h.of = graph_heights(dynamic_call_graph(tree));
  if (static_graph)
    for (const auto &[f, sh] : static_graph->heights) h.of[f] = sh;
  if (!root_function.empty()) {
    h.root = h.height(root_function);
  } else {
    int m = -1;
    for (const auto &[f, fh] : h.of) m = std::max(m, fh);
    h.root = m + 1;
  }
  return h;
}

}  // namespace vprof::analyzer
