#include "analyzer/util/shell.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace vprof {

Expected<int> run_shell(const std::string &command, const std::string &dir, const std::string &log,
                        const std::vector<std::pair<std::string, std::string>> &env) {
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{fmt::format("{}: cannot write: {}", log, std::strerror(errno))};
  pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    return Error{fmt::format("fork failed: {}", std::strerror(errno))};
  }
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    if (chdir(dir.c_str()) != 0) _exit(126);
    for (const auto &[k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), (char *)nullptr);
    _exit(127);
  }
  close(fd);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace vprof
