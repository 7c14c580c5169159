#include "instrumenter/instrument.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <set>
#include <sstream>

#include <llvm/Support/FileSystem.h>

#include "instrumenter/compile_db.h"
#include "instrumenter/edit_plan.h"
#include "instrumenter/file_store.h"
#include "instrumenter/names.h"
#include "instrumenter/sync_pack.h"
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

}  // namespace

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
  so.source_root = o.source_root.empty() ? db->common_root : o.source_root;
  if (so.source_root.back() != '/') so.source_root += '/';
  for (const auto &d : o.excluded_dirs) {
    llvm::SmallString<256> real;
    so.excluded_dirs.push_back(llvm::sys::fs::real_path(d, real) ? d : std::string(real.str()) + "/");
  }

  // A tree instrumented before is parsed as it was originally.
  auto state = read_state(o.build_dir);
  if (!state) return state.error();
  auto originals = read_originals(o.build_dir, *state);
  if (!originals) return originals.error();
  so.overlay = &*originals;

  // Parse only the files that mention a selected name; sync packs apply to the
  // files parsed (all of them with all_files). Unmatched names widen the set.
  std::vector<const CompileEntry *> first, rest;
  for (const auto &e : db->entries) {
    bool wanted = o.all_files || so.patterns.empty();  // sync packs alone: the whole tree
    if (!wanted) {
      std::string text = contents(e.file, *originals);
      // Every component must appear ("DBImpl" and "Write"), which keeps files
      // that merely call some other Write() out of the first pass.
      for (const auto &p : so.patterns) {
        bool all = true;
        for (size_t at = 0; all && at <= p.name.size();) {
          size_t end = p.name.find("::", at);
          if (end == std::string::npos) end = p.name.size();
          all = text.find(p.name.substr(at, end - at)) != std::string::npos;
          at = end + 2;
        }
        wanted |= all;
      }
    }
    (wanted ? first : rest).push_back(&e);
  }
  std::vector<ScanResult> scans;
  std::set<std::string> matched;
  std::vector<std::string> seen;
  size_t total = first.size();
  // Translation units are parsed in parallel; results are merged in compile-db
  // order so ids do not depend on scheduling.
  auto run = [&](const std::vector<const CompileEntry *> &list) -> Status {
    std::vector<Expected<ScanResult>> results(list.size(), Error{""});
    std::atomic<size_t> next{0};
    std::mutex mu;
    unsigned jobs = o.jobs ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
    jobs = std::min<unsigned>(jobs, std::max<size_t>(1, list.size()));
    auto work = [&] {
      for (size_t i; (i = next++) < list.size();) {
        results[i] = scan_translation_unit(*list[i], so);
        std::lock_guard<std::mutex> l(mu);
        ++res.files_parsed;
        if (o.progress) o.progress(res.files_parsed, total, list[i]->file);
        if (!results[i]) next = list.size();  // stop early: the run fails anyway
      }
    };
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < jobs; ++w) threads.emplace_back(work);
    for (auto &t : threads) t.join();
    for (size_t i = 0; i < list.size(); ++i) {
      if (!results[i]) {
        if (results[i].error().message.empty()) continue;  // not parsed after a failure
        return Error{results[i].error().message};
      }
      ScanResult &r = *results[i];
      for (const auto &f : r.functions) matched.insert(f.pattern);
      for (const auto &n : r.notes)
        if (n.find("is constexpr") != std::string::npos || n.find("is a coroutine") != std::string::npos)
          for (const auto &p : so.patterns)
            if (n.find(": " + p.text + " is") != std::string::npos) matched.insert(p.text);
      seen.insert(seen.end(), r.names_seen.begin(), r.names_seen.end());
      scans.push_back(std::move(r));
    }
    return Status::Ok();
  };
  if (auto s = run(first); !s) return Error{s.message()};
  bool missing = false;
  for (const auto &p : so.patterns) missing |= !matched.count(p.text);
  if (missing && !rest.empty()) {
    total += rest.size();
    if (auto s = run(rest); !s) return Error{s.message()};
  }
  for (const auto &p : so.patterns) {
    if (matched.count(p.text)) continue;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    auto close = close_matches(p.name, seen);
    std::string hint;
    for (const auto &c : close) hint += (hint.empty() ? "" : ", ") + c;
    return Error{"--function " + p.text + ": no definition in the " + std::to_string(res.files_parsed) +
                 " files parsed" + (hint.empty() ? "" : "; close matches: " + hint)};
  }

  std::map<std::string, std::string> original = *originals;
  auto plan = make_plan(scans, original);
  if (!plan) return plan.error();
  res.functions = plan->functions;
  res.call_sites = plan->sites;
  res.sync_sites = plan->syncs;
  for (const auto &s : scans) {
    res.skipped_macro_sites += s.skipped_macro_sites;
    res.notes.insert(res.notes.end(), s.notes.begin(), s.notes.end());
  }
  std::sort(res.notes.begin(), res.notes.end());
  res.notes.erase(std::unique(res.notes.begin(), res.notes.end()), res.notes.end());
  for (const auto &[path, text] : plan->new_text) res.changes.push_back({path, original[path], text});
  res.manifest_path = o.build_dir + "/.vprof/manifest.json";
  if (o.dry_run) return res;

  if (auto s = commit(o.build_dir, *state, original, plan->new_text, &res.files_changed); !s)
    return Error{s.message()};
  std::ofstream m(res.manifest_path);
  m << plan->manifest.dump(2) << "\n";
  if (!m) return Error{res.manifest_path + ": cannot write the manifest (the sources were rewritten)"};
  return res;
}

Expected<RestoreResult> restore(const std::string &build_dir) {
  // A mistyped -p is not "nothing to restore": say so (the tree may still be
  // instrumented under the right directory).
  std::error_code ec;
  if (!std::filesystem::is_directory(build_dir, ec))
    return Error{build_dir + ": no such build directory"};
  auto state = read_state(build_dir);
  if (!state) return state.error();
  auto originals = read_originals(build_dir, *state);
  if (!originals) return originals.error();
  RestoreResult r;
  if (auto s = commit(build_dir, *state, *originals, {}, &r.files_restored); !s) return Error{s.message()};
  return r;
}

}  // namespace vprof::instr
