#include "analyzer/names/names.h"

#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/schema.h"

namespace vprof::analyzer {

using nlohmann::json;

json site_json(const std::optional<CallSiteInfo> &s) {
  if (!s) return nullptr;
  json j = {{"file", s->file}, {"line", s->line}, {"column", s->column}, {"callee", s->callee}};
  if (!s->through.empty()) j["through"] = s->through;
  return j;
}

std::string Names::function(uint32_t id) const {
  auto it = functions.find(id);
  return it == functions.end() ? fmt::format("fn#{}", id) : it->second.name;
}

std::string Names::callee(uint32_t site_id) const {
  auto it = sites.find(site_id);
  return it == sites.end() ? fmt::format("site#{}", site_id) : it->second.callee;
}

const CallSiteInfo *Names::site(uint32_t id) const {
  auto it = sites.find(id);
  return it == sites.end() ? nullptr : &it->second;
}

std::string Names::looping_function(uint32_t site_id) const {
  const CallSiteInfo *s = looped(site_id) ? site(site_id) : nullptr;
  return s ? function(s->function_id) : std::string();
}

bool Names::loops(const std::string &name) const {
  for (uint32_t id : looped_sites)
    if (looping_function(id) == name) return true;
  return false;
}

uint32_t Names::function_id(const std::string &name) const {
  for (const auto &[id, f] : functions)
    if (f.name == name) return id;
  return 0;
}

namespace {

Expected<json> parse_file(const std::string &path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot open"};
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{path + ": not valid JSON"};
  if (!j.is_object()) return Error{path + ": top level is not an object"};
  return j;
}

// Reads an optional field of the expected JSON type; a wrong type is an error.
template <class T>
bool get(const json &o, const char *key, T &out, std::string &err, const std::string &where) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return true;
  try {
    out = it->get<T>();
    return true;
  } catch (const json::exception &) {
    err = fmt::format("{}.{}: wrong type", where, key);
    return false;
  }
}

}  // namespace

