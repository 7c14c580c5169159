#include "instrumenter/sync_pack.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/schema.h"
#include "instrumenter/names.h"

namespace vprof::instr {

namespace {

Expected<std::string> role_enum(const std::string &role, const std::string &where) {
  static const std::map<std::string, std::string> roles = {
      {"mutex", "VPROF_SYNC_MUTEX"},         {"mutex_try", "VPROF_SYNC_MUTEX_TRY"},
      {"shared", "VPROF_SYNC_SHARED"},       {"condvar", "VPROF_SYNC_CONDVAR"},
      {"condvar_timed", "VPROF_SYNC_CONDVAR_TIMED"}, {"broadcast", "VPROF_SYNC_BROADCAST"},
      {"semaphore", "VPROF_SYNC_SEMAPHORE"}, {"queue", "VPROF_SYNC_QUEUE"},
      {"io", "VPROF_SYNC_IO"}};
  auto it = roles.find(role);
  if (it == roles.end()) return Error{where + ": unknown role \"" + role + "\""};
  return it->second;
}

}  // namespace

std::string sync_pack_path(const std::string &spec, const std::string &annotations_dir) {
  if (spec.find('/') == std::string::npos && spec.find(".json") == std::string::npos)
    return annotations_dir + "/" + spec + ".json";
  return spec;
}

Status load_sync_pack(const std::string &spec, const std::string &annotations_dir, SyncRules &into) {
  const std::string path = sync_pack_path(spec, annotations_dir);
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot read sync pack"};
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception &e) {
    return Error{path + ": not JSON: " + e.what()};
  }
  if (!j.is_object() || !j.contains("functions") || !j["functions"].is_array())
    return Error{path + ": expected an object with a \"functions\" array"};
  if (auto v = schema::check(j, path, schema::kSyncPack); !v) return v.error();
  std::string pack = j.value("name", spec);
  size_t index = 0;
  for (const auto &f : j["functions"]) {
    std::string where = path + ": functions[" + std::to_string(index++) + "]";
    if (!f.is_object() || !f.contains("name") || !f.contains("op") || !f.contains("role") || !f.contains("object"))
      return Error{where + ": needs name, op, role and object"};
    SyncRule r;
    r.pack = pack;
    r.name = normalize_qualified(f["name"].get<std::string>());
    std::string op = f["op"].get<std::string>();
    if (op == "acquire") r.op = SyncOp::Acquire;
    else if (op == "release") r.op = SyncOp::Release;
    else if (op == "scoped") r.op = SyncOp::Scoped;
    else return Error{where + ": unknown op \"" + op + "\" (acquire, release, scoped)"};
    auto role = role_enum(f["role"].get<std::string>(), where);
    if (!role) return role.error();
    r.role = *role;
    r.object = f["object"].get<std::string>();
    std::string success = f.value("success", "always");
    if (success == "always") r.success = Success::Always;
    else if (success == "zero") r.success = Success::Zero;
    else if (success == "true") r.success = Success::True;
    else return Error{where + ": unknown success \"" + success + "\" (always, zero, true)"};
    r.try_first = f.value("try", "");
    r.try_value = f.value("try_value", "");
    if (!r.try_first.empty() && r.op != SyncOp::Acquire) return Error{where + ": \"try\" is for an acquire"};
    r.mutex = f.value("mutex", "");
    if (!r.mutex.empty() && (r.op != SyncOp::Acquire || (r.role != "VPROF_SYNC_CONDVAR" && r.role != "VPROF_SYNC_CONDVAR_TIMED")))
      return Error{where + ": \"mutex\" is for a condition wait (op acquire, role condvar or condvar_timed)"};
    r.args = f.value("args", -1);
    if (f.contains("role_if")) {
      const auto &c = f["role_if"];
      r.role_if_arg = c.value("arg", -1);
      r.role_if_equals = c.value("equals", "");
      auto alt = role_enum(c.value("role", ""), where + ".role_if");
      if (!alt) return alt.error();
      r.role_if_role = *alt;
    }
    into.by_name[r.name] = r;
  }
  return Status::Ok();
}

std::string expand_object(const std::string &tmpl, const std::vector<std::string> &args, const std::string &self) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '{') {
      out += tmpl[i];
      continue;
    }
    size_t close = tmpl.find('}', i);
    if (close == std::string::npos) return "";
    std::string key = tmpl.substr(i + 1, close - i - 1);
    if (key == "this") {
      if (self.empty()) return "";
      out += "(" + self + ")";
    } else {
      size_t k = 0;
      try {
        k = std::stoul(key);
      } catch (...) {
        return "";
      }
      if (k >= args.size() || args[k].empty()) return "";  // no text: an argument a macro body wrote
      out += "(" + args[k] + ")";
    }
    i = close;
  }
  return out;
}

}  // namespace vprof::instr
