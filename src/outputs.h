// The files a command writes (reports, profiles, JUnit), checked before any
// work: said at once, not after minutes of analysis, and never an input.
#ifndef VPROF_SRC_OUTPUTS_H
#define VPROF_SRC_OUTPUTS_H

#include <string>
#include <vector>

#include "common/expected.h"

namespace vprof::cli {

struct OutputArg {
  std::string flag;  // "--json"
  std::string path;  // "-": stdout, not checked here
};

// Each output must be writable (an existing file we may write, or a new one
// in a directory that exists and we may write in), not a directory, not an
// input (compared by identity, so links and other spellings count), not
// inside an input directory (a trace directory: its process files, traces
// and manifest are all inputs), and not another output's file. inputs are
// files or directories; ones that do not exist are skipped (their own check
// says what is wrong with them).
Status check_outputs(const std::vector<OutputArg> &outs, const std::vector<std::string> &inputs);

}  // namespace vprof::cli

#endif  // VPROF_SRC_OUTPUTS_H