Expected<Names> load_manifest(const std::string &path) {
  auto j = parse_file(path);
  if (!j) return j.error();
  Names n;
  std::string err;
  if (j->contains("id") && (*j)["id"].is_string()) n.manifest_id = (*j)["id"].get<std::string>();
  auto version = schema::check(*j, path, schema::kManifest);
  if (!version) return version.error();
  if (!n.manifest_id.empty()) n.ids.insert(n.manifest_id);
  const json &files = j->contains("files") ? (*j)["files"] : json();
  if (!files.is_null() && !files.is_array()) return Error{path + ": files: not an array"};
  for (size_t i = 0; files.is_array() && i < files.size(); ++i) {
    std::string id, where = fmt::format("files[{}]", i);
    if (!files[i].is_object()) return Error{path + ": " + where + ": not an object"};
    if (!get(files[i], "id", id, err, where)) return Error{path + ": " + err};
    if (id.empty()) return Error{path + ": " + where + ": no id"};
    n.ids.insert(id);
  }
  n.schema_version = *version;
  const json &fns = (*j)["functions"];
  if (!fns.is_null() && !fns.is_array()) return Error{path + ": functions: not an array"};
  for (size_t i = 0; fns.is_array() && i < fns.size(); ++i) {
    const json &f = fns[i];
    std::string where = fmt::format("functions[{}]", i);
    if (!f.is_object() || !f.contains("id")) return Error{path + ": " + where + ": no id"};
    uint32_t id = 0;
    FunctionInfo fi;
    if (!get(f, "id", id, err, where) || !get(f, "name", fi.name, err, where) ||
        !get(f, "file", fi.file, err, where) || !get(f, "line", fi.line, err, where))
      return Error{path + ": " + err};
    if (fi.name.empty()) fi.name = fmt::format("fn#{}", id);
    n.functions[id] = fi;
  }
  const json &sites = (*j)["call_sites"];
  if (!sites.is_null() && !sites.is_array()) return Error{path + ": call_sites: not an array"};
  for (size_t i = 0; sites.is_array() && i < sites.size(); ++i) {
    const json &s = sites[i];
    std::string where = fmt::format("call_sites[{}]", i);
    if (!s.is_object() || !s.contains("id")) return Error{path + ": " + where + ": no id"};
    uint32_t id = 0;
    CallSiteInfo si;
    if (!get(s, "id", id, err, where) || !get(s, "function_id", si.function_id, err, where) ||
        !get(s, "callee", si.callee, err, where) || !get(s, "file", si.file, err, where) ||
        !get(s, "line", si.line, err, where) || !get(s, "column", si.column, err, where))
      return Error{path + ": " + err};
    if (si.callee.empty()) si.callee = fmt::format("site#{}", id);
    if (auto fit = n.functions.find(si.function_id); fit != n.functions.end()) si.caller = fit->second.name;
    if (!get(s, "to_full_expression", si.to_full_expression, err, where)) return Error{path + ": " + err};
    if (s.contains("indirect")) {
      const json &ind = s["indirect"], &t = s.contains("targets") ? s["targets"] : json::array();
      if (!ind.is_boolean()) return Error{path + ": " + where + ": indirect: not a boolean"};
      if (!t.is_array()) return Error{path + ": " + where + ": targets: not an array"};
      si.indirect = ind.get<bool>();
      for (const json &x : t) {
        if (!x.is_string()) return Error{path + ": " + where + ": targets: not an array of names"};
        si.targets.push_back(x.get<std::string>());
      }
      if (s.contains("dependent_name") && !get(s, "dependent_name", si.dependent_name, err, where))
        return Error{path + ": " + err};
      std::string stored_in;
      if (s.contains("stored_in") && !get(s, "stored_in", stored_in, err, where)) return Error{path + ": " + err};
      if (!stored_in.empty() && si.targets.size() == 1) {
        si.through = si.callee;
        si.callee = si.targets.front();
      }
    }
    n.sites[id] = si;
  }
  // The wrapped sync calls: each is also a timed call site at its place.
  const json &syncs = (*j)["sync_sites"];
  if (!syncs.is_null() && !syncs.is_array()) return Error{path + ": sync_sites: not an array"};
  if (syncs.is_array() && !syncs.empty()) {
    std::set<std::tuple<std::string, int, int>> at;
    for (size_t i = 0; i < syncs.size(); ++i) {
      const json &s = syncs[i];
      std::string where = fmt::format("sync_sites[{}]", i), file;
      int line = 0, column = 0;
      if (!s.is_object() || !get(s, "file", file, err, where) || !get(s, "line", line, err, where) ||
          !get(s, "column", column, err, where))
        return Error{path + ": " + (err.empty() ? where + ": not an object" : err)};
      at.emplace(std::move(file), line, column);
    }
    for (auto &[id, si] : n.sites) si.sync = at.count({si.file, si.line, si.column}) != 0;
  }
  return n;
}

Expected<CallGraph> load_callgraph(const std::string &path) {
  auto j = parse_file(path);
  if (!j) return j.error();
  if (auto v = schema::check(*j, path, schema::kCallGraph); !v) return v.error();
  CallGraph g;
  std::string err;
  if (!get(*j, "root", g.root, err, "") || !get(*j, "height", g.height, err, ""))
    return Error{path + ": " + err.substr(1)};
  const json &fns = (*j)["functions"];
  if (!fns.is_array()) return Error{path + ": functions: missing or not an array"};
  for (size_t i = 0; i < fns.size(); ++i) {
    std::string where = fmt::format("functions[{}]", i);
    std::string name;
    int h = -1;
    std::vector<std::string> callees;
    if (!fns[i].is_object()) return Error{path + ": " + where + ": not an object"};
    if (!get(fns[i], "name", name, err, where) || !get(fns[i], "height", h, err, where) ||
        !get(fns[i], "callees", callees, err, where))
      return Error{path + ": " + err};
    if (name.empty()) return Error{path + ": " + where + ".name: missing"};
    if (h >= 0) g.heights[name] = h;
    g.callees[name] = std::move(callees);
  }
  return g;
}

}  // namespace vprof::analyzer
