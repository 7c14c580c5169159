// Trace directories analyzed, for every command that analyzes one (`vprof
// analyze`, `diff` and `gate` on a directory, an iterate session): one rule
// for where a run's names come from and for what damage costs.
#ifndef VPROF_ANALYZER_PIPELINE_TRACE_DIRS_H
#define VPROF_ANALYZER_PIPELINE_TRACE_DIRS_H

#include <functional>
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

// Analyzes trace directories (several: refinement runs, the first the base),
// streamed: memory holds the merge's window, not the trace. Damage is said,
// never an error unless nothing of a directory can be read. Runs of
// different programs are refused. `manifest` names the first run.
Expected<std::unique_ptr<Analysis>> analyze_dirs(const std::vector<std::string> &dirs, const AnalyzeOptions &opt,
                                                 const std::string &manifest, const Say &say);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_PIPELINE_TRACE_DIRS_H
