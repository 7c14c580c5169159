#include "instrumenter/instrument.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <llvm/Support/FileSystem.h>

#include "instrumenter/compile_db.h"
#include "instrumenter/edit_plan.h"
#include "instrumenter/journal.h"
#include "instrumenter/names.h"
#include "instrumenter/parse_tu.h"
#include "instrumenter/scan_cache.h"
#include "instrumenter/sync_pack.h"
#include "instrumenter/tree.h"
#include "instrumenter/tu_scan.h"

namespace vprof::instr {

namespace {

// Whether `text` names `word` as an identifier would: an edge of `word` that
// is a word character touches none in the text. MariaDB's psi_noop.c says
// start_rwlock_wait, not lock_wait; parsed as if it named lock_wait, it
// showed mysql_thread.h's inline function under its own #defines, a call
// no other unit has was wrapped, and every unit of the server was rebuilt.
bool names_word(const std::string &text, const std::string &word) {
  if (word.empty()) return true;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if (ident_char(word.front()) && at > 0 && ident_char(text[at - 1])) continue;
    if (ident_char(word.back()) && end < text.size() && ident_char(text[end])) continue;
    return true;
  }
  return false;
}

}  // namespace

std::string fmt_opaque(const OpaqueFunction &f) {
  return f.where + ": " + f.name + ": " + f.why + "; cannot instrument it" +
         (f.reaches.empty() ? "; it calls no function defined in the tree"
                            : "; instrument what it calls instead: " + some_names(f.reaches));
}

namespace {

// One instrumentation, a method per step; `run` is their order. What the
// steps share is kept here: the compile database, the selection, the tree's
// journal and originals, the scans.
class Instrumentation {
 public:
  explicit Instrumentation(const InstrumentOptions &options) : o_(options) {}
  Expected<InstrumentResult> run();

 private:
  Status read_selection();    // the compile database, the patterns and packs, the source root
  Status open_tree();         // the tree locked, its journal and originals read
  Status split_by_mention();  // the units that mention a selected name first
  void open_scan_cache();
  Status scan(const std::vector<const CompileEntry *> &list);  // parsed (or cached) units, in db order
  Status scan_tree();         // the first units, then the rest when a name is missing or a function opaque
  Status check_names();       // each pattern defined somewhere (a dry run lists those that are not)
  Status check_opaque();      // functions vprof cannot open, with what they reach
  Expected<Plan> plan();      // the edits, the manifest, and the result's counts
  Status write(const Plan &p);  // the manifest aside, the sources committed, the manifest in place
  bool any_opaque() const {
    return std::any_of(scans_.begin(), scans_.end(), [](const ScanResult &r) { return !r.opaque.empty(); });
  }
  bool optional(const std::string &pattern) const {
    return std::find(o_.optional_functions.begin(), o_.optional_functions.end(), pattern) !=
           o_.optional_functions.end();
  }

