#include "instrumenter/edit_plan.h"

#include <algorithm>
#include <optional>
#include <deque>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include <clang/Tooling/Core/Replacement.h>
#include <fmt/format.h>
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

namespace {

// One plan, a method per step; make_plan is their order. What the steps
// share: the edits de-duplicated, the insertions and spans per file, the ids.
class Planner {
 public:
  Planner(const std::vector<ScanResult> &scans, std::map<std::string, std::string> &original,
          const std::string &manifest_path, const nlohmann::json *ids_from, bool dormant, const std::string &root)
      : scans_(scans),
        original_(original),
        manifest_path_(manifest_path),
        dormant_(dormant),
        root_(root),
        reach_(scans) {
    keep_ids(ids_from, fn_numbers_, site_numbers_);
  }
  void gather();               // each edit once, with the languages that asked for it
  Status function_probes();
  Status site_wraps();
  Status sync_wraps();
  Status check_nesting();      // wrapped spans nest or are disjoint
  Status choose_twice();       // a dormant build's bodies written twice (twice_)
  Status two_versions();       // a dormant build's bodies: one without probes
  Status file_ids();           // each rewritten file's id, and the manifest
  Status apply();              // the new texts
  Plan finish();               // the counts

 private:
  std::vector<std::string> targets(const SiteIntent &c) const;
  Expected<const std::string *> original_of(const std::string &file);
  template <class Make>
  Expected<std::string> one_text(const std::string &file, Make make);
  bool mixed(const std::string &file) { return langs_[file].size() == 2; }
  Expected<std::string> call_text(const Located &at);
  void void_it(const Located &at);

