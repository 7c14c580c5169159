// What several commands read: a trace directory's manifest, the analysis of
// trace directories, and the inputs of `diff` and `gate` (a trace directory
// or a saved profile).
#ifndef VPROF_SRC_INPUTS_H
#define VPROF_SRC_INPUTS_H

#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"

#include "analyzer/names/names.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/profile/profile.h"

namespace vprof::cli {

// An input given by name must be a regular file: a FIFO would block the read.
Status regular_input(const std::string &path);

// The manifest of a run (docs/analyze.md, --manifest).
Expected<analyzer::Names> names_for(const std::string &dir, const std::string &explicit_file);

// Analyzes trace directories (several: refinement runs, the first the base),
// streamed; damage is a warning on stderr, never an error unless nothing of
// a directory can be read.
Expected<std::unique_ptr<analyzer::Analysis>> analyze_dirs(const std::vector<std::string> &dirs,
                                                           const analyzer::AnalyzeOptions &opt,
                                                           const std::string &manifest);

// A saved profile, or a trace directory analyzed on the spot (with `root`).
Expected<analyzer::Profile> load_input(const std::string &path, const std::string &root,
                                       unsigned threads);

}  // namespace vprof::cli

#endif  // VPROF_SRC_INPUTS_H
