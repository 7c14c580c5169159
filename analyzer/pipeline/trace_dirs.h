// Trace directories analyzed, for every command that analyzes one (`vprof
// analyze`, `diff` and `gate` on a directory, an iterate session): one rule
// for where a run's names come from and for what damage costs.
#ifndef VPROF_ANALYZER_PIPELINE_TRACE_DIRS_H
#define VPROF_ANALYZER_PIPELINE_TRACE_DIRS_H

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"

#include "analyzer/names/names.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_dir.h"

namespace vprof::analyzer {

// One line said on the way, for the user ("warning: ..." or a note): the
// CLI prints it on stderr, a session logs it.
using Say = std::function<void(const std::string &line)>;

// An input given by name must be a regular file: a FIFO would block the read.
Status regular_input(const std::string &path);

// The manifest of a run: an explicit file, else DIR/manifest.json, else the
// one the traced program registered (its instrumented code names it in the
// process files) if it is still that instrumentation's, else none (names
// fall back to fn#ID / site#ID). A manifest of another instrumentation than
// the program's is refused: it would put wrong names on every factor.
Expected<Names> names_for(const trace::TraceDir &dir, const std::string &explicit_file, const Say &say);

// Whether DIR is a run's summary alone: a session with keep_traces false
// deleted its recorded files once run.summary was written.
bool summary_only(const std::string &dir);

// Runs analysed before, by the directory they were given as, each reduced
// (reduce_run): an iterate session analyses each iteration's run once and
// combines it with these at every later iteration, where it read every
// run's trace again (docs/iterate.md, "Each run analysed once").
using AnalyzedRuns = std::map<std::string, std::unique_ptr<RunAnalysis>>;

// Analyzes trace directories (several: refinement runs, the first the base),
// streamed: memory holds the merge's window, not the trace. Damage is said,
// never an error unless nothing of a directory can be read. Runs of
// different programs are refused. `manifest` names the first run. With
// `analyzed`, a directory found there at the same index is taken from it,
// not read again (the same options are the caller's to keep). A directory
// whose thread files are gone is taken from its run.summary (run_summary.h),
// whatever opt.run_summaries says (RunAnalysis::summarized then tells).
Expected<std::unique_ptr<Analysis>> analyze_dirs(const std::vector<std::string> &dirs, const AnalyzeOptions &opt,
                                                 const std::string &manifest, const Say &say,
                                                 AnalyzedRuns *analyzed = nullptr);

// Takes the runs of an analysis whose reports are written back into
// `analyzed`, reduced, all but the one in `except` (a run still being
// recorded into), and drops the rest of it (drop). With `summaries`, a run
// not summarized yet gets DIR/run.summary first (run_summary.h); a
// directory that refuses it is said and left without one.
void keep_runs(std::unique_ptr<Analysis> &a, AnalyzedRuns &analyzed, const std::string &except,
               const Say &say = nullptr, bool summaries = false);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_PIPELINE_TRACE_DIRS_H
