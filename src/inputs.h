// What several commands read: the inputs of `diff` and `gate` (a trace
// directory or a saved profile); trace directories are analyzed by the
// analyzer's pipeline (analyzer/pipeline/trace_dirs.h).
#ifndef VPROF_SRC_INPUTS_H
#define VPROF_SRC_INPUTS_H

#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"

#include "analyzer/names/names.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/pipeline/trace_dirs.h"
#include "analyzer/profile/profile.h"

namespace vprof::cli {

using analyzer::analyze_dirs;
using analyzer::regular_input;

// A line said on the way (analyzer::Say), printed as "vprof: LINE" on stderr.
void say_on_stderr(const std::string &line);

// A saved profile, or a trace directory analyzed on the spot (with `root`).
Expected<analyzer::Profile> load_input(const std::string &path, const std::string &root,
                                       unsigned threads);

}  // namespace vprof::cli

#endif  // VPROF_SRC_INPUTS_H
