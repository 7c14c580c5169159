// The merge's trie of call stacks (timeline.h: StackTrie): its nodes, and
// the canonical form that folds direct calls into their sites.
#include "analyzer/merge/timeline.h"

#include <algorithm>

namespace vprof::analyzer {

StackTrie::StackTrie() {
  nodes_.push_back({0, FrameKind::Root, 0, 0});
  nodes_.push_back({0, FrameKind::Queue, 0, 0});
  nodes_.push_back({0, FrameKind::Untracked, 0, 0});
}

uint32_t StackTrie::child(uint32_t parent, FrameKind kind, uint32_t id) {
  uint64_t key = (uint64_t{parent} << 35) | (uint64_t(kind) << 32) | id;
  auto [it, inserted] = index_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (!inserted) return it->second;
  // A frame already kRecursionShown times on the path folds into its nearest
  // instance: the walk up runs once per new node, never per record, and it
  // bounds the trie's depth (and so every walk of a tree made from it) by the
  // number of distinct frames, not by the depth of a recursion.
  if (kind == FrameKind::Function || kind == FrameKind::Site) {
    uint32_t nearest = 0, seen = 0;
    for (uint32_t a = parent; a >= 3 && seen < kRecursionShown; a = nodes_[a].parent)
      if (nodes_[a].kind == kind && nodes_[a].id == id && seen++ == 0) nearest = a;
    if (seen == kRecursionShown) return it->second = nearest;
  }
  nodes_.push_back({parent, kind, id, 0});
  return it->second;
}

std::optional<StackTrie> StackTrie::from_nodes(std::vector<StackNode> nodes) {
  StackTrie t;
  if (nodes.size() < 3) return std::nullopt;
  for (uint32_t n = 0; n < 3; ++n)
    if (nodes[n].kind != t.nodes_[n].kind || nodes[n].parent != 0) return std::nullopt;
  for (uint32_t n = 3; n < nodes.size(); ++n) {
    if (nodes[n].parent >= n) return std::nullopt;
    t.index_.emplace((uint64_t{nodes[n].parent} << 35) | (uint64_t(nodes[n].kind) << 32) | nodes[n].id, n);
  }
  t.nodes_ = std::move(nodes);
  return t;
}

int64_t StackTrie::find(uint32_t parent, FrameKind kind, uint32_t id) const {
  auto it = index_.find((uint64_t{parent} << 35) | (uint64_t(kind) << 32) | id);
  return it == index_.end() ? -1 : int64_t(it->second);
}

namespace {

// The trie in canonical order: depth first, children by (kind, id).
StackTrie ordered(const std::vector<StackNode> &nodes, std::vector<uint32_t> &old_to_new) {
  std::vector<std::vector<uint32_t>> children(nodes.size());
  for (uint32_t n = 3; n < nodes.size(); ++n) children[nodes[n].parent].push_back(n);
  StackTrie out;
  old_to_new.assign(nodes.size(), 0);
  for (uint32_t n = 0; n < 3; ++n) old_to_new[n] = n;
  // The root's tree first, then what hangs under (queue wait) (its Held
  // parts) and (untracked).
  std::vector<uint32_t> todo{StackTrie::kUntracked, StackTrie::kQueue, StackTrie::kRoot};
  while (!todo.empty()) {
    uint32_t n = todo.back();
    todo.pop_back();
    if (n >= 3) {
      const StackNode &s = nodes[n];
      old_to_new[n] = out.child(old_to_new[s.parent], s.kind, s.id);
      out.at(old_to_new[n]).callee_fn = s.callee_fn;
      out.at(old_to_new[n]).not_direct = s.not_direct;
      out.at(old_to_new[n]).vouched = s.vouched;
    }
    auto &c = children[n];
    // Pushed in reverse so that the smallest (kind, id) is numbered first.
    std::sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
      return std::make_pair(nodes[a].kind, nodes[a].id) > std::make_pair(nodes[b].kind, nodes[b].id);
    });
    todo.insert(todo.end(), c.begin(), c.end());
  }
  return out;
}

}  // namespace

StackTrie StackTrie::canonical(std::vector<uint32_t> &old_to_new,
                               const DirectCalls *direct) const {
  // Fold first (into a trie in any order: a folded function's children join
  // the site's, and equal (parent, kind, id) merge), then number canonically.
  StackTrie folded;
  std::vector<uint32_t> to_folded(nodes_.size());
  for (uint32_t n = 0; n < 3; ++n) to_folded[n] = n;
  // Parents precede children (I3).
  for (uint32_t n = 3; n < nodes_.size(); ++n) {
    const StackNode &s = nodes_[n];
    const StackNode &p = nodes_[s.parent];
    // Only the site's own callee: a site that met another function too had a
    // call that was not direct even where no close counted it (a call whose
    // end fell between recording windows, or after the thread's data ended):
    // folding that function in put its time under the other's name (5% of runs of
    // `Windows.FramesOpenWhenAWindowOpensAreRebuiltFromTheirExits`).
    bool direct_call = s.kind == FrameKind::Function && s.parent >= 3 &&
                       p.kind == FrameKind::Site && p.not_direct == 0 && p.callee_fn == s.id &&
                       !(direct && direct->through_a_pointer(p.id));
    if (direct_call) {
      to_folded[n] = to_folded[s.parent];
      continue;
    }
    uint32_t f = folded.child(to_folded[s.parent], s.kind, s.id);
    to_folded[n] = f;
    if (s.kind != FrameKind::Site) continue;
    // Two old sites meet in one node only through a folded recursive call
    // (f's site x both around f's call and inside it): any call of either
    // that was not direct makes the node a site of its own.
    StackNode &g = folded.at(f);
    g.not_direct += s.not_direct;
    // The smallest callee of the direct ones, whatever the order met in.
    if (s.callee_fn && (g.callee_fn == 0 || (s.vouched && !g.vouched)))
      g.callee_fn = s.callee_fn;
    else if (s.callee_fn && s.vouched == g.vouched)
      g.callee_fn = std::min(g.callee_fn, s.callee_fn);
    g.vouched = g.vouched || s.vouched;
  }
  // A site keeps its callee when every call was direct, or when the manifest
  // says it calls that function (its time is already in the site's node).
  for (uint32_t n = 3; n < folded.nodes_.size(); ++n) {
    StackNode &g = folded.nodes_[n];
    if (g.kind == FrameKind::Site && !g.vouched &&
        (g.not_direct || (direct && direct->through_a_pointer(g.id))))
      g.callee_fn = 0;
  }
  std::vector<uint32_t> folded_to_new;
  StackTrie out = ordered(folded.nodes_, folded_to_new);
  old_to_new.resize(nodes_.size());
  for (uint32_t n = 0; n < nodes_.size(); ++n) old_to_new[n] = folded_to_new[to_folded[n]];
  return out;
}

}  // namespace vprof::analyzer
