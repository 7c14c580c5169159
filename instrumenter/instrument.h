// vprof's instrumenter, the library behind `vprof instrument` and `vprof restore`.
//
//   InstrumentOptions o;
//   o.build_dir = "build";                      // holds compile_commands.json
//   o.functions = {"leveldb::DBImpl::Write"};
//   o.sync_packs = {"leveldb"};
//   auto r = instrument(o);                     // Error: nothing was changed
//
// The tree ends up holding exactly this run's edits: a tree instrumented
// before is parsed from its saved originals and rewritten from them. The
// journal that undoes it is SOURCE_ROOT/.vprof (journal.h, tree.h); the
// manifest goes to BUILD_DIR/.vprof/manifest.json. Both take the tree's lock.
#ifndef VPROF_INSTRUMENTER_INSTRUMENT_H
#define VPROF_INSTRUMENTER_INSTRUMENT_H

#include <functional>
#include <string>
#include <vector>

#include "common/expected.h"

namespace vprof::instr {

struct InstrumentOptions {
  std::string build_dir;
  std::vector<std::string> functions;   // --function patterns (names.h)
  // Instrumented when they can be: one with no definition in the tree, or
  // whose body vprof cannot instrument (a macro's), is left out (the
  // result's left_out), not an error. An iterate session's build ahead.
  std::vector<std::string> optional_functions;
  std::vector<std::string> sync_packs;  // pack names or paths
  std::string annotations_dir;          // where pack names are looked up
  std::string source_root;              // "" = the deepest directory holding every source
  std::vector<std::string> excluded_dirs;  // never edited (vprof's own include dir)
  bool all_files = false;  // parse every translation unit (sync wrappers everywhere)
  bool dry_run = false;    // compute the changes, write nothing
  // An earlier manifest of this tree (`--keep-ids`; an iterate session's
  // previous iteration): its functions and call sites keep their ids, so a
  // file whose own selection did not change keeps its bytes and the build
  // does not recompile it or its includers (edit_plan.h). "": ids from 1.
  std::string keep_ids_from;
  // Probes a run may leave dormant (VPROF_DORMANT; docs/iterate.md, "Build
  // once"): each tests its id's bit first, about 1 ns a probe more.
  bool dormant = false;
  // With dormant: the analysis root (a --function pattern or a qualified
  // name). Its body tests only its bit; every other body written twice may
  // run its original copy between windows too (edit_plan.cc, two_versions).
  std::string root;
  // With all_files: reuse the scans of units that found no selected
  // function when nothing they read has changed (scan_cache.h).
  bool scan_cache = true;
  unsigned jobs = 0;       // parallel parses; 0 = one per core
  // Called under a lock from the parsing threads.
  std::function<void(size_t done, size_t total, const std::string &file)> progress;
  // Asked before each unit's parse: true stops the instrument with the error
  // "interrupted" and nothing written (a session's Ctrl-C or SIGTERM during
  // a parse of the whole tree: 4 min on MariaDB).
  std::function<bool()> cancelled;
};

struct FileChange {
  std::string path, before, after;
};

// A selected function vprof cannot instrument (its body comes from a macro,
// or it is defined outside the source tree), found by a dry run: why, and
// the functions defined in the tree that its body calls directly or may
// reach through a pointer or a virtual call. Instrumenting those times
// what it does (Apache's ap_run_handler and its handlers).
struct OpaqueFunction {
  std::string name;
  std::string pattern;  // the --function text it matched
  std::string where, why;  // file:line; "its body's '{' comes from the macro M"
  std::vector<std::string> reaches;
};

// "file:line: f: why; cannot instrument it; instrument what it calls instead: a, b"
std::string fmt_opaque(const OpaqueFunction &f);

struct InstrumentResult {
  size_t functions = 0, call_sites = 0, sync_sites = 0;
  size_t files_parsed = 0, files_in_db = 0, files_changed = 0;
  // Of files_parsed, the units whose scan came from the scan cache
  // (scan_cache.h) instead of clang: sync packs everywhere only.
  size_t files_from_cache = 0;
  // Files with instrumented functions, and files with sync sites alone (and
  // the sync sites in those): what "in N files" means differs (edit_plan.h).
  size_t function_files = 0, sync_only_files = 0, syncs_in_sync_only_files = 0;
  size_t skipped_macro_sites = 0, duplicates_dropped = 0;
  std::vector<std::string> dropped_flags;
  std::vector<std::string> outside;  // CompileDb::outside
  std::vector<std::string> notes;  // sites left alone and why
  // Dry runs only, where a real run fails on the first of them: selected
  // functions vprof cannot instrument (with what they reach), and the
  // patterns with no definition in the tree (the error a real run gives).
  std::vector<OpaqueFunction> opaque;
  std::vector<std::string> undefined;
  // Dry runs: the --function texts with no definition (`undefined`'s), and
  // those defined whose bodies hold no call to time; with `opaque`, what a
  // dry run of many functions says of each (iterate's probes of a pointer
  // call's targets: one parse of the tree for all of them).
  std::vector<std::string> undefined_patterns, without_calls;
  // optional_functions left out, "name: why".
  std::vector<std::string> left_out;
  std::vector<FileChange> changes;
  std::string manifest_path;
};

Expected<InstrumentResult> instrument(const InstrumentOptions &options);

struct RestoreOptions {
  std::string build_dir = ".";  // a build directory, or any directory of a source tree whose build dir is gone
  std::string source_root;      // "" = the compile db's
  bool force = false;           // restore what can be; leave and report files changed by hand
  // Drop the journal of files that already hold their originals though vprof
  // did not put them back (CommitOptions::keep_returned); without it they stay.
  bool forget = false;
};

struct RestoreResult {
  size_t files_restored = 0;
  bool found_nothing = false;           // no journal and no file with vprof's marker
  std::vector<std::string> left_alone;  // "path: why" (force, or no original to be found)
  std::vector<std::string> returned;    // held their originals already: kept in the journal
  std::vector<std::string> gone;        // deleted since vprof wrote them: not made again
  std::vector<std::string> not_ours;    // "path: why": vprof's marker, but not a text vprof wrote there
  std::string journal_dir;
};

// Puts every file vprof rewrote back byte for byte: those the journal lists,
// and those below the source root that carry vprof's marker and hold exactly
// a text vprof wrote at that path (journal.h's written log): never a copy of
// an instrumented file, nor one edited since.
Expected<RestoreResult> restore(const RestoreOptions &options);

}  // namespace vprof::instr

#endif
