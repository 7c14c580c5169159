// Runs tests/runtime/workload.cc with the recorder on (VPROF_TRACE_DIR=dir,
// plus `env`); returns its exit status as a shell would.
#ifndef VPROF_TESTS_RUNTIME_RUN_WORKLOAD_H
#define VPROF_TESTS_RUNTIME_RUN_WORKLOAD_H

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

inline int run_workload(const std::string &dir, std::vector<std::string> args,
                        const std::map<std::string, std::string> &env = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("VPROF_TRACE_DIR", dir.c_str(), 1);
    for (auto &[k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char *> argv{const_cast<char *>(WORKLOAD_PATH)};
    for (auto &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(WORKLOAD_PATH, argv.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
