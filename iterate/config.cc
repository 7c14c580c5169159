#include "iterate/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/schema.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vprof::iterate {

std::string Config::abs(const std::string &p) const {
  return fs::path(p).is_absolute() ? p : (fs::path(dir) / p).lexically_normal().string();
}

Expected<Config> load_config(const std::string &path) {
  std::ifstream in(path);
  if (!in) return Error{fmt::format("{}: cannot read the session config (run `vprof init` first)", path)};
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error &e) {
    return Error{fmt::format("{}: not valid JSON: {}", path, e.what())};
  }
  if (auto v = schema::check(j, path, schema::kSessionConfig); !v) return v.error();
  Config c;
  c.path = fs::absolute(path).lexically_normal().string();
  c.dir = fs::path(c.path).parent_path().string();
  auto bad = [&](const char *field, const std::string &why) {
    return Error{fmt::format("{}: field '{}': {}", path, field, why)};
  };
  try {
    if (!j.is_object()) return Error{fmt::format("{}: the config must be a JSON object", path)};
    for (const char *req : {"root", "build_command", "run_command"})
      if (!j.contains(req) || !j[req].is_string() || j[req].get<std::string>().empty())
        return bad(req, "required, a non-empty string");
    c.root = j["root"];
    c.build_command = j["build_command"];
    c.run_command = j["run_command"];
    c.build_dir = j.value("build_dir", c.build_dir);
    c.source_root = j.value("source_root", c.source_root);
    c.sync_packs = j.value("sync_packs", c.sync_packs);
    c.sync_everywhere = j.value("sync_everywhere", c.sync_everywhere);
    c.k = j.value("k", c.k);
    c.d = j.value("d", c.d);
    c.m = j.value("m", c.m);
    c.exponent = j.value("exponent", c.exponent);
    c.max_iterations = j.value("max_iterations", c.max_iterations);
    c.sample = j.value("sample", c.sample);
    c.runs = j.value("runs", c.runs);
    c.session_dir = j.value("session_dir", c.session_dir);
    c.prebuild_depth = j.value("prebuild_depth", c.prebuild_depth);
    c.prebuild_functions = j.value("prebuild_functions", c.prebuild_functions);
    c.prebuild_min_size = j.value("prebuild_min_size", c.prebuild_min_size);
    c.lookahead_budget = j.value("lookahead_budget", c.lookahead_budget);
    c.again = j.value("again", c.again);
    c.keep_traces = j.value("keep_traces", c.keep_traces);
  } catch (const json::exception &e) {
    return Error{fmt::format("{}: wrong type: {}", path, e.what())};
  }
  if (c.k < 1) return bad("k", "must be >= 1");
  if (c.d < 0 || c.d > 1) return bad("d", "must be a fraction in [0, 1]");
  if (c.m <= 0 || c.m > 1) return bad("m", "must be a fraction in (0, 1]");
  if (c.exponent < 0) return bad("exponent", "must be >= 0");
  if (c.max_iterations < 1) return bad("max_iterations", "must be >= 1");
  if (c.sample < 0 || c.sample > 100) return bad("sample", "must be a percentage in [0, 100]");
  if (c.prebuild_depth < 0 || c.prebuild_depth > 8) return bad("prebuild_depth", "must be in [0, 8]");
  if (c.prebuild_functions < 1) return bad("prebuild_functions", "must be >= 1");
  if (c.prebuild_min_size < 0) return bad("prebuild_min_size", "must be >= 0");
  if (c.lookahead_budget < 0 || c.lookahead_budget > 100)
    return bad("lookahead_budget", "must be a percentage in [0, 100]");
  if (c.again < 0 || c.again > 5) return bad("again", "must be in [0, 5]");
  if (c.runs < 1 || c.runs > kMaxRuns) return bad("runs", fmt::format("must be in [1, {}]", kMaxRuns));
  return c;
}

Status save_config(const Config &c, const std::string &path) {
  json j = {{"schema_version", schema::kSessionConfig.version}, {"root", c.root},
            {"build_dir", c.build_dir}, {"build_command", c.build_command},
            {"run_command", c.run_command}, {"sync_packs", c.sync_packs},
            {"sync_everywhere", c.sync_everywhere}, {"k", c.k},
            {"d", c.d},                 {"m", c.m},
            {"exponent", c.exponent},   {"max_iterations", c.max_iterations},
            {"sample", c.sample},       {"runs", c.runs},
            {"session_dir", c.session_dir}, {"prebuild_depth", c.prebuild_depth},
            {"prebuild_functions", c.prebuild_functions}, {"prebuild_min_size", c.prebuild_min_size},
            {"lookahead_budget", c.lookahead_budget}, {"again", c.again}, {"keep_traces", c.keep_traces}};
  if (!c.source_root.empty()) j["source_root"] = c.source_root;
  std::ofstream out(path);
  if (!out) return Error{fmt::format("{}: cannot write", path)};
  out << j.dump(2) << "\n";
  return Status::Ok();
}

std::vector<std::string> sync_pack_names(const std::string &annotations_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &ent : std::filesystem::directory_iterator(annotations_dir, ec))
    if (ent.path().extension() == ".json") names.push_back(ent.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string unknown_sync_pack(const std::vector<std::string> &specs,
                              const std::string &annotations_dir) {
  std::vector<std::string> names = sync_pack_names(annotations_dir);
  for (const std::string &spec : specs) {
    bool is_path = spec.find('/') != std::string::npos || spec.find(".json") != std::string::npos;
    bool ok = is_path ? std::filesystem::is_regular_file(spec)
                      : std::find(names.begin(), names.end(), spec) != names.end();
    if (!ok) return spec;
  }
  return std::string();
}

}  // namespace vprof::iterate