  const std::vector<ScanResult> &scans_;
  std::map<std::string, std::string> &original_;
  const std::string &manifest_path_;
  const bool dormant_;
  const std::string root_;
  const CallTargets reach_;
  std::map<std::pair<std::string, unsigned>, FunctionIntent> fns_;
  std::map<std::tuple<std::string, unsigned, unsigned>, SiteIntent> sites_;
  std::map<std::tuple<std::string, unsigned, unsigned>, SyncIntent> syncs_;
  std::map<std::string, std::set<Lang>> langs_;
  std::set<std::string> id_files_;  // files with function or call-site probes
  std::map<std::string, std::vector<Insertion>> ins_;
  std::map<std::string, std::vector<Span>> spans_;
  std::map<std::pair<std::string, unsigned>, uint32_t> fn_ids_;
  std::map<std::string, uint32_t> fn_of_name_;
  Ids fn_numbers_, site_numbers_;
  std::set<std::tuple<std::string, unsigned, unsigned>> voided_;
  std::map<std::string, std::string> file_ids_;
  // A dormant build's functions whose bodies are written twice (choose_twice):
  // the probes of their instrumented copy test no dormant bit (VPROF_LIVE).
  std::set<std::pair<std::string, unsigned>> twice_;
  nlohmann::json jf_ = nlohmann::json::array(), js_ = nlohmann::json::array(), jy_ = nlohmann::json::array();
  Plan plan_;
};

void Planner::gather() {
  // De-duplicate; remember the languages that asked for each edit.
  for (const auto &s : scans_) {
    for (const auto &f : s.functions) {
      fns_.emplace(std::make_pair(f.file, f.insert_at), f);
      langs_[f.file].insert(f.lang);
    }
    for (const auto &c : s.sites) {
      // A closure only where every unit that sees the call allows one.
      auto [it, fresh] = sites_.emplace(std::make_tuple(c.at.file, c.at.begin, c.at.end), c);
      if (!fresh && it->second.closure != c.closure) it->second.closure = Closure::None;
      langs_[c.at.file].insert(c.lang);
    }
    for (const auto &y : s.syncs) {
      syncs_.emplace(std::make_tuple(y.at.file, y.at.begin, y.at.end), y);
      langs_[y.at.file].insert(y.lang);
    }
  }
  for (const auto &[key, f] : fns_) id_files_.insert(f.file);
  for (const auto &[key, c] : sites_) id_files_.insert(c.at.file);
}

std::vector<std::string> Planner::targets(const SiteIntent &c) const {
  if (!c.dependent_name.empty()) return reach_.of_name(c.dependent_name);
  if (auto stored = reach_.of_holder(c.holder)) return *stored;
  return !c.virtual_method.empty() ? reach_.of_virtual(c.virtual_method) : reach_.of_type(c.callee_type);
}

// A file's text before any edit: the caller's map, else read (and kept).
Expected<const std::string *> Planner::original_of(const std::string &file) {
  if (!original_.count(file)) {
    auto text = read_file(file);
    if (!text) return text.error();
    original_[file] = *text;
  }
  return &original_[file];
}

// The text must not depend on which language parsed a shared header.
template <class Make>
Expected<std::string> Planner::one_text(const std::string &file, Make make) {
  std::string c = make(Lang::C), cxx = make(Lang::Cxx);
  const auto &l = langs_[file];
  if (l.size() == 2 && c != cxx)
    return Error{file + ": included from both C and C++ translation units, which need different probe code"};
  return *l.begin() == Lang::C ? c : cxx;
}

// A file that C and C++ units both include takes forms both languages take
// (forms.h), a value's with the call's text as written.
Expected<std::string> Planner::call_text(const Located &at) {
  auto text = original_of(at.file);
  if (!text) return text.error();
  return (*text)->substr(at.begin, at.end - at.begin);
}

// A C call whose value is thrown away gets one (void) before all its
// wrapping (layer -1 opens first at equal spans), so that the statement
// expression of its value form is not "expression result unused".
void Planner::void_it(const Located &at) {
  if (!voided_.insert({at.file, at.begin, at.end}).second) return;
  ins_[at.file].push_back({at.begin, 2, (long long)at.end - at.begin, -1, "(void)"});
}

Status Planner::function_probes() {
  // A direct call of a name that one instrumented definition has: its
  // function id, which the site's probes pass on (forms.h, site_wrap). A
  // name with several (overloads, statics of other files) gets none.
  for (const auto &[key, f] : fns_) {
    uint32_t id = fn_numbers_.take(fn_key(f.file, f.name, f.decl.line, f.decl.column));
    fn_ids_[key] = id;
    auto [it, fresh] = fn_of_name_.emplace(f.name, id);
    if (!fresh) it->second = 0;
    const bool live = twice_.count(key) > 0;
    auto text = one_text(f.file, [&](Lang l) { return function_probe(mixed(f.file) ? Lang::C : l, id, live); });
    if (!text) return text.error();
    ins_[f.file].push_back({f.insert_at, 1, 0, 0, *text});
    jf_.push_back({{"id", id}, {"name", f.name}, {"file", f.file}, {"line", f.decl.line}, {"column", f.decl.column}});
  }
  return Status::Ok();
}

Status Planner::site_wraps() {
  for (const auto &[key, c] : sites_) {
    uint32_t id = site_numbers_.take(site_key(c.at.file, c.at.line, c.at.column, c.callee, c.callee_text));
    uint32_t callee_fn = 0;
    if (!c.indirect)
      if (auto it = fn_of_name_.find(c.callee); it != fn_of_name_.end()) callee_fn = it->second;
    // A file C units include too takes the forms both languages share.
    const Closure closure = mixed(c.at.file) ? Closure::None : c.closure;
    // In a body written twice, the site is in the instrumented copy alone,
    // which runs only when its function is on, and a run turns a site on
    // with its function (iterate/prebuild.h, run_probes): it tests no bit.
    const bool live = twice_.count({c.function_file, c.function_at}) > 0;
    std::function<Wrap(Lang)> make = [&](Lang l) { return site_wrap(l, c.form, id, callee_fn, closure, live); };
    if (mixed(c.at.file) && c.form == ValueForm::Prvalue) {
      auto call = call_text(c.at);
      if (!call) return call.error();
      make = [id, callee_fn, live, call = *call](Lang) { return site_wrap_both(id, call, callee_fn, live); };
    }
    auto pre = one_text(c.at.file, [&](Lang l) { return make(l).prefix; });
    auto post = one_text(c.at.file, [&](Lang l) { return make(l).suffix; });
    if (!pre) return pre.error();
    if (!post) return post.error();
    long long span = c.at.end - c.at.begin;
    if (c.discarded) void_it(c.at);
    ins_[c.at.file].push_back({c.at.begin, 2, span, 0, *pre});
    ins_[c.at.file].push_back({c.at.end, 0, span, 0, *post});
    spans_[c.at.file].push_back({c.at.begin, c.at.end});
    js_.push_back({{"id", id}, {"function_id", fn_ids_[{c.function_file, c.function_at}]}, {"callee", c.callee},
                  {"callee_text", c.callee_text}, {"file", c.at.file}, {"line", c.at.line}, {"column", c.at.column},
                  {"macro", c.at.macro.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.at.macro)}});
    // The scope form's site ends with the full expression: code after the
    // call in it (an assignment of its result) runs inside the site.
    if (closure == Closure::None && c.form == ValueForm::Dependent && c.lang == Lang::Cxx)
      js_.back()["to_full_expression"] = true;
    if (c.indirect) {
      js_.back()["indirect"] = true;
      js_.back()["targets"] = targets(c);
      if (!c.dependent_name.empty()) js_.back()["dependent_name"] = c.dependent_name;
      if (reach_.of_holder(c.holder)) js_.back()["stored_in"] = c.holder;
    }
  }
  return Status::Ok();
}

