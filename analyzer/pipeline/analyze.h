// The whole pipeline over one or more runs' traces:
//   merge -> critical path -> columns -> variance tree (-> merge runs) ->
//   heights -> factors, into one Analysis that every reporter reads.
// Problems in the data are counted (MergeCounters, PathCounters: their lists are
// analyzer/merge/merge_counters.def and analyzer/critpath/path_counters.def) and reported, never fatal;
// only bad options (an unknown --root) are an Error.
#ifndef VPROF_ANALYZER_PIPELINE_ANALYZE_H
#define VPROF_ANALYZER_PIPELINE_ANALYZE_H

#include <memory>
#include <string>
#include <vector>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/factors/factors.h"
#include "analyzer/factors/causes.h"
#include "analyzer/merge/timeline.h"
#include "analyzer/names/names.h"
#include "analyzer/read/process_files.h"
#include "analyzer/read/read_counters.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/read/trace_stream.h"
#include "analyzer/tree/columns.h"
#include "analyzer/tree/by_client.h"
#include "analyzer/tree/by_type.h"
#include "analyzer/tree/merge_runs.h"
#include "analyzer/tree/stats.h"
#include "analyzer/tree/variance_tree.h"

namespace vprof::analyzer {

struct AnalyzeOptions {
  std::string root;           // root function's qualified name; empty: the interval latency
  FactorOptions factors;      // (factors.workers is set from workers/threads here)
  unsigned threads = 1;
  // One pool for every stage of every run (its size overrides threads), so
  // that its threads are started once and already settled on their cores:
  // a thread started per stage can share its parent's core for milliseconds.
  // Null: each stage starts `threads` - 1 threads of its own.
  Workers *workers = nullptr;
  const CallGraph *callgraph = nullptr;
  size_t epoch_records = 0;  // merge epoch (critpath/critical_path.h)
  // The per-interval node totals take 12 bytes a cell, one for each node an
  // interval's critical path reaches (tree/columns.h); above this the run
  // fails with an Error that says so, instead of dying in the allocator.
  uint64_t max_cell_bytes = uint64_t{4} << 30;
  // A directory with a run summary (run_summary.h) is taken from it, not
  // read (analyze_dirs): an iterate session's runs.
  bool run_summaries = false;
};

// Everything one run contributes; kept so reporters can show the raw matrix.
struct RunAnalysis {
  std::string dir;
  int run = 0;  // its index among the runs analysed together (the tree's nodes carry it)
  // The same build and probes as an earlier run: it measures the spread
  // between runs (a factor's interval) and nothing of the merged tree. What
  // differs between two runs of one instrumentation (a wait that met a
  // holder in one of them, the holders each names) is chance, and grafting
  // it turned the contended test's top cause from rebuild_index to busy.
  bool repeat = false;
  std::vector<std::string> programs;  // its processes' names (runs of one program are merged)
  StackTrie trie;
  MergeCounters merge;
  MergeStats merge_stats;
  CriticalPaths paths;
  Columns columns;
  VarNode tree;
  LatencyStats latency;
  trace::Overhead overhead;
  uint64_t records = 0;               // records read (with overhead: what its probes cost)
  std::vector<std::string> labels;    // interval type/client labels
  std::unordered_map<uint32_t, uint32_t> tid_pid;  // every thread's process
  Names names;
  ReadCounters read;               // the reader's data-quality counters (read_counters.def)
  trace::ProcessFiles processes;  // refused thread files, preemption bits
  std::vector<std::string> first_diagnostics;  // a few, for the report
  size_t files = 0;                     // trace files in the directory
  std::vector<trace::FileLoss> losses;  // what damage cost each damaged file
  bool summarized = false;  // its summary is on disk (read from it, or written: keep_runs)
};

// What damage to a run's trace files cost it, summed over files: the
// report's first line. Files whose only problem is a clamped time are not
// counted as damaged (their records are all there).
struct DataLost {
  size_t files = 0, damaged = 0, unreadable = 0;
  uint64_t bytes = 0, missing_bytes = 0, records = 0, clamped = 0;
  uint64_t incomplete_intervals = 0;  // begun and never ended, or the reverse
  bool any() const { return damaged > 0; }
  DataLost &operator+=(const DataLost &o);
};
DataLost data_lost(const RunAnalysis &r);

// f(Counter) for every data-quality counter of the run, from their lists:
// the reader's, the walk's, the merge's (read_counters.def, path_counters.def,
// merge_counters.def). The JSON's `data_quality`, the terminal's line, the
// exit status of `analyze --fail-on` and the tests' comparer all go through
// this one visit.
template <class F>
void for_each_quality(const RunAnalysis &r, F &&f) {
  for_each_counter(r.read, f);
  for_each_counter(r.paths.counters, f);
  for_each_counter(r.merge, f);
}

// Windowed recording: the intervals the run left out, recorded (begun in a
// window's drain) or not (begun between windows, counted in the headers).
inline uint64_t intervals_left_out(const RunAnalysis &r) {
  return r.merge.intervals_left_out + r.read.off_intervals;
}

// The worst level of a nonzero counter of the run, or of damage to its files
// (DataLost: loss); Level::info when no counter of level warning or loss
// counted anything ("ok" in the report).
Level worst_level(const RunAnalysis &r);

struct NamedBlame {
  std::string wait_site;       // the wait call site's label on the critical path
  uint32_t waker_tid = 0;
  uint32_t waker_pid = 0;      // the waker's process (another backend's, for PostgreSQL); 0 unknown
  std::string waker_function;  // innermost instrumented function of the waker, or "(outside)"
  uint64_t waker_interval = 0;
  double ns = 0;
};

struct Analysis {
  std::vector<std::unique_ptr<RunAnalysis>> runs;  // runs[0] is the base run
  VarNode tree;                   // merged over runs
  std::vector<Factor> factors;    // selected first (rank > 0)
  Causes causes;                  // places with the waits they held up (causes.h)
  std::vector<NamedBlame> blame;  // run 0's
  std::vector<Graft> disagreements;  // grafted nodes whose runs disagree (runs_disagree)
  TypeSplit types;                // run 0's types; their trees merged over runs
  Fairness clients;               // run 0's
  std::string root_label;
  int k = kDefaultK;
  double d = kDefaultD, e = kDefaultE;
  // What a factor's or cause's value had to reach: d less the machine's part
  // (factors.h, selection_threshold); d when nothing was preempted.
  double d_selected = kDefaultD;
  bool paper = false;  // factors ranked by the paper's terms, not by shares
  int height_root = 0;
};

// Analyzes one run (names: from its manifest; may be empty), streaming it
// from its trace files: memory holds the merge's window, not the trace.
Expected<std::unique_ptr<RunAnalysis>> analyze_run(trace::TraceStream &stream, Names names,
                                                   const AnalyzeOptions &opt, int run);
// The same for a trace already in memory.
Expected<std::unique_ptr<RunAnalysis>> analyze_run(const trace::Trace &trace, Names names,
                                                   const AnalyzeOptions &opt, int run);

// Summed over every run (several trace directories: refinement runs).
DataLost data_lost(const Analysis &a);
Level worst_level(const Analysis &a);  // over every run

// A run loaded from its summary (run_summary.h), which holds its walk: its
// columns, latency and tree, made as a trace's are, for opt's root.
Status derive_run(RunAnalysis &r, const AnalyzeOptions &opt);

// What combining a run again needs of it, and no more: the per-interval leaf
// cells its critical paths were read into are dropped (the columns hold
// their sums up the tree). A session keeps each run so reduced and combines
// it again at every later iteration (trace_dirs.h, AnalyzedRuns).
void reduce_run(RunAnalysis &r);

// Combines runs (at least one) into trees, factors and blame.
std::unique_ptr<Analysis> combine(std::vector<std::unique_ptr<RunAnalysis>> runs,
                                  const AnalyzeOptions &opt);

// Drops an analysis in a process that goes on to make more (an iterate
// session, the gate's run after run) and gives what it freed back to the
// system: kept by the allocator for reuse (keep_freed_memory, util/prefault.h),
// it stayed resident under the next analysis' peak (MariaDB's session 6: OOM
// at 24 GB where one analysis takes 10.7 GB).
void drop(std::unique_ptr<Analysis> &a);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_PIPELINE_ANALYZE_H
