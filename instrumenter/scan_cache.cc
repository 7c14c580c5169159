#include "instrumenter/scan_cache.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace vprof::instr {

using json = nlohmann::json;

// The stored form of a scan. Bump kFormat when ScanResult or an intent
// changes: entries of another format are another settings' (unit_cache.h).
namespace {

// 2: a sync site's try_first, try_value; 3: stored, stored_unknown; 4: the
// selected functions' intents, the patterns they were selected by, and the
// notes the selection adds apart; 7: a body's outline (FunctionIntent::outline);
// 8: a release wrapped at its receiver (SyncIntent::receiver); 9: a
// condition wait's mutex (SyncIntent::mutex); 10: whether a body written
// twice runs its original copy between windows (plain_between_windows).
constexpr int kFormat = 10;

}  // namespace

void to_json(json &j, const Located &l) {
  j = {{"file", l.file}, {"begin", l.begin}, {"end", l.end}, {"line", l.line}, {"column", l.column}, {"macro", l.macro}};
}
void from_json(const json &j, Located &l) {
  j.at("file").get_to(l.file);
  j.at("begin").get_to(l.begin);
  j.at("end").get_to(l.end);
  j.at("line").get_to(l.line);
  j.at("column").get_to(l.column);
  j.at("macro").get_to(l.macro);
}
void to_json(json &j, const SyncIntent &s) {
  j = {{"at", s.at},
       {"op", static_cast<int>(s.op)},
       {"form", static_cast<int>(s.form)},
       {"success", static_cast<int>(s.success)},
       {"lang", static_cast<int>(s.lang)},
       {"object", s.object},
       {"role", s.role},
       {"callee", s.callee},
       {"try_first", s.try_first},
       {"try_value", s.try_value},
       {"mutex", s.mutex},
       {"discarded", s.discarded},
       {"receiver", s.receiver}};
}
void from_json(const json &j, SyncIntent &s) {
  j.at("at").get_to(s.at);
  s.op = static_cast<SyncOp>(j.at("op").get<int>());
  s.form = static_cast<ValueForm>(j.at("form").get<int>());
  s.success = static_cast<Success>(j.at("success").get<int>());
  s.lang = static_cast<Lang>(j.at("lang").get<int>());
  j.at("object").get_to(s.object);
  j.at("role").get_to(s.role);
  j.at("callee").get_to(s.callee);
  j.at("try_first").get_to(s.try_first);
  j.at("try_value").get_to(s.try_value);
  j.at("mutex").get_to(s.mutex);
  j.at("discarded").get_to(s.discarded);
  j.at("receiver").get_to(s.receiver);
}

void to_json(json &j, const FunctionIntent &f) {
  j = {{"name", f.name}, {"pattern", f.pattern}, {"decl", f.decl},
       {"file", f.file}, {"insert_at", f.insert_at}, {"lang", static_cast<int>(f.lang)},
       {"body_end", f.body_end}, {"two_versions", f.two_versions},
       {"plain_between_windows", f.plain_between_windows},
       {"outline", f.outline}, {"outline_returns", f.outline_returns}};
}
void from_json(const json &j, FunctionIntent &f) {
  j.at("name").get_to(f.name);
  j.at("pattern").get_to(f.pattern);
  j.at("decl").get_to(f.decl);
  j.at("file").get_to(f.file);
  j.at("insert_at").get_to(f.insert_at);
  f.lang = static_cast<Lang>(j.at("lang").get<int>());
  j.at("body_end").get_to(f.body_end);
  j.at("two_versions").get_to(f.two_versions);
  j.at("plain_between_windows").get_to(f.plain_between_windows);
  j.at("outline").get_to(f.outline);
  j.at("outline_returns").get_to(f.outline_returns);
}
void to_json(json &j, const SiteIntent &s) {
  j = {{"at", s.at},
       {"form", static_cast<int>(s.form)},
       {"closure", static_cast<int>(s.closure)},
       {"lang", static_cast<int>(s.lang)},
       {"function_file", s.function_file},
       {"function_at", s.function_at},
       {"callee", s.callee},
       {"callee_text", s.callee_text},
       {"indirect", s.indirect},
       {"callee_type", s.callee_type},
       {"virtual_method", s.virtual_method},
       {"dependent_name", s.dependent_name},
       {"holder", s.holder},
       {"discarded", s.discarded}};
}
void from_json(const json &j, SiteIntent &s) {
  j.at("at").get_to(s.at);
  s.form = static_cast<ValueForm>(j.at("form").get<int>());
  s.closure = static_cast<Closure>(j.at("closure").get<int>());
  s.lang = static_cast<Lang>(j.at("lang").get<int>());
  j.at("function_file").get_to(s.function_file);
  j.at("function_at").get_to(s.function_at);
  j.at("callee").get_to(s.callee);
  j.at("callee_text").get_to(s.callee_text);
  j.at("indirect").get_to(s.indirect);
  j.at("callee_type").get_to(s.callee_type);
  j.at("virtual_method").get_to(s.virtual_method);
  j.at("dependent_name").get_to(s.dependent_name);
  j.at("holder").get_to(s.holder);
  j.at("discarded").get_to(s.discarded);
}
void to_json(json &j, const OpaqueIntent &o) {
  j = {{"name", o.name},         {"pattern", o.pattern},
       {"where", o.where},       {"why", o.why},
       {"callees", o.callees},   {"callee_types", o.callee_types},
       {"virtual_methods", o.virtual_methods}, {"dependent_names", o.dependent_names}};
}
void from_json(const json &j, OpaqueIntent &o) {
  j.at("name").get_to(o.name);
  j.at("pattern").get_to(o.pattern);
  j.at("where").get_to(o.where);
  j.at("why").get_to(o.why);
  j.at("callees").get_to(o.callees);
  j.at("callee_types").get_to(o.callee_types);
  j.at("virtual_methods").get_to(o.virtual_methods);
  j.at("dependent_names").get_to(o.dependent_names);
}

