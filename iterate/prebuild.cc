#include "iterate/prebuild.h"

#include <algorithm>
#include <set>

#include "instrumenter/names.h"

namespace vprof::iterate {

bool assignment_operator(const std::string &name) {
  static const std::string op = "operator=";
  return name.size() >= op.size() && name.compare(name.size() - op.size(), op.size(), op) == 0 &&
         (name.size() == op.size() || name[name.size() - op.size() - 1] == ':');
}

std::string left_out_ahead(const instr::CallGraphNode &n, const std::map<std::string, instr::CallGraphNode> &graph,
                           unsigned min_size) {
  // Small, and all its work in the tree: a call whose body is elsewhere
  // (a syscall's wrapper, a library's) may be where the time goes.
  auto tiny = [&](const instr::CallGraphNode &f) {
    return f.size < min_size && std::all_of(f.opaque_callees.begin(), f.opaque_callees.end(),
                                            [&](const std::string &c) { return graph.count(c) > 0; });
  };
  if (tiny(n)) return "tiny";
  if (assignment_operator(n.name)) return "an assignment operator";
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
  auto held = [&](const std::string &f) { return std::find(before.begin(), before.end(), f) != before.end(); };
  // The last build's functions in headers stay first: the way ahead taking
  // their place rewrote the header (on MariaDB a level that added one
  // function to a build of 60 ahead recompiled every unit of the server).
  if (!before.empty()) {
    const std::map<std::string, Reach> kept = reach(before);
    for (const auto &f : before) {
      if (out.size() >= budget) break;
      auto it = kept.find(f);
      if (it != kept.end() && it->second.header && in.insert(f).second) out.push_back(f);
    }
  }
  // Where the way ahead starts: want's leaves, new ones first (the level
  // just broken down), then the rest of want, whose other calls ranked
  // below d when they were measured. On PostgreSQL the budget went to
  // CommitTransaction's thirty AtEOXact_ calls, and the next level, below
  // parse_analyze_fixedparams (a leaf the last build held), left the build.
  const std::map<std::string, Reach> own = depth > 0 ? reach(want) : std::map<std::string, Reach>{};
  auto leaf = [&](const std::string &f) {
    auto it = own.find(f);
    return it == own.end() || std::none_of(it->second.calls.begin(), it->second.calls.end(),
                                           [&](const std::string &g) { return g != f && in.count(g); });
  };
  auto order = [&](const std::string &f) { return leaf(f) ? (held(f) ? 1 : 0) : 2; };
  std::vector<std::string> frontier = want;
  std::stable_sort(frontier.begin(), frontier.end(),
                   [&](const std::string &a, const std::string &b) { return order(a) < order(b); });
  for (int level = 0; level < depth && out.size() < budget && !frontier.empty(); ++level) {
    std::map<std::string, Reach> known = level == 0 ? own : reach(frontier);
    // Each frontier function's calls not yet in, in turn.
    std::vector<std::vector<std::string>> calls;
    std::vector<std::string> ask;
    std::set<std::string> asked;
    for (const auto &f : frontier) {
      calls.emplace_back();
      if (auto it = known.find(f); it != known.end())
        for (const auto &g : it->second.calls)
          if (!in.count(g)) {
            calls.back().push_back(g);
            if (asked.insert(g).second) ask.push_back(g);
          }
    }
    if (ask.empty()) break;
    std::map<std::string, Reach> found = reach(ask);
    // After the first build (which compiles every unit: the sync packs
    // wrap headers), a function a header defines joins no build ahead: its
    // probes would rewrite the header, and every unit that includes it
    // compiles again. On MariaDB, sql_string.h's Binary_string::q_append
    // and three more headers' functions joining ahead rebuilt 321 units
    // for a level that asked for none of them. A level that asks for one
    // pays that once.
    auto buildable = [&](const std::string &g) {
      auto it = found.find(g);
      return it != found.end() && it->second.buildable && (before.empty() || !it->second.header);
    };
    for (auto &c : calls) {
      c.erase(std::remove_if(c.begin(), c.end(), [&](const std::string &g) { return !buildable(g); }), c.end());
      std::stable_sort(c.begin(), c.end(), [&](const std::string &x, const std::string &y) {
        return found.at(x).size > found.at(y).size;
      });
    }
    frontier.clear();
    for (size_t turn = 0; out.size() < budget; ++turn) {
      bool any = false;
      for (const auto &c : calls) {
        if (turn >= c.size() || out.size() >= budget) continue;
        any = true;
        if (!in.insert(c[turn]).second) continue;
        out.push_back(c[turn]);
        frontier.push_back(c[turn]);
      }
      if (!any) break;
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

std::vector<NextLevel> next_level(const std::vector<std::string> &fresh, const std::vector<std::string> &set,
                                  const std::vector<std::string> &built, const ReachOf &reach) {
  std::vector<NextLevel> out;
  if (fresh.empty()) return out;
  const std::set<std::string> held(built.begin(), built.end());
  std::set<std::string> taken(set.begin(), set.end());
  const std::map<std::string, Reach> found = reach(fresh);
  std::vector<std::string> all;  // every fresh function's callees: their sizes, one ask
  for (const auto &[f, r] : found) all.insert(all.end(), r.calls.begin(), r.calls.end());
  const std::map<std::string, Reach> sizes = reach(all);
  auto size_of = [&](const std::string &g) {
    auto it = sizes.find(g);
    return it == sizes.end() ? 0u : it->second.size;
  };
  for (const auto &f : fresh) {
    auto r = found.find(f);
    if (r == found.end()) continue;
    std::vector<std::string> calls(r->second.calls.begin(), r->second.calls.end());  // by name
    std::stable_sort(calls.begin(), calls.end(),
                     [&](const std::string &x, const std::string &y) { return size_of(x) > size_of(y); });
    for (const auto &g : calls)
      if (held.count(g) && taken.insert(g).second) out.push_back({g, f});
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