  InstrumentOptions o_;
  InstrumentResult res_;
  std::optional<CompileDb> db_;
  ScanOptions so_;
  SyncRules rules_;
  std::optional<nlohmann::json> ids_from_;
  std::optional<Expected<TreeLock>> lock_;
  std::optional<Journal> journal_;
  std::map<std::string, std::string> originals_;
  std::vector<const CompileEntry *> first_, rest_;
  std::optional<ScanCache> cache_;
  std::vector<ScanResult> scans_;
  std::set<std::string> matched_;
  std::vector<std::string> seen_;
  size_t total_ = 0;
};

Expected<InstrumentResult> Instrumentation::run() {
  if (Status s = read_selection(); !s) return Error{s.message()};
  if (Status s = open_tree(); !s) return Error{s.message()};
  if (Status s = split_by_mention(); !s) return Error{s.message()};
  open_scan_cache();
  if (Status s = scan_tree(); !s) return Error{s.message()};
  if (Status s = check_names(); !s) return Error{s.message()};
  if (Status s = check_opaque(); !s) return Error{s.message()};
  auto p = plan();
  if (!p) return p.error();
  if (o_.dry_run) return res_;
  if (Status s = write(*p); !s) return Error{s.message()};
  return res_;
}

Status Instrumentation::read_selection() {
  llvm::SmallString<256> abs(o_.build_dir);
  llvm::sys::fs::make_absolute(abs);
  o_.build_dir = std::string(abs.str());
  auto db = load_compile_db(o_.build_dir);
  if (!db) return db.error();
  db_.emplace(std::move(*db));
  res_.files_in_db = db_->entries.size();
  res_.duplicates_dropped = db_->duplicates_dropped;
  res_.dropped_flags = db_->dropped_flags;
  res_.outside = db_->outside;
  if (o_.functions.empty() && o_.sync_packs.empty()) return Error{"instrument: name at least one --function or --sync pack"};
  for (const auto *list : {&o_.functions, &o_.optional_functions})
    for (const auto &f : *list) {
      auto p = parse_pattern(f);
      if (!p) return p.error();
      so_.patterns.push_back(*p);
    }
  for (const auto &pack : o_.sync_packs)
    if (auto s = load_sync_pack(pack, o_.annotations_dir, rules_); !s) return s;
  so_.sync = &rules_;
  if (!o_.keep_ids_from.empty()) {
    std::ifstream in(o_.keep_ids_from);
    if (!in) return Error{o_.keep_ids_from + ": cannot read the manifest whose ids to keep"};
    ids_from_ = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (ids_from_->is_discarded() || !ids_from_->is_object())
      return Error{o_.keep_ids_from + ": not a manifest (not a JSON object); its ids cannot be kept"};
  }

  if (o_.source_root.empty()) {
    so_.source_root = db_->common_root;
  } else {
    // As locate_tree finds the journal: a relative root is the caller's
    // (`--source-root src`), compared below with the units' real paths.
    std::error_code ec;
    so_.source_root = std::filesystem::weakly_canonical(std::filesystem::absolute(o_.source_root, ec), ec).string();
  }
  if (so_.source_root.back() != '/') so_.source_root += '/';
  for (const auto &d : o_.excluded_dirs) {
    llvm::SmallString<256> real;
    so_.excluded_dirs.push_back(llvm::sys::fs::real_path(d, real) ? d : std::string(real.str()) + "/");
  }
  return Status::Ok();
}

Status Instrumentation::open_tree() {
  // One vprof at a time on a tree; a dry run only reads, and locks only a
  // journal that exists.
  auto place = locate_tree(o_.build_dir, o_.source_root);
  if (!place) return place.error();
  if (!o_.dry_run || std::filesystem::exists(place->journal_dir)) {
    lock_.emplace(TreeLock::acquire(place->journal_dir));
    if (!*lock_) return lock_->error();
  }
  // A tree instrumented before is parsed as it was originally.
  auto journal = read_journal(place->journal_dir);
  if (!journal) return journal.error();
  journal_.emplace(std::move(*journal));
  auto originals = read_originals(*journal_);
  if (!originals) return originals.error();
  originals_ = std::move(*originals);
  so_.overlay = &originals_;
  return Status::Ok();
}

Status Instrumentation::split_by_mention() {
  // Parse only the files that mention a selected name; sync packs apply to the
  // files parsed (all of them with all_files). Unmatched names widen the set.
  for (const auto &e : db_->entries) {
    bool wanted = o_.all_files || so_.patterns.empty();  // sync packs alone: the whole tree
    bool mentions = so_.patterns.empty();
    std::string text = contents(e.file, originals_);
    // vprof's own output that no journal lists (a journal removed by hand, a
    // tree whose build directories disagree on its root): instrumenting it
    // again would put probes on probes.
    if (!originals_.count(e.file) && marker_sha1(text))
      return Error{e.file + ": already instrumented by vprof (its first line says so) but not listed in " +
                   journal_->dir + "/state.json; run `vprof restore` first"};
    // Every component must appear ("DBImpl" and "Write"), which keeps files
    // that merely call some other Write() out of the first pass.
    for (const auto &p : so_.patterns) {
      bool all = true;
      for (size_t at = 0; all && at <= p.name.size();) {
        size_t end = p.name.find("::", at);
        if (end == std::string::npos) end = p.name.size();
        all = names_word(text, p.name.substr(at, end - at));
        at = end + 2;
      }
      mentions |= all;
    }
    wanted |= mentions;
    (wanted ? first_ : rest_).push_back(&e);
  }
  total_ = first_.size();
  return Status::Ok();
}

void Instrumentation::open_scan_cache() {
  // A unit is parsed only when its cached scan is out of date (scan_cache.h).
  if (!o_.scan_cache) return;
  // What decides a unit's scan besides the unit and the selection: the
  // packs' texts, which files may be edited, and this very vprof (a
  // rebuilt one may scan otherwise).
  std::string settings = so_.source_root;
  for (const auto &d : so_.excluded_dirs) settings += "\n" + d;
  for (const auto &p : o_.sync_packs) {
    std::string path = sync_pack_path(p, o_.annotations_dir);
    settings += "\n" + p + "\n" + sha1_hex(contents(path, {}));
  }
  settings += "\n" + this_vprof();
  const std::map<std::string, std::string> &orig = originals_;
  cache_.emplace(o_.build_dir + "/.vprof-cache/scan", settings,
                [&orig](const std::string &path) { return contents(path, orig); }, o_.dry_run);
}

// Translation units are parsed in parallel; results are merged in compile-db
// order so ids do not depend on scheduling.
Status Instrumentation::scan(const std::vector<const CompileEntry *> &list) {
  std::vector<Expected<ScanResult>> results(list.size(), Error{""});
  std::vector<char> hit(list.size(), 0);
  Status s = for_each_tu(
      list.size(), o_.jobs,
      [&](size_t i, unsigned) -> Status {
        if (o_.cancelled && o_.cancelled()) return Error{"interrupted"};
        if (cache_)
          if (auto got = cache_->get(*list[i], so_.patterns)) {
            results[i] = std::move(*got);
            hit[i] = 1;
            return Status::Ok();
          }
        results[i] = scan_translation_unit(*list[i], so_);
        if (!results[i]) return Error{results[i].error()};
        if (cache_) cache_->put(*list[i], *results[i], so_.patterns);
        return Status::Ok();
      },
      [&](size_t, size_t i) {
        ++res_.files_parsed;
        if (o_.progress) o_.progress(res_.files_parsed, total_, list[i]->file);
      });
  if (!s) return s;
  for (size_t i = 0; i < list.size(); ++i) {
    ScanResult &r = *results[i];
    for (const auto &f : r.functions) matched_.insert(f.pattern);
    for (const auto &f : r.opaque) matched_.insert(f.pattern);
    // Found, and left alone (constexpr, a coroutine): not a name with no definition.
    for (const auto &p : r.skipped_patterns) matched_.insert(p);
    seen_.insert(seen_.end(), r.names_seen.begin(), r.names_seen.end());
    res_.files_from_cache += hit[i];
    scans_.push_back(std::move(r));
  }
  return Status::Ok();
}

Status Instrumentation::scan_tree() {
  if (auto s = scan(first_); !s) return s;
  bool missing = false;
  for (const auto &p : so_.patterns) missing |= !matched_.count(p.text);
  // What a function vprof cannot open reaches is known from the whole tree:
  // which functions have a definition, whose address is taken, of what type.
  if ((missing || any_opaque()) && !rest_.empty()) {
    total_ += rest_.size();
    if (auto s = scan(rest_); !s) return s;
  }
  return Status::Ok();
}

Status Instrumentation::check_names() {
  // Found in the rest, too: a name a macro pastes together (APR's ap_run_##name)
  // is in no file's text, so its defining file is never in the first pass.
  for (const auto &p : so_.patterns) {
    if (matched_.count(p.text)) continue;
    std::sort(seen_.begin(), seen_.end());
    seen_.erase(std::unique(seen_.begin(), seen_.end()), seen_.end());
    auto close = close_matches(p.name, seen_);
    std::string hint;
    for (const auto &c : close) hint += (hint.empty() ? "" : ", ") + c;
    std::string e = "--function " + p.text + ": no definition in the " + std::to_string(res_.files_parsed) +
                    " files parsed" + (hint.empty() ? "" : "; close matches: " + hint);
    if (optional(p.text)) {
      res_.left_out.push_back(p.text + ": no definition in the files parsed");
      continue;
    }
    if (!o_.dry_run) return Error{e};
    res_.undefined.push_back(e);
    res_.undefined_patterns.push_back(p.text);
  }
  return Status::Ok();
}

Status Instrumentation::check_opaque() {
  if (!any_opaque()) return Status::Ok();
  std::sort(seen_.begin(), seen_.end());
  const CallTargets targets(scans_);
  for (const auto &r : scans_)
    for (const auto &f : r.opaque) {
      OpaqueFunction of{f.name, f.pattern, f.where, f.why, {}};
      auto add = [&](const std::string &g) {
        // Defined in the tree (a library's function is no way through), not f itself.
        if (g != f.name && std::binary_search(seen_.begin(), seen_.end(), g) &&
            std::find(of.reaches.begin(), of.reaches.end(), g) == of.reaches.end())
          of.reaches.push_back(g);
      };
      for (const auto &g : f.callees) add(g);
      for (const auto &t : f.callee_types)
        for (const auto &g : targets.of_type(t)) add(g);
      for (const auto &m : f.virtual_methods)
        for (const auto &g : targets.of_virtual(m)) add(g);
      for (const auto &n : f.dependent_names)
        for (const auto &g : targets.of_name(n)) add(g);
      if (std::none_of(res_.opaque.begin(), res_.opaque.end(), [&](auto &o) { return o.name == of.name; }))
        res_.opaque.push_back(std::move(of));
    }
  if (!o_.dry_run) {
    for (const OpaqueFunction &f : res_.opaque)
      if (!optional(f.pattern)) return Error{fmt_opaque(f)};
    for (const OpaqueFunction &f : res_.opaque) res_.left_out.push_back(f.pattern + ": " + f.why);
    res_.opaque.clear();
  }
  return Status::Ok();
}

Expected<Plan> Instrumentation::plan() {
  std::map<std::string, std::string> &original = originals_;  // make_plan adds what it read
  res_.manifest_path = o_.build_dir + "/.vprof/manifest.json";
  auto plan = make_plan(scans_, original, res_.manifest_path, ids_from_ ? &*ids_from_ : nullptr, o_.dormant,
                        o_.root);
  if (!plan) return plan.error();
  res_.functions = plan->functions;
  res_.call_sites = plan->sites;
  res_.sync_sites = plan->syncs;
  res_.function_files = plan->function_files;
  res_.sync_only_files = plan->sync_only_files;
  res_.syncs_in_sync_only_files = plan->syncs_in_sync_only_files;
  for (const auto &s : scans_) {
    res_.skipped_macro_sites += s.skipped_macro_sites + s.selected_skipped_macro_sites;
    res_.notes.insert(res_.notes.end(), s.notes.begin(), s.notes.end());
    res_.notes.insert(res_.notes.end(), s.selected_notes.begin(), s.selected_notes.end());
  }
  std::sort(res_.notes.begin(), res_.notes.end());
  res_.notes.erase(std::unique(res_.notes.begin(), res_.notes.end()), res_.notes.end());
  for (const auto &[path, text] : plan->new_text) res_.changes.push_back({path, original[path], text});
  if (o_.dry_run) {
    std::set<std::pair<std::string, unsigned>> with_calls;  // (function_file, function_at)
    for (const auto &sc : scans_)
      for (const auto &site : sc.sites) with_calls.insert({site.function_file, site.function_at});
    std::map<std::string, bool> calls;  // pattern -> some definition holds a call
    for (const auto &sc : scans_)
      for (const auto &f : sc.functions) calls[f.pattern] |= with_calls.count({f.file, f.insert_at}) > 0;
    for (const auto &[pattern, any] : calls)
      if (!any) res_.without_calls.push_back(pattern);
  }
  return plan;
}

Status Instrumentation::write(const Plan &p) {
  // The manifest is written aside first, so a build directory that cannot
  // take it fails the run before any source changes; it replaces the old one
  // once the sources match it.
  std::error_code ec;
  std::filesystem::create_directories(o_.build_dir + "/.vprof", ec);
  std::string tmp = res_.manifest_path + ".vprof-tmp";
  {
    std::ofstream m(tmp);
    m << p.manifest.dump(2) << "\n";
    if (!m.flush()) return Error{res_.manifest_path + ": cannot write the manifest (nothing was changed)"};
  }
  auto done = commit(*journal_, originals_, p.new_text);
  if (!done) {
    std::filesystem::remove(tmp, ec);
    return done.error();
  }
  res_.files_changed = done->files_written;
  std::filesystem::rename(tmp, res_.manifest_path, ec);
  if (ec) return Error{res_.manifest_path + ": cannot write the manifest: " + ec.message() + " (the sources were rewritten)"};
  return Status::Ok();
}

}  // namespace

