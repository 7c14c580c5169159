// The session configuration `vprof init` writes and `vprof iterate` reads
// (vprof.json in the target tree). Relative paths are relative to the file.
//
//   { "schema_version": 1,
//     "root": "minidb::Engine::run_transaction",
//     "build_dir": "build",                        // holds compile_commands.json
//     "source_root": "src",                        // optional: edit only below it
//     "build_command": "cmake --build build",
//     "run_command": "./build/minidb_bench --seconds 3",
//     "sync_packs": ["stdcxx"], "sync_everywhere": true,
//     "k": 3, "d": 0.05, "m": 0.5, "exponent": 2, "max_iterations": 30,
//     "sample": 0, "runs": 1, "session_dir": ".vprof-session",
//     "prebuild_depth": 6, "prebuild_functions": 60, "prebuild_min_size": 24,
//     "lookahead_budget": 2, "again": 1, "keep_traces": false }
#ifndef VPROF_ITERATE_CONFIG_H
#define VPROF_ITERATE_CONFIG_H

#include <string>
#include <vector>

#include "analyzer/factors/defaults.h"
#include "common/expected.h"
#include "common/sample.h"

namespace vprof::iterate {

struct Config {
  std::string path;  // the file itself (absolute)
  std::string dir;   // its directory: commands run here
  std::string root;
  std::string build_dir = "build";
  // Edit only files below this directory, the tree's journal in it
  // (instrument's --source-root); "": the deepest directory holding every
  // compile-db source. An out-of-source CMake build whose compile db lists
  // generated sources (MariaDB's parser) has that directory above both trees.
  std::string source_root;
  std::string build_command;
  std::string run_command;
  std::vector<std::string> sync_packs;
  bool sync_everywhere = true;  // wrap sync calls in every file, not only the selected functions'
  int k = analyzer::kDefaultK;
  double d = analyzer::kDefaultD;
  double m = 0.5;
  double exponent = analyzer::kDefaultE;
  // A session ends at its fixed point; this only bounds one that does not.
  // 6 ended real sessions one level after the culprit first showed (a web
  // server needed 9, PostgreSQL 19, MariaDB 30).
  int max_iterations = 30;
  // Windowed recording (docs/run.md): each run records in windows covering
  // about this percent of the time; 0 (or 100): in full.
  int sample = 0;
  // Each iteration runs the workload this many times, into its one trace
  // directory, one analysis: a sampled session keeps a full one's interval
  // count with runs = 100 / sample (vprof init's default under --sample).
  int runs = 1;
  std::string session_dir = ".vprof-session";
  // Build once (docs/iterate.md): a build holds, besides the iteration's
  // set, what its functions' calls may reach this many calls deep, up to
  // this many functions in all; a run turns on only its set's probes, and a
  // level inside the build needs no rebuild. Depth 0: each iteration builds
  // its set alone.
  int prebuild_depth = 6;
  int prebuild_functions = 60;
  int prebuild_min_size = 24;  // tiny functions (and kernels over them) are not built ahead: prebuild.h
  // More than one level a run (prebuild.h's next_level): a run turns on,
  // beside its set, the level below the functions it breaks down first that
  // its build holds, while the run before spent at most this percent of its
  // intervals' time in probes (its records times half a probe pair). 0: one
  // level a run.
  double lookahead_budget = 2;
  // How runs differ (docs/iterate.md, "A second run of the last level"): at
  // a fixed point where a selected factor rests on one run, the last
  // iteration's set runs again, up to this many times in a session, so that
  // its interval has the spread between runs (no build: the tree holds it).
  // The repeated run grafts nothing into the tree (RunAnalysis::repeat), so
  // the answer is the run before's. 0: never.
  int again = 1;
  // false (the default): once a run's summary is written
  // (analyzer/pipeline/run_summary.h: the session takes the run from it, a
  // resumed session and `vprof analyze` too), its trace's thread and process
  // files are deleted, so that a session's disk holds the last run's trace
  // and the others' summaries, not every run's trace (MariaDB: 1 GiB a
  // process a run). true keeps every trace (--perfetto of an earlier run).
  bool keep_traces = false;

  std::string abs(const std::string &p) const;  // p resolved against dir
  std::string abs_source_root() const { return source_root.empty() ? "" : abs(source_root); }
};

// Under --sample P a run analyses about P% of its intervals: `vprof init`
// makes each iteration run the workload 100/P times (rounded up) unless
// --runs says otherwise, so that a sampled session's iterations see as many
// intervals as in full. 1 in full.
inline int runs_for_sample(int sample) { return windowed(sample) ? (100 + sample - 1) / sample : 1; }
// The most runs an iteration takes (vprof.json's `runs`, init --runs).
inline constexpr int kMaxRuns = 1000;

// Errors name the file and the field: "vprof.json: field 'k': must be >= 1".
Expected<Config> load_config(const std::string &path);
Status save_config(const Config &c, const std::string &path);

// The sync packs in annotations_dir, by name ("pthreads" for pthreads.json),
// sorted.
std::vector<std::string> sync_pack_names(const std::string &annotations_dir);
// The first of `specs` that is neither a pack in annotations_dir nor (with a
// '/' or ".json", as the instrumenter's loader reads it: instrumenter/
// sync_pack.h) an existing file; "" when all are.
std::string unknown_sync_pack(const std::vector<std::string> &specs,
                              const std::string &annotations_dir);

}  // namespace vprof::iterate

#endif
