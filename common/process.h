// The one way vprof starts another program: posix_spawn with an argv vector,
// no shell unless the text to run is a user's shell command line (`vprof
// iterate`'s build and workload, `vprof gate --base-cmd/--head-cmd`).
// The two forks that are not this are on purpose: `vprof` replacing itself
// with vprof-clang (src/main.cc, an exec) and `vprof iterate`'s supervisor
// (src/cmd_iterate.cc, which runs the session in a forked copy of itself).
#ifndef VPROF_COMMON_PROCESS_H
#define VPROF_COMMON_PROCESS_H

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"

namespace vprof {

struct SpawnOptions {
  std::string dir;     // where the program starts; "" for this process's directory
  std::string output;  // stdout and stderr go to this file (created or truncated); "" to inherit them
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) the environment
  bool search_path = false;       // argv[0] is looked up in PATH when it has no '/'
  const sigset_t *mask = nullptr;  // the program's signal mask; nullptr for this thread's
  int inherit_fd = -1;            // a close-on-exec descriptor the program keeps anyway
  int stdout_fd = -1;             // stdout to this descriptor (output must be "")
  bool new_group = false;         // the program leads a process group of its own
};

// The started program's pid, or an Error naming argv[0] and why it could not start.
Expected<pid_t> spawn(const std::vector<std::string> &argv, const SpawnOptions &o = {});

// The file execvp runs for `name` (looked up in PATH when it has no '/'), or
// "" with `why` set ("command not found", "not executable", ...).
std::string find_program(const std::string &name, std::string &why);

// A program a signal ended exits, as the shell reports it, as this + the signal.
inline constexpr int kSignalExitBase = 128;

// Waits for pid: its exit status, or kSignalExitBase + the signal that killed it.
int wait_exit(pid_t pid);

// spawn, then wait_exit.
Expected<int> run_program(const std::vector<std::string> &argv, const SpawnOptions &o = {});

// A user's command line run by /bin/sh in `dir`, stdout and stderr to `log`:
// its exit status. It runs in a process group of its own under a guardian
// (process.cc) that hands it the signals this process's group gets, and
// kills the whole group when this process dies, or `timeout_s` seconds after
// it started (0: never; SIGTERM, then SIGKILL 5 s later): kTimedOut then.
inline constexpr int kTimedOut = 124;  // as timeout(1) says it
Expected<int> run_shell(const std::string &command, const std::string &dir, const std::string &log,
                        const std::vector<std::pair<std::string, std::string>> &env, unsigned timeout_s = 0);

// The first line the program prints on stdout (stderr discarded), without its
// newline; "" when it prints nothing or cannot start.
std::string first_line_of(const std::vector<std::string> &argv);

}  // namespace vprof

#endif  // VPROF_COMMON_PROCESS_H