Expected<InstrumentResult> instrument(const InstrumentOptions &options) { return Instrumentation(options).run(); }

namespace {

bool is_source(const std::filesystem::path &p) {
  static const std::set<std::string> exts = {".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".h", ".hh", ".hpp",
                                             ".hxx", ".h++", ".H", ".inc", ".inl", ".ipp", ".tcc", ".def"};
  return exts.count(p.extension().string()) > 0;
}

// Files below `root` that carry vprof's marker and that `j` does not list: a
// state.json deleted by hand. Each is added to `j` only when it holds exactly
// a text vprof wrote at that path (the written log) and its original is in
// j's originals; any other (a copy of an instrumented file under a new name,
// one edited since) is the user's, and is said, not touched.
void adopt_marked_files(const std::string &root, Journal &j, std::vector<std::string> &unrestorable,
                        std::vector<std::string> &not_ours) {
  namespace fs = std::filesystem;
  std::set<std::string> listed;
  for (const auto &f : j.files) listed.insert(f.path);
  std::error_code ec;
  size_t visited = 0;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++visited > 500000) break;  // not a source tree (a root of "/"?): the journal must do
    const fs::path &p = it->path();
    std::string name = p.filename().string();
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      if (name == ".vprof" || name == ".git" || name == ".svn" || name == ".hg") it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec) || it->is_symlink(ec) || !is_source(p) || listed.count(p.string())) continue;
    std::ifstream in(p, std::ios::binary);
    std::string head(200, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    auto sum = marker_sha1(head);
    if (!sum) continue;
    JournalEntry e{p.string(), *sum, {}};
    std::ifstream whole(p, std::ios::binary);
    std::ostringstream text;
    text << whole.rdbuf();
    if (!vprof_wrote(j.dir, p.string(), text.str())) {
      not_ours.push_back(p.string() + ": carries vprof's marker, but vprof did not write these bytes at this "
                                      "path (a copy of an instrumented file, or edited since): left as it is");
      continue;
    }
    e.ours.push_back(sha1_hex(text.str()));
    if (!read_original(j.dir, e)) {
      unrestorable.push_back(p.string() + ": instrumented by vprof, but its original (sha1 " + *sum +
                             ") is not in " + j.dir + "/originals");
      continue;
    }
    j.files.push_back(std::move(e));
  }
}

}  // namespace