std::vector<std::string> ScanCache::selecting(const std::vector<std::string> &names_seen,
                                              const std::vector<NamePattern> &patterns) {
  std::vector<std::string> sorted = names_seen, out;
  std::sort(sorted.begin(), sorted.end());
  for (const auto &p : patterns)
    if (std::binary_search(sorted.begin(), sorted.end(), p.name)) out.push_back(p.text);
  return out;
}

ScanCache::ScanCache(std::string dir, std::string settings,
                     std::function<std::string(const std::string &)> content_of, bool read_only)
    : units_(dir, "scan " + std::to_string(kFormat) + "\n" + settings, std::move(content_of), read_only) {}

std::optional<ScanResult> ScanCache::get(const CompileEntry &entry, const std::vector<NamePattern> &patterns) {
  auto e = units_.get(entry);
  if (!e) return std::nullopt;
  try {
    const json &j = e->payload;
    ScanResult r;
    r.files_read = std::move(e->files_read);
    j.at("names_seen").get_to(r.names_seen);
    // What the selection added holds for the same patterns; a selection that
    // names none of the unit's functions adds nothing.
    const std::vector<std::string> now = selecting(r.names_seen, patterns);
    if (!now.empty()) {
      if (j.at("patterns").get<std::vector<std::string>>() != now) return std::nullopt;
      j.at("functions").get_to(r.functions);
      j.at("opaque").get_to(r.opaque);
      j.at("sites").get_to(r.sites);
      j.at("skipped_patterns").get_to(r.skipped_patterns);
      j.at("selected_notes").get_to(r.selected_notes);
      j.at("selected_skipped_macro_sites").get_to(r.selected_skipped_macro_sites);
    }
    j.at("syncs").get_to(r.syncs);
    j.at("notes").get_to(r.notes);
    j.at("skipped_macro_sites").get_to(r.skipped_macro_sites);
    j.at("address_taken").get_to(r.address_taken);
    j.at("stored").get_to(r.stored);
    j.at("stored_unknown").get_to(r.stored_unknown);
    j.at("overrides").get_to(r.overrides);
    return r;
  } catch (const json::exception &) {
    return std::nullopt;  // a damaged entry is a miss; the unit is parsed again
  }
}

void ScanCache::put(const CompileEntry &entry, const ScanResult &scan, const std::vector<NamePattern> &patterns) {
  units_.put(entry, scan.files_read,
             {{"patterns", selecting(scan.names_seen, patterns)},
              {"functions", scan.functions},
              {"opaque", scan.opaque},
              {"sites", scan.sites},
              {"skipped_patterns", scan.skipped_patterns},
              {"selected_notes", scan.selected_notes},
              {"selected_skipped_macro_sites", scan.selected_skipped_macro_sites},
              {"syncs", scan.syncs},
              {"names_seen", scan.names_seen},
              {"notes", scan.notes},
              {"skipped_macro_sites", scan.skipped_macro_sites},
              {"address_taken", scan.address_taken},
              {"stored", scan.stored},
              {"stored_unknown", scan.stored_unknown},
              {"overrides", scan.overrides}});
}

}  // namespace vprof::instr