Status Planner::sync_wraps() {
  // Numbered within each file: its text does not depend on other files'.
  std::map<std::string, uint32_t> syncs_in;
  for (const auto &[key, y] : syncs_) {
    uint32_t n = ++syncs_in[y.at.file];
    std::function<Wrap(Lang)> make = [&](Lang l) {
      if (y.receiver) return sync_receiver_wrap(y.role);
      return sync_wrap(l, y.op, y.form, y.success, y.object, y.role, n, {y.try_first, y.try_value}, y.mutex);
    };
    if (mixed(y.at.file) && y.op == SyncOp::Acquire && y.form == ValueForm::Prvalue) {
      auto call = call_text(y.at);
      if (!call) return call.error();
      make = [&, call = *call](Lang) {
        return sync_wrap_both(y.success, y.object, y.role, n, call, {y.try_first, y.try_value}, y.mutex);
      };
    }
    auto pre = one_text(y.at.file, [&](Lang l) { return make(l).prefix; });
    auto post = one_text(y.at.file, [&](Lang l) { return make(l).suffix; });
    if (!pre) return pre.error();
    if (!post) return post.error();
    long long span = y.at.end - y.at.begin;
    if (y.discarded) void_it(y.at);
    ins_[y.at.file].push_back({y.at.begin, 2, span, 1, *pre});
    ins_[y.at.file].push_back({y.at.end, 0, span, 1, *post});
    spans_[y.at.file].push_back({y.at.begin, y.at.end});
    jy_.push_back({{"callee", y.callee}, {"role", y.role}, {"object", y.object}, {"file", y.at.file},
                  {"line", y.at.line}, {"column", y.at.column}});
  }
  return Status::Ok();
}

Status Planner::check_nesting() {
  for (auto &[file, list] : spans_) {
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
  return Status::Ok();
}

namespace {

// The directive a line beginning at `at` holds: its word ("define",
// "line"; "0" for a `# N "file"` line marker, "" for a null directive), or
// nullopt when the line is no directive.
std::optional<std::string> directive_at(const std::string &text, size_t at) {
  size_t i = text.find_first_not_of(" \t", at);
  if (i == std::string::npos || text[i] != '#') return std::nullopt;
  i = text.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos) return std::string();
  if (text[i] >= '0' && text[i] <= '9') return std::string("0");
  const size_t e = std::min(text.size(), text.find_first_not_of("abcdefghijklmnopqrstuvwxyz_", i));
  return text.substr(i, e - i);
}

// Can a body's text be written twice? Its preprocessor lines must be ones
// a second copy repeats harmlessly (#define and #undef, #pragma) or
// conditionals that open and close inside it; an #include would be empty
// the second time behind its guard.
bool directives_repeat(const std::string &body) {
  int depth = 0;
  for (size_t at = body.find('\n'); at != std::string::npos; at = body.find('\n', at + 1)) {
    const std::optional<std::string> d = directive_at(body, at + 1);
    if (!d) continue;
    const std::string &word = *d;
    if (word == "if" || word == "ifdef" || word == "ifndef") {
      ++depth;
    } else if (word == "endif") {
      if (--depth < 0) return false;
    } else if (word == "elif" || word == "else") {
      if (depth == 0) return false;
    } else if (!(word.empty() || word == "define" || word == "undef" || word == "pragma")) {
      return false;
    }
  }
  return depth == 0;
}

// The offset of the file's first #line directive (or a `# N "file"` line
// marker), or npos: past it the compiler numbers lines as the directive
// says, and a #line that restores a body's physical line would renumber
// the rest of the file (bison's and flex's output).
size_t first_line_directive(const std::string &code) {
  for (size_t at = 0; at < code.size(); at = code.find('\n', at), at = at == std::string::npos ? at : at + 1)
    if (const auto d = directive_at(code, at); d && (*d == "line" || *d == "0")) return at;
  return std::string::npos;
}

}  // namespace

