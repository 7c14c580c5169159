#include "instrumenter/edit_plan.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include <clang/Tooling/Core/Replacement.h>
#include <llvm/Support/Error.h>
#include <vprof/trace_format.h>

#include "common/schema.h"
#include "instrumenter/journal.h"

namespace vprof::instr {

namespace {

struct Insertion {
  unsigned offset;
  int cls;         // 0 closing text, 1 function probe, 2 opening text (at one offset)
  long long span;  // wrapped length: outer (longer) opens first and closes last
  int layer;       // 0 call site (outer), 1 sync wrapper (inner) for equal spans
  std::string text;
};

bool before(const Insertion &a, const Insertion &b) {
  if (a.offset != b.offset) return a.offset < b.offset;
  if (a.cls != b.cls) return a.cls < b.cls;
  if (a.cls == 2) return std::tie(b.span, a.layer) < std::tie(a.span, b.layer);  // outer first
  return std::tie(a.span, b.layer) < std::tie(b.span, a.layer);                  // inner first
}

struct Span {
  unsigned begin, end;
};

Expected<std::string> read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot read"};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

CallTargets::CallTargets(const std::vector<ScanResult> &scans) {
  for (const auto &s : scans) {
    for (const auto &[type, name] : s.address_taken) by_type_[type].insert(name);
    for (const auto &[holder, name] : s.stored) by_holder_[holder].insert(name);
    unknown_holders_.insert(s.stored_unknown.begin(), s.stored_unknown.end());
    for (const auto &[base, name] : s.overrides) overriders_[base].insert(name);
    for (const auto &name : s.names_seen) {
      size_t at = name.rfind("::");
      by_name_[at == std::string::npos ? name : name.substr(at + 2)].insert(name);
    }
  }
}

std::vector<std::string> CallTargets::of_name(const std::string &name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<std::string> CallTargets::of_type(const std::string &callee_type) const {
  auto it = callee_type.empty() ? by_type_.end() : by_type_.find(callee_type);
  if (it == by_type_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::optional<std::vector<std::string>> CallTargets::of_holder(const std::string &holder) const {
  auto it = holder.empty() || unknown_holders_.count(holder) ? by_holder_.end() : by_holder_.find(holder);
  if (it == by_holder_.end()) return std::nullopt;
  return std::vector<std::string>{it->second.begin(), it->second.end()};
}

std::vector<std::string> CallTargets::of_virtual(const std::string &method) const {
  std::set<std::string> t;
  if (auto it = overriders_.find(method); it != overriders_.end()) t = it->second;
  t.insert(method);  // its own definition, if the tree has one
  return {t.begin(), t.end()};
}

namespace {

// Ids handed out in (file, offset) order: an earlier manifest's for the
// entries it has (same key; equal keys, as a macro's several calls have,
// taken in order), new ones numbered after its largest.
class Ids {
 public:
  using Key = std::vector<std::string>;
  void keep(const Key &k, uint32_t id) {
    old_[k].push_back(id);
    next_ = std::max(next_, id + 1);
  }
  uint32_t take(const Key &k) {
    auto it = old_.find(k);
    if (it == old_.end() || it->second.empty()) return next_++;
    uint32_t id = it->second.front();
    it->second.pop_front();
    return id;
  }

 private:
  std::map<Key, std::deque<uint32_t>> old_;
  uint32_t next_ = 1;
};

Ids::Key fn_key(const std::string &file, const std::string &name, int line, int column) {
  return {file, name, std::to_string(line), std::to_string(column)};
}
Ids::Key site_key(const std::string &file, int line, int column, const std::string &callee,
                  const std::string &text) {
  return {file, std::to_string(line), std::to_string(column), callee, text};
}

// The earlier manifest's ids (a manifest that cannot be read keeps none:
// the ids are then numbered from 1, which costs rebuilds, not correctness).
void keep_ids(const nlohmann::json *m, Ids &fn, Ids &site) {
  if (!m || !m->is_object()) return;
  try {
    for (const auto &f : m->value("functions", nlohmann::json::array()))
      fn.keep(fn_key(f.at("file"), f.at("name"), f.at("line"), f.at("column")), f.at("id"));
    for (const auto &c : m->value("call_sites", nlohmann::json::array()))
      site.keep(site_key(c.at("file"), c.at("line"), c.at("column"), c.at("callee"), c.value("callee_text", "")),
                c.at("id"));
  } catch (const nlohmann::json::exception &) {
    fn = Ids{};
    site = Ids{};
  }
}

}  // namespace

Expected<Plan> make_plan(const std::vector<ScanResult> &scans, std::map<std::string, std::string> &original,
                         const std::string &manifest_path, const nlohmann::json *ids_from) {
  // De-duplicate; remember the languages that asked for each edit.
  std::map<std::pair<std::string, unsigned>, FunctionIntent> fns;
  std::map<std::tuple<std::string, unsigned, unsigned>, SiteIntent> sites;
  std::map<std::tuple<std::string, unsigned, unsigned>, SyncIntent> syncs;
  std::map<std::string, std::set<Lang>> langs;
  for (const auto &s : scans) {
    for (const auto &f : s.functions) {
      fns.emplace(std::make_pair(f.file, f.insert_at), f);
      langs[f.file].insert(f.lang);
    }
    for (const auto &c : s.sites) {
      // A closure only where every unit that sees the call allows one.
      auto [it, fresh] = sites.emplace(std::make_tuple(c.at.file, c.at.begin, c.at.end), c);
      if (!fresh && it->second.closure != c.closure) it->second.closure = Closure::None;
      langs[c.at.file].insert(c.lang);
    }
    for (const auto &y : s.syncs) {
      syncs.emplace(std::make_tuple(y.at.file, y.at.begin, y.at.end), y);
      langs[y.at.file].insert(y.lang);
    }
  }
  const CallTargets reach(scans);
  auto targets = [&](const SiteIntent &c) {
    if (!c.dependent_name.empty()) return reach.of_name(c.dependent_name);
    if (auto stored = reach.of_holder(c.holder)) return *stored;
    return !c.virtual_method.empty() ? reach.of_virtual(c.virtual_method) : reach.of_type(c.callee_type);
  };
  // A file's text before any edit: the caller's map, else read (and kept).
  auto original_of = [&](const std::string &file) -> Expected<const std::string *> {
    if (!original.count(file)) {
      auto text = read_file(file);
      if (!text) return text.error();
      original[file] = *text;
    }
    return &original[file];
  };
  Plan plan;
  std::set<std::string> id_files;  // files with function or call-site probes
  for (const auto &[key, f] : fns) id_files.insert(f.file);
  for (const auto &[key, c] : sites) id_files.insert(c.at.file);
  std::map<std::string, std::vector<Insertion>> ins;
  std::map<std::string, std::vector<Span>> spans;
  std::map<std::pair<std::string, unsigned>, uint32_t> fn_ids;
  nlohmann::json jf = nlohmann::json::array(), js = nlohmann::json::array(), jy = nlohmann::json::array();
  // The text must not depend on which language parsed a shared header.
  auto one_text = [&](const std::string &file, auto make) -> Expected<std::string> {
    std::string c = make(Lang::C), cxx = make(Lang::Cxx);
    const auto &l = langs[file];
    if (l.size() == 2 && c != cxx)
      return Error{file + ": included from both C and C++ translation units, which need different probe code"};
    return *l.begin() == Lang::C ? c : cxx;
  };
  // A file that C and C++ units both include: forms both languages take
  // (forms.h), a value's with the call's text as written.
  auto mixed = [&](const std::string &file) { return langs[file].size() == 2; };
  auto call_text = [&](const Located &at) -> Expected<std::string> {
    auto text = original_of(at.file);
    if (!text) return text.error();
    return (*text)->substr(at.begin, at.end - at.begin);
  };
  // A direct call of a name that one instrumented definition has: its
  // function id, which the site's probes pass on (forms.h, site_wrap). A
  // name with several (overloads, statics of other files) gets none.
  std::map<std::string, uint32_t> fn_of_name;
  Ids fn_numbers, site_numbers;
  keep_ids(ids_from, fn_numbers, site_numbers);
  for (const auto &[key, f] : fns) {
    uint32_t id = fn_numbers.take(fn_key(f.file, f.name, f.decl.line, f.decl.column));
    fn_ids[key] = id;
    auto [it, fresh] = fn_of_name.emplace(f.name, id);
    if (!fresh) it->second = 0;
    auto text = one_text(f.file, [&](Lang l) { return function_probe(mixed(f.file) ? Lang::C : l, id); });
    if (!text) return text.error();
    ins[f.file].push_back({f.insert_at, 1, 0, 0, *text});
    jf.push_back({{"id", id}, {"name", f.name}, {"file", f.file}, {"line", f.decl.line}, {"column", f.decl.column}});
  }
  // A C call whose value is thrown away gets one (void) before all its
  // wrapping (layer -1 opens first at equal spans), so that the statement
  // expression of its value form is not "expression result unused".
  std::set<std::tuple<std::string, unsigned, unsigned>> voided;
  auto void_it = [&](const Located &at) {
    if (!voided.insert({at.file, at.begin, at.end}).second) return;
    ins[at.file].push_back({at.begin, 2, (long long)at.end - at.begin, -1, "(void)"});
  };
  for (const auto &[key, c] : sites) {
    uint32_t id = site_numbers.take(site_key(c.at.file, c.at.line, c.at.column, c.callee, c.callee_text));
    uint32_t callee_fn = 0;
    if (!c.indirect)
      if (auto it = fn_of_name.find(c.callee); it != fn_of_name.end()) callee_fn = it->second;
    // A file C units include too takes the forms both languages share.
    const Closure closure = mixed(c.at.file) ? Closure::None : c.closure;
    std::function<Wrap(Lang)> make = [&](Lang l) { return site_wrap(l, c.form, id, callee_fn, closure); };
    if (mixed(c.at.file) && c.form == ValueForm::Prvalue) {
      auto call = call_text(c.at);
      if (!call) return call.error();
      make = [id, callee_fn, call = *call](Lang) { return site_wrap_both(id, call, callee_fn); };
    }
    auto pre = one_text(c.at.file, [&](Lang l) { return make(l).prefix; });
    auto post = one_text(c.at.file, [&](Lang l) { return make(l).suffix; });
    if (!pre) return pre.error();
    if (!post) return post.error();
    long long span = c.at.end - c.at.begin;
    if (c.discarded) void_it(c.at);
    ins[c.at.file].push_back({c.at.begin, 2, span, 0, *pre});
    ins[c.at.file].push_back({c.at.end, 0, span, 0, *post});
    spans[c.at.file].push_back({c.at.begin, c.at.end});
    js.push_back({{"id", id}, {"function_id", fn_ids[{c.function_file, c.function_at}]}, {"callee", c.callee},
                  {"callee_text", c.callee_text}, {"file", c.at.file}, {"line", c.at.line}, {"column", c.at.column},
                  {"macro", c.at.macro.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.at.macro)}});
    if (c.indirect) {
      js.back()["indirect"] = true;
      js.back()["targets"] = targets(c);
      if (!c.dependent_name.empty()) js.back()["dependent_name"] = c.dependent_name;
      if (reach.of_holder(c.holder)) js.back()["stored_in"] = c.holder;
    }
  }
  // Numbered within each file: its text does not depend on other files'.
  std::map<std::string, uint32_t> syncs_in;
  for (const auto &[key, y] : syncs) {
    uint32_t n = ++syncs_in[y.at.file];
    std::function<Wrap(Lang)> make = [&](Lang l) {
      return sync_wrap(l, y.op, y.form, y.success, y.object, y.role, n, {y.try_first, y.try_value});
    };
    if (mixed(y.at.file) && y.op == SyncOp::Acquire && y.form == ValueForm::Prvalue) {
      auto call = call_text(y.at);
      if (!call) return call.error();
      make = [&, call = *call](Lang) {
        return sync_wrap_both(y.success, y.object, y.role, n, call, {y.try_first, y.try_value});
      };
    }
    auto pre = one_text(y.at.file, [&](Lang l) { return make(l).prefix; });
    auto post = one_text(y.at.file, [&](Lang l) { return make(l).suffix; });
    if (!pre) return pre.error();
    if (!post) return post.error();
    long long span = y.at.end - y.at.begin;
    if (y.discarded) void_it(y.at);
    ins[y.at.file].push_back({y.at.begin, 2, span, 1, *pre});
    ins[y.at.file].push_back({y.at.end, 0, span, 1, *post});
    spans[y.at.file].push_back({y.at.begin, y.at.end});
    jy.push_back({{"callee", y.callee}, {"role", y.role}, {"object", y.object}, {"file", y.at.file},
                  {"line", y.at.line}, {"column", y.at.column}});
  }
  for (auto &[file, list] : spans) {
    // Wrapped spans must nest or be disjoint: a crossing pair has no valid text.
    std::sort(list.begin(), list.end(), [](const Span &a, const Span &b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
    std::vector<Span> open;
    for (const Span &s : list) {
      while (!open.empty() && open.back().end <= s.begin) open.pop_back();
      if (!open.empty() && s.end > open.back().end)
        return Error{file + ": offset " + std::to_string(s.begin) + ": two wrapped calls overlap without nesting"};
      open.push_back(s);
    }
  }
  // Each rewritten file whose probes carry ids (functions', call sites')
  // registers its own id: a hash of its path, its original and every
  // insertion, so it changes exactly when the file's probes do. The
  // manifest lists them ("files"); a program whose ids are all listed was
  // built from this instrumentation, however many of its files the build
  // left alone since the last one (their text, and so their id, did not
  // change). A header of a session's selection keeps its bytes, and its
  // includers are not rebuilt, as long as its own functions and sites keep
  // their ids (ids_from). A file with sync wraps alone carries no id a stale
  // copy could misname, and registers nothing (it may be included inside a
  // function, where a constructor cannot go); with no ids anywhere (sync
  // packs alone) every rewritten file registers, so the trace still names
  // its manifest.
  nlohmann::json jfiles = nlohmann::json::array();
  std::map<std::string, std::string> file_ids;
  for (auto &[file, list] : ins) {
    std::stable_sort(list.begin(), list.end(), before);
    auto text = original_of(file);
    if (!text) return text.error();
    if (!id_files.empty() && !id_files.count(file)) continue;
    std::string what = file + '\n' + sha1_hex(**text) + '\n';
    for (const Insertion &i : list) what += std::to_string(i.offset) + ':' + i.text + '\n';
    file_ids[file] = sha1_hex(what).substr(0, VPROF_MANIFEST_ID_DIGITS);
    jfiles.push_back({{"path", file}, {"id", file_ids[file]}});
  }
  plan.manifest = {{"schema_version", schema::kManifest.version},
                   {"functions", jf},
                   {"call_sites", js},
                   {"sync_sites", jy},
                   {"files", jfiles}};
  plan.manifest_id = sha1_hex(plan.manifest.dump()).substr(0, VPROF_MANIFEST_ID_DIGITS);
  plan.manifest["id"] = plan.manifest_id;
  for (auto &[file, list] : ins) {
    const std::string &code = original.at(file);  // read above (original_of)
    // After a UTF-8 byte order mark: compilers accept one only as the first bytes.
    unsigned start = code.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    const auto id = file_ids.find(file);
    // First at the smallest offset: the list stays in order (sorted above).
    list.insert(list.begin(),
                {start, -1, 0, 0, preamble(sha1_hex(code), id == file_ids.end() ? "" : id->second, manifest_path)});
    clang::tooling::Replacements reps;
    for (size_t i = 0; i < list.size();) {
      std::string text;
      unsigned off = list[i].offset;
      for (; i < list.size() && list[i].offset == off; ++i) text += list[i].text;
      if (off > code.size()) return Error{file + ": edit past the end of the file (changed while parsing?)"};
      if (auto err = reps.add(clang::tooling::Replacement(file, off, 0, text)))
        return Error{file + ": " + llvm::toString(std::move(err))};
    }
    auto out = clang::tooling::applyAllReplacements(code, reps);
    if (!out) return Error{file + ": " + llvm::toString(out.takeError())};
    plan.new_text[file] = *out;
  }
  plan.functions = fns.size();
  plan.sites = sites.size();
  plan.syncs = syncs.size();
  std::set<std::string> fn_files, sync_only;
  for (const auto &[key, f] : fns) fn_files.insert(f.file);
  for (const auto &[key, y] : syncs)
    if (!fn_files.count(y.at.file)) {
      sync_only.insert(y.at.file);
      ++plan.syncs_in_sync_only_files;
    }
  plan.function_files = fn_files.size();
  plan.sync_only_files = sync_only.size();
  return plan;
}

}  // namespace vprof::instr
