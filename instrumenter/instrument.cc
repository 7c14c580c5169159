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

std::string contents(const std::string &path, const std::map<std::string, std::string> &overlay) {
  auto it = overlay.find(path);
  if (it != overlay.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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

Expected<InstrumentResult> instrument(const InstrumentOptions &options) {
  InstrumentResult res;
  InstrumentOptions o = options;
  llvm::SmallString<256> abs(o.build_dir);
  llvm::sys::fs::make_absolute(abs);
  o.build_dir = std::string(abs.str());
  auto db = load_compile_db(o.build_dir);
  if (!db) return db.error();
  res.files_in_db = db->entries.size();
  res.duplicates_dropped = db->duplicates_dropped;
  res.dropped_flags = db->dropped_flags;
  res.outside = db->outside;
  if (o.functions.empty() && o.sync_packs.empty()) return Error{"instrument: name at least one --function or --sync pack"};
  ScanOptions so;
  for (const auto &f : o.functions) {
    auto p = parse_pattern(f);
    if (!p) return p.error();
    so.patterns.push_back(*p);
  }
  SyncRules rules;
  for (const auto &pack : o.sync_packs)
    if (auto s = load_sync_pack(pack, o.annotations_dir, rules); !s) return Error{s.message()};
  so.sync = &rules;
  std::optional<nlohmann::json> ids_from;
  if (!o.keep_ids_from.empty()) {
    std::ifstream in(o.keep_ids_from);
    if (!in) return Error{o.keep_ids_from + ": cannot read the manifest whose ids to keep"};
    ids_from = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (ids_from->is_discarded() || !ids_from->is_object())
      return Error{o.keep_ids_from + ": not a manifest (not a JSON object); its ids cannot be kept"};
  }

  if (o.source_root.empty()) {
    so.source_root = db->common_root;
  } else {
    // As locate_tree finds the journal: a relative root is the caller's
    // (`--source-root src`), compared below with the units' real paths.
    std::error_code ec;
    so.source_root = std::filesystem::weakly_canonical(std::filesystem::absolute(o.source_root, ec), ec).string();
  }
  if (so.source_root.back() != '/') so.source_root += '/';
  for (const auto &d : o.excluded_dirs) {
    llvm::SmallString<256> real;
    so.excluded_dirs.push_back(llvm::sys::fs::real_path(d, real) ? d : std::string(real.str()) + "/");
  }

  // One vprof at a time on a tree; a dry run only reads, and locks only a
  // journal that exists.
  auto place = locate_tree(o.build_dir, o.source_root);
  if (!place) return place.error();
  std::optional<Expected<TreeLock>> lock;
  if (!o.dry_run || std::filesystem::exists(place->journal_dir)) {
    lock.emplace(TreeLock::acquire(place->journal_dir));
    if (!*lock) return lock->error();
  }
  // A tree instrumented before is parsed as it was originally.
  auto journal = read_journal(place->journal_dir);
  if (!journal) return journal.error();
  auto originals = read_originals(*journal);
  if (!originals) return originals.error();
  so.overlay = &*originals;

  // Parse only the files that mention a selected name; sync packs apply to the
  // files parsed (all of them with all_files). Unmatched names widen the set.
  std::vector<const CompileEntry *> first, rest;
  for (const auto &e : db->entries) {
    bool wanted = o.all_files || so.patterns.empty();  // sync packs alone: the whole tree
    bool mentions = so.patterns.empty();
    std::string text = contents(e.file, *originals);
    // vprof's own output that no journal lists (a journal removed by hand, a
    // tree whose build directories disagree on its root): instrumenting it
    // again would put probes on probes.
    if (!originals->count(e.file) && marker_sha1(text))
      return Error{e.file + ": already instrumented by vprof (its first line says so) but not listed in " +
                   journal->dir + "/state.json; run `vprof restore` first"};
    // Every component must appear ("DBImpl" and "Write"), which keeps files
    // that merely call some other Write() out of the first pass.
    for (const auto &p : so.patterns) {
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
    (wanted ? first : rest).push_back(&e);
  }
  // A unit is parsed only when its cached scan is out of date (scan_cache.h).
  std::optional<ScanCache> cache;
  if (o.scan_cache) {
    // What decides a unit's scan besides the unit and the selection: the
    // packs' texts, which files may be edited, and this very vprof (a
    // rebuilt one may scan otherwise).
    std::string settings = so.source_root;
    for (const auto &d : so.excluded_dirs) settings += "\n" + d;
    for (const auto &p : o.sync_packs) {
      std::string path = sync_pack_path(p, o.annotations_dir);
      settings += "\n" + p + "\n" + sha1_hex(contents(path, {}));
    }
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      auto size = std::filesystem::file_size(self, ec);
      auto time = std::filesystem::last_write_time(self, ec).time_since_epoch().count();
      settings += "\n" + self.string() + " " + std::to_string(size) + " " + std::to_string(time);
    }
    const std::map<std::string, std::string> &orig = *originals;
    cache.emplace(o.build_dir + "/.vprof-cache/scan", settings,
                  [&orig](const std::string &path) { return contents(path, orig); }, o.dry_run);
  }
  std::vector<ScanResult> scans;
  std::set<std::string> matched;
  std::vector<std::string> seen;
  size_t total = first.size();
  // Translation units are parsed in parallel; results are merged in compile-db
  // order so ids do not depend on scheduling.
  auto run = [&](const std::vector<const CompileEntry *> &list) -> Status {
    std::vector<Expected<ScanResult>> results(list.size(), Error{""});
    std::vector<char> hit(list.size(), 0);
    Status s = for_each_tu(
        list.size(), o.jobs,
        [&](size_t i, unsigned) -> Status {
          if (o.cancelled && o.cancelled()) return Error{"interrupted"};
          if (cache)
            if (auto got = cache->get(*list[i], so.patterns)) {
              results[i] = std::move(*got);
              hit[i] = 1;
              return Status::Ok();
            }
          results[i] = scan_translation_unit(*list[i], so);
          if (!results[i]) return Error{results[i].error()};
          if (cache) cache->put(*list[i], *results[i], so.patterns);
          return Status::Ok();
        },
        [&](size_t, size_t i) {
          ++res.files_parsed;
          if (o.progress) o.progress(res.files_parsed, total, list[i]->file);
        });
    if (!s) return s;
    for (size_t i = 0; i < list.size(); ++i) {
      ScanResult &r = *results[i];
      for (const auto &f : r.functions) matched.insert(f.pattern);
      for (const auto &f : r.opaque) matched.insert(f.pattern);
      // Found, and left alone (constexpr, a coroutine): not a name with no definition.
      for (const auto &p : r.skipped_patterns) matched.insert(p);
      seen.insert(seen.end(), r.names_seen.begin(), r.names_seen.end());
      res.files_from_cache += hit[i];
      scans.push_back(std::move(r));
    }
    return Status::Ok();
  };
  if (auto s = run(first); !s) return Error{s.message()};
  bool missing = false;
  for (const auto &p : so.patterns) missing |= !matched.count(p.text);
  // What a function vprof cannot open reaches is known from the whole tree:
  // which functions have a definition, whose address is taken, of what type.
  auto any_opaque = [&] {
    return std::any_of(scans.begin(), scans.end(), [](const ScanResult &r) { return !r.opaque.empty(); });
  };
  if ((missing || any_opaque()) && !rest.empty()) {
    total += rest.size();
    if (auto s = run(rest); !s) return Error{s.message()};
  }
  // Found in the rest, too: a name a macro pastes together (APR's ap_run_##name)
  // is in no file's text, so its defining file is never in the first pass.
  const bool opaque = any_opaque();
  for (const auto &p : so.patterns) {
    if (matched.count(p.text)) continue;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    auto close = close_matches(p.name, seen);
    std::string hint;
    for (const auto &c : close) hint += (hint.empty() ? "" : ", ") + c;
    std::string e = "--function " + p.text + ": no definition in the " + std::to_string(res.files_parsed) +
                    " files parsed" + (hint.empty() ? "" : "; close matches: " + hint);
    if (!o.dry_run) return Error{e};
    res.undefined.push_back(e);
    res.undefined_patterns.push_back(p.text);
  }

  if (opaque) {
    std::sort(seen.begin(), seen.end());
    const CallTargets targets(scans);
    for (const auto &r : scans)
      for (const auto &f : r.opaque) {
        OpaqueFunction of{f.name, f.pattern, f.where, f.why, {}};
        auto add = [&](const std::string &g) {
          // Defined in the tree (a library's function is no way through), not f itself.
          if (g != f.name && std::binary_search(seen.begin(), seen.end(), g) &&
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
        if (std::none_of(res.opaque.begin(), res.opaque.end(), [&](auto &o) { return o.name == of.name; }))
          res.opaque.push_back(std::move(of));
      }
    if (!o.dry_run) {
      const OpaqueFunction &f = res.opaque.front();
      return Error{fmt_opaque(f)};
    }
  }

  std::map<std::string, std::string> original = *originals;
  res.manifest_path = o.build_dir + "/.vprof/manifest.json";
  auto plan = make_plan(scans, original, res.manifest_path, ids_from ? &*ids_from : nullptr);
  if (!plan) return plan.error();
  res.functions = plan->functions;
  res.call_sites = plan->sites;
  res.sync_sites = plan->syncs;
  res.function_files = plan->function_files;
  res.sync_only_files = plan->sync_only_files;
  res.syncs_in_sync_only_files = plan->syncs_in_sync_only_files;
  for (const auto &s : scans) {
    res.skipped_macro_sites += s.skipped_macro_sites + s.selected_skipped_macro_sites;
    res.notes.insert(res.notes.end(), s.notes.begin(), s.notes.end());
    res.notes.insert(res.notes.end(), s.selected_notes.begin(), s.selected_notes.end());
  }
  std::sort(res.notes.begin(), res.notes.end());
  res.notes.erase(std::unique(res.notes.begin(), res.notes.end()), res.notes.end());
  for (const auto &[path, text] : plan->new_text) res.changes.push_back({path, original[path], text});
  if (o.dry_run) {
    std::set<std::pair<std::string, unsigned>> with_calls;  // (function_file, function_at)
    for (const auto &sc : scans)
      for (const auto &site : sc.sites) with_calls.insert({site.function_file, site.function_at});
    std::map<std::string, bool> calls;  // pattern -> some definition holds a call
    for (const auto &sc : scans)
      for (const auto &f : sc.functions) calls[f.pattern] |= with_calls.count({f.file, f.insert_at}) > 0;
    for (const auto &[pattern, any] : calls)
      if (!any) res.without_calls.push_back(pattern);
    return res;
  }

  // The manifest is written aside first, so a build directory that cannot
  // take it fails the run before any source changes; it replaces the old one
  // once the sources match it.
  std::error_code ec;
  std::filesystem::create_directories(o.build_dir + "/.vprof", ec);
  std::string tmp = res.manifest_path + ".vprof-tmp";
  {
    std::ofstream m(tmp);
    m << plan->manifest.dump(2) << "\n";
    if (!m.flush()) return Error{res.manifest_path + ": cannot write the manifest (nothing was changed)"};
  }
  auto done = commit(*journal, original, plan->new_text);
  if (!done) {
    std::filesystem::remove(tmp, ec);
    return done.error();
  }
  res.files_changed = done->files_written;
  std::filesystem::rename(tmp, res.manifest_path, ec);
  if (ec) return Error{res.manifest_path + ": cannot write the manifest: " + ec.message() + " (the sources were rewritten)"};
  return res;
}

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