Expected<RestoreResult> restore(const RestoreOptions &o) {
  auto place = locate_tree(o.build_dir, o.source_root);
  if (!place) return place.error();
  std::optional<Expected<TreeLock>> lock;
  if (std::filesystem::exists(place->journal_dir)) {
    lock.emplace(TreeLock::acquire(place->journal_dir));
    if (!*lock) return lock->error();
  }
  auto journal = read_journal(place->journal_dir);
  if (!journal) return journal.error();
  RestoreResult r;
  std::string root = place->source_root.empty() ? place->journal_dir.substr(0, place->journal_dir.rfind('/'))
                                                : place->source_root;
  adopt_marked_files(root, *journal, r.left_alone, r.not_ours);
  if (journal->files.empty() && !journal->exists) {
    // Originals saved by a commit killed before its first state.json: no
    // file below the root carries a marker naming them, so they go.
    r.found_nothing = r.left_alone.empty() && r.not_ours.empty();
    if (r.found_nothing && std::filesystem::exists(journal->dir)) (void)remove_journal(journal->dir);
    return r;
  }
  auto originals = read_originals(*journal);
  if (!originals) return originals.error();
  CommitOptions co;
  co.force = o.force;
  co.keep_returned = !o.forget;
  auto done = commit(*journal, *originals, {}, co);
  if (!done) return done.error();
  r.files_restored = done->files_written;
  r.returned = done->returned;
  r.gone = done->gone;
  r.journal_dir = journal->dir;
  // A build inside the source tree (Apache's, PostgreSQL's) had the manifest
  // written into the tree: it goes too, so nothing of vprof's is left there
  // (a trace keeps its own copy: vprof run and iterate put one in it).
  if (done->left_alone.empty() && done->returned.empty()) {  // (else the journal stays too)
    namespace fs = std::filesystem;
    std::error_code ec;
    llvm::SmallString<256> build(o.build_dir);
    llvm::sys::fs::make_absolute(build);
    const std::string manifest_dir = std::string(build.str()) + "/.vprof";
    const std::string under = root.back() == '/' ? root : root + "/";
    if (manifest_dir.compare(0, under.size(), under) == 0) {
      fs::remove(manifest_dir + "/manifest.json", ec);
      fs::remove(manifest_dir, ec);  // only when empty (the journal's own directory may still hold its lock)
    }
  }
  r.left_alone.insert(r.left_alone.end(), done->left_alone.begin(), done->left_alone.end());
  return r;
}

}  // namespace vprof::instr
