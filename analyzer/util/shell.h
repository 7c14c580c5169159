// Runs a user's command line through /bin/sh: `vprof iterate`'s build and
// workload commands, `vprof gate --base-cmd/--head-cmd`'s runs. The command
// is the user's own shell text (pipes, `make run`), so a shell is what runs it.
#ifndef VPROF_ANALYZER_UTIL_SHELL_H
#define VPROF_ANALYZER_UTIL_SHELL_H

#include <string>
#include <utility>
#include <vector>

#include "include/vprof/expected.h"

namespace vprof {

// Runs `command` with /bin/sh in `dir`, stdout and stderr to `log` (created
// or truncated), with `env` added to the environment. The exit status
// (128 + the signal when killed), or an Error when it could not start.
Expected<int> run_shell(const std::string &command, const std::string &dir, const std::string &log,
                        const std::vector<std::pair<std::string, std::string>> &env);

}  // namespace vprof

#endif  // VPROF_ANALYZER_UTIL_SHELL_H
