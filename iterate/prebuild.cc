#include "iterate/prebuild.h"

#include <algorithm>

#include "instrumenter/names.h"

namespace vprof::iterate {

std::string left_out_ahead(const instr::CallGraphNode &n, const std::map<std::string, instr::CallGraphNode> &graph,
                           unsigned min_size) {
  // Small, and all its work in the tree: a call whose body is elsewhere
  // (a syscall's wrapper, a library's) may be where the time goes.
  auto tiny = [&](const instr::CallGraphNode &f) {
    return f.size < min_size && std::all_of(f.opaque_callees.begin(), f.opaque_callees.end(),
                                            [&](const std::string &c) { return graph.count(c) > 0; });
  };
  if (tiny(n)) return "tiny";
  if (n.loop_callees.empty() || n.loops_call_pointers) return {};
  for (const auto &c : n.loop_callees) {
    auto it = graph.find(c);
    if (it == graph.end() || !tiny(it->second)) return {};  // outside the tree (a syscall, a library), or real work
  }
  return "a kernel";
}

std::vector<std::string> widen(const std::vector<std::string> &want, const std::vector<std::string> &before,
                               int depth, size_t budget, const ReachOf &reach) {
  std::vector<std::string> out = want;
  std::set<std::string> in(want.begin(), want.end());
  // The way ahead starts at the functions the last build did not hold: the
  // level just broken down, whose calls the next levels are made of. The
  // rest of the set's calls come after them.
  std::vector<std::string> frontier;
  for (const auto &f : want)
    if (std::find(before.begin(), before.end(), f) == before.end()) frontier.push_back(f);
  for (const auto &f : want)
    if (std::find(before.begin(), before.end(), f) != before.end()) frontier.push_back(f);
  for (int level = 0; level < depth && out.size() < budget && !frontier.empty(); ++level) {
    std::map<std::string, Reach> known = reach(frontier);
    std::vector<std::string> ask;
    std::set<std::string> asked;
    for (const auto &f : frontier)
      if (auto it = known.find(f); it != known.end())
        for (const auto &g : it->second.calls)  // a set: in name order
          if (!in.count(g) && asked.insert(g).second) ask.push_back(g);
    if (ask.empty()) break;
    std::map<std::string, Reach> found = reach(ask);
    frontier.clear();
    for (const auto &g : ask) {
      if (out.size() >= budget) break;
      auto it = found.find(g);
      if (it == found.end() || !it->second.buildable) continue;
      in.insert(g);
      out.push_back(g);
      frontier.push_back(g);
    }
  }
  // The last build's functions, as the budget allows: their files keep the
  // bytes they were built with.
  for (const auto &f : before) {
    if (out.size() >= budget) break;
    if (in.insert(f).second) out.push_back(f);
  }
  return out;
}

namespace {

// Does manifest function `f` (its name and file) answer to the session's
// name `want` (a --function pattern: a qualified name, maybe with a file
// suffix; a signature selects every overload here, which may turn on more
// than the pattern's one)?
bool answers(const nlohmann::json &f, const instr::NamePattern &want) {
  return instr::normalize_qualified(f.value("name", "")) == want.name &&
         instr::path_has_suffix(f.value("file", ""), want.file);
}

}  // namespace

RunProbes run_probes(const nlohmann::json &built, const std::vector<std::string> &set) {
  RunProbes out;
  std::vector<instr::NamePattern> patterns;
  for (const auto &s : set) {
    auto p = instr::parse_pattern(s);
    if (!p) {
      out.missing.push_back(s);
      continue;
    }
    patterns.push_back(*p);
  }
  std::set<uint64_t> on;
  std::vector<bool> matched(patterns.size(), false);
  nlohmann::json functions = nlohmann::json::array(), sites = nlohmann::json::array();
  for (const auto &f : built.value("functions", nlohmann::json::array())) {
    bool any = false;
    for (size_t i = 0; i < patterns.size(); ++i)
      if (answers(f, patterns[i])) any = matched[i] = true;
    const uint64_t id = f.at("id").get<uint64_t>();
    if (any) {
      on.insert(id);
      functions.push_back(f);
    } else {
      out.dormant.push_back("f " + std::to_string(id));
      out.largest_dormant = std::max(out.largest_dormant, id);
    }
  }
  for (size_t i = 0; i < patterns.size(); ++i)
    if (!matched[i]) out.missing.push_back(patterns[i].text);
  for (const auto &c : built.value("call_sites", nlohmann::json::array())) {
    if (on.count(c.at("function_id").get<uint64_t>()))
      sites.push_back(c);
    else {
      const uint64_t id = c.at("id").get<uint64_t>();
      out.dormant.push_back("s " + std::to_string(id));
      out.largest_dormant = std::max(out.largest_dormant, id);
    }
  }
  out.manifest = built;
  out.manifest["functions"] = std::move(functions);
  out.manifest["call_sites"] = std::move(sites);
  return out;
}

}  // namespace vprof::iterate
