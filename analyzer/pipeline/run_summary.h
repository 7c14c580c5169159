// A run's summary: what an analysis keeps of a trace, written once, so that
// a later analysis takes the run from it instead of reading the trace again
// (docs/iterate.md, "Each run analysed once"): the walk's output (the
// canonical trie, each interval's row and leaf cells, blame, the walk's and
// the merge's counters) and what the report says of the trace (its
// overhead, labels, threads' processes, process files, damage, names). The
// columns, latency and tree are not in it: loading makes them as a trace's
// are (derive_run), for the loading analysis's root, so the analysis is the
// trace's by construction. 8 bytes a cell and 32 a row in version 1 (LevelDB's
// db_bench runs of 20 000 intervals, docs/iterate.md, made summaries of
// 5.8-18 MB against traces of 18-60 MB); version 2 writes the cells as varints.
//
// Binary, little-endian as written by this machine, versioned; a file this
// reader does not know, or one cut short, is an Error naming it.
#ifndef VPROF_ANALYZER_PIPELINE_RUN_SUMMARY_H
#define VPROF_ANALYZER_PIPELINE_RUN_SUMMARY_H

#include <cstdint>
#include <memory>
#include <string>

#include "common/expected.h"

#include "analyzer/pipeline/analyze.h"

namespace vprof::analyzer {

// TRACE_DIR/run.summary.
inline constexpr char kRunSummaryFile[] = "run.summary";

// Written whole or not at all. Needs the run before reduce_run (its cells).
Status save_run_summary(const RunAnalysis &r, const std::string &path);
// In another version's form: 1, cells of 8 bytes (vprof before 2026-12-07),
// which load_run_summary still reads; 2, cells as varints. For tests.
Status save_run_summary_as(const RunAnalysis &r, const std::string &path, uint32_t version);

// The run as its trace's analysis made it, its columns and tree for opt's
// root; `dir` becomes its directory, `run` its index.
Expected<std::unique_ptr<RunAnalysis>> load_run_summary(const std::string &path, const std::string &dir, int run,
                                                        const AnalyzeOptions &opt);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_PIPELINE_RUN_SUMMARY_H