// Which bodies two_versions writes twice: a dormant build's, where the
// scan allows (FunctionIntent::two_versions) and the text holds both copies
// (its braces where the scan saw them, no #line of the file's own before
// it, preprocessor lines a second copy repeats).
Status Planner::choose_twice() {
  if (!dormant_) return Status::Ok();
  std::map<std::string, size_t> line_directive;  // first_line_directive of each file
  for (const auto &[key, f] : fns_) {
    if (!f.two_versions || f.body_end < f.insert_at) continue;
    auto text = original_of(f.file);
    if (!text) return text.error();
    const std::string &code = **text;
    const unsigned open = f.insert_at - 1, close = f.body_end;
    if (close >= code.size() || code[open] != '{' || code[close] != '}') continue;
    if (!line_directive.count(f.file)) line_directive[f.file] = first_line_directive(code);
    if (line_directive[f.file] < open) continue;
    if (!directives_repeat(code.substr(open, close + 1 - open))) continue;
    twice_.insert(key);
  }
  return Status::Ok();
}

// In a build whose runs may leave probes dormant, a function's body is
// written twice: as the original (with its sync wraps: waits and releases
// are recorded whatever the set) and as instrumented, and one test of the
// function's bit at entry picks one:
//   int f(int x) { if (vprof_fn_is_dormant(7)) { ...original... }
//   #line 12
//    else { FnScope vprof_fn_(7); ...instrumented... } }
// In C++ the instrumented copy is a lambda the compiler keeps out of line
// (FunctionIntent::outline): with both copies inline, a function twice its
// size was no longer inlined where the original was (db_bench under gcc:
// WriteBatch::Iterate into InsertInto, Status's move assignment), and a
// dormant run paid the calls:
//   int f(int x) { if (vprof_fn_is_dormant(7)) { ...original... }
//   #line 12
//    else return [&, x]() VPROF_OUTLINED_ -> int { FnScope vprof_fn_(7); ... }(); }
// A dormant function then costs a call one test, whatever its loops and
// sites run (docs/iterate.md, "Build once"). Both copies keep the
// original's line numbers (a body after a #line of the file's own is
// written once). A run's dormant list is fixed from start-up, so
// one copy runs in a process (a static local in the body is one per copy).
// Its sites are on exactly when the function is (iterate/prebuild.h's
// run_probes), so the instrumented copy is what a run records.
// Between windows (windowed recording) the same test sends a call to the
// original copy, so that a function costs one test there too:
//   int f(int x) { if (vprof_fn_runs_plain(7)) { ...original... } ...
// unless both copies would then run in one process with different state
// (a static local), or the function's frames must be recorded from their
// entry in every window: the interval API's callers and the root (the
// analysis reads an interval's latency as its root's time). A frame begun
// between windows is then not in the trace: what it ran before its callees
// is its caller's. A counted interval begins in a window, so only frames
// older than the interval are left out of it: its root's callers.
Status Planner::two_versions() {
  for (const auto &[key, f] : fns_) {
    if (!twice_.count(key)) continue;
    const std::string &code = **original_of(f.file);  // read by choose_twice
    const unsigned open = f.insert_at - 1, close = f.body_end;
    // The original copy: the body with its sync wraps alone (layer 0 is
    // the probes': functions', call sites', and nested bodies' copies).
    std::vector<Insertion> inside;
    for (const Insertion &i : ins_[f.file])
      if (i.layer != 0 && i.offset > open && i.offset <= close) inside.push_back(i);
    std::stable_sort(inside.begin(), inside.end(), before);
    std::string plain;
    unsigned at = open;
    for (const Insertion &i : inside) {
      plain.append(code, at, i.offset - at);
      plain += i.text;
      at = i.offset;
    }
    plain.append(code, at, close + 1 - at);
    const long long line = 1 + std::count(code.begin(), code.begin() + open, '\n');
    const long long span = close + 1 - open;
    // C++: the instrumented copy in a lambda kept out of line, so that the
    // function stays the original's size and is inlined where it was.
    std::string instrumented = "else ", after = " }";
    if (!f.outline.empty() && !mixed(f.file)) {  // C units read the file too: no lambda
      instrumented = fmt::format("else {}{} ", f.outline_returns ? "return " : "", f.outline);
      after = "(); }";
    }
    const bool switched = f.plain_between_windows && f.name != root_ && f.pattern != root_;
    ins_[f.file].push_back({open, 2, span, 0,
                            fmt::format("{{ if ({}({})) {}\n#line {}\n {}",
                                        switched ? "vprof_fn_runs_plain" : "vprof_fn_is_dormant", fn_ids_.at(key),
                                        plain, line, instrumented)});
    ins_[f.file].push_back({close + 1, 0, span, 0, after});
  }
  return Status::Ok();
}

Status Planner::file_ids() {
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
  for (auto &[file, list] : ins_) {
    std::stable_sort(list.begin(), list.end(), before);
    auto text = original_of(file);
    if (!text) return text.error();
    if (!id_files_.empty() && !id_files_.count(file)) continue;
    std::string what = file + '\n' + sha1_hex(**text) + '\n';
    for (const Insertion &i : list) what += std::to_string(i.offset) + ':' + i.text + '\n';
    file_ids_[file] = sha1_hex(what).substr(0, VPROF_MANIFEST_ID_DIGITS);
    jfiles.push_back({{"path", file}, {"id", file_ids_[file]}});
  }
  plan_.manifest = {{"schema_version", schema::kManifest.version},
                   {"functions", jf_},
                   {"call_sites", js_},
                   {"sync_sites", jy_},
                   {"files", jfiles}};
  plan_.manifest_id = sha1_hex(plan_.manifest.dump()).substr(0, VPROF_MANIFEST_ID_DIGITS);
  plan_.manifest["id"] = plan_.manifest_id;
  return Status::Ok();
}

Status Planner::apply() {
  for (auto &[file, list] : ins_) {
    const std::string &code = original_.at(file);  // read above (original_of)
    // After a UTF-8 byte order mark: compilers accept one only as the first bytes.
    unsigned start = code.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    const auto id = file_ids_.find(file);
    // First at the smallest offset: the list stays in order (sorted above).
    list.insert(list.begin(),
                {start, -1, 0, 0, preamble(sha1_hex(code), id == file_ids_.end() ? "" : id->second, manifest_path_, dormant_)});
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
    plan_.new_text[file] = *out;
  }
  return Status::Ok();
}

Plan Planner::finish() {
  plan_.functions = fns_.size();
  plan_.sites = sites_.size();
  plan_.syncs = syncs_.size();
  std::set<std::string> fn_files, sync_only;
  for (const auto &[key, f] : fns_) fn_files.insert(f.file);
  for (const auto &[key, y] : syncs_)
    if (!fn_files.count(y.at.file)) {
      sync_only.insert(y.at.file);
      ++plan_.syncs_in_sync_only_files;
    }
  plan_.function_files = fn_files.size();
  plan_.sync_only_files = sync_only.size();
  return std::move(plan_);
}

}  // namespace

Expected<Plan> make_plan(const std::vector<ScanResult> &scans, std::map<std::string, std::string> &original,
                         const std::string &manifest_path, const nlohmann::json *ids_from, bool dormant,
                         const std::string &root) {
  Planner p(scans, original, manifest_path, ids_from, dormant, root);
  p.gather();
  for (Status (Planner::*step)() : {&Planner::choose_twice, &Planner::function_probes, &Planner::site_wraps,
                                    &Planner::sync_wraps,
                                    &Planner::check_nesting, &Planner::two_versions, &Planner::file_ids,
                                    &Planner::apply})
    if (Status s = (p.*step)(); !s) return Error{s.message()};
  return p.finish();
}

}  // namespace vprof::instr
