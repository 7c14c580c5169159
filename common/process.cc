#include "common/process.h"

#include <sys/prctl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

extern char **environ;

namespace vprof {
namespace {

// This process's environment with `add` put in.
std::vector<std::string> environment(const std::vector<std::pair<std::string, std::string>> &add) {
  std::map<std::string, std::string> set(add.begin(), add.end());
  std::vector<std::string> out;
  for (char **e = environ; e && *e; ++e) {
    std::string kv = *e;
    if (!set.count(kv.substr(0, kv.find('=')))) out.push_back(std::move(kv));
  }
  for (const auto &[k, v] : add) out.push_back(k + "=" + v);
  return out;
}

std::vector<char *> pointers(std::vector<std::string> &v) {
  std::vector<char *> p;
  for (auto &s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// "" when `path` is a file we may execute; otherwise why not.
std::string not_executable(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (access(path.c_str(), X_OK) != 0) return "not executable";
  return "";
}

}  // namespace

std::string find_program(const std::string &name, std::string &why) {
  if (name.find('/') != std::string::npos) {
    why = not_executable(name);
    return why.empty() ? name : "";
  }
  const char *path = getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  why = "command not found";
  for (size_t start = 0; start <= p.size();) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (not_executable(candidate).empty()) {
      why.clear();
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

Expected<pid_t> spawn(const std::vector<std::string> &argv, const SpawnOptions &o) {
  if (argv.empty()) return Error{"spawn: no program to run"};
  int out_fd = -1;
  if (!o.output.empty()) {
    out_fd = open(o.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) return Error{fmt::format("{}: cannot write: {}", o.output, std::strerror(errno))};
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  if (!o.dir.empty()) posix_spawn_file_actions_addchdir_np(&fa, o.dir.c_str());
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  } else if (o.stdout_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, o.stdout_fd, 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  if (o.inherit_fd >= 0) posix_spawn_file_actions_adddup2(&fa, o.inherit_fd, o.inherit_fd);  // clears close-on-exec
  short flags = 0;
  if (o.mask) {
    posix_spawnattr_setsigmask(&attr, o.mask);
    flags |= POSIX_SPAWN_SETSIGMASK;
  }
  if (o.new_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  if (flags) posix_spawnattr_setflags(&attr, flags);
  std::vector<std::string> args = argv, env = environment(o.env);
  std::vector<char *> a = pointers(args), e = pointers(env);
  pid_t pid = 0;
  int rc = o.search_path ? posix_spawnp(&pid, a[0], &fa, &attr, a.data(), e.data())
                         : posix_spawn(&pid, a[0], &fa, &attr, a.data(), e.data());
  if (rc == ENOEXEC && o.search_path) {  // a script without #!: run by sh, as execvp does
    std::string why, path = find_program(argv[0], why);
    std::vector<std::string> sh = {"/bin/sh", path.empty() ? argv[0] : path};
    sh.insert(sh.end(), argv.begin() + 1, argv.end());
    std::vector<char *> b = pointers(sh);
    rc = posix_spawn(&pid, b[0], &fa, &attr, b.data(), e.data());
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (out_fd >= 0) close(out_fd);
  if (rc != 0) {
    if (!o.dir.empty() && access(o.dir.c_str(), X_OK) != 0)
      return Error{fmt::format("{}: cannot start {} there: {}", o.dir, argv[0], std::strerror(errno))};
    return Error{fmt::format("{}: cannot execute: {}", argv[0], std::strerror(rc))};
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? kSignalExitBase + WTERMSIG(st) : 1;
}

Expected<int> run_program(const std::vector<std::string> &argv, const SpawnOptions &o) {
  auto pid = spawn(argv, o);
  if (!pid) return pid.error();
  return wait_exit(*pid);
}

namespace {

// The guardian of a user's command line (run_shell): a fork of this process
// that starts the shell in a process group of its own and waits for it. It
// stays in this process's group, so a terminal's signals reach it, and hands
// each on to the command's whole group; when this process dies, however it
// dies (SIGKILL included: PR_SET_PDEATHSIG), it kills that group and exits:
// no workload or build goes on writing into a session that is gone.
volatile sig_atomic_t g_group = 0;
volatile sig_atomic_t g_timed_out = 0;

void forward_to_group(int sig) {
  if (g_group > 0) killpg(g_group, sig);
}
void parent_died(int) {
  if (g_group > 0) killpg(g_group, SIGKILL);
  _exit(kSignalExitBase + SIGKILL);
}
void out_of_time(int) {
  // SIGTERM first, SIGKILL if it is still there 5 s later.
  if (g_group > 0) killpg(g_group, g_timed_out ? SIGKILL : SIGTERM);
  g_timed_out = 1;
  alarm(5);
}

[[noreturn]] void guard(const std::string &command, const SpawnOptions &o, pid_t parent, unsigned timeout_s,
                        int error_fd) {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = parent_died;
  sigaction(SIGUSR2, &sa, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGUSR2);
  if (getppid() != parent) _exit(kSignalExitBase + SIGKILL);  // it died before prctl
  sa.sa_handler = forward_to_group;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  sa.sa_handler = out_of_time;
  sigaction(SIGALRM, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  SpawnOptions so = o;
  so.new_group = true;
  so.mask = &none;
  auto pid = spawn({"/bin/sh", "-c", command}, so);
  if (!pid) {  // why, for run_shell to return as its error
    const std::string &why = pid.error().message;
    (void)!write(error_fd, why.data(), why.size());
    _exit(127);
  }
  close(error_fd);
  g_group = *pid;
  if (timeout_s) alarm(timeout_s);
  const int rc = wait_exit(*pid);
  _exit(g_timed_out ? kTimedOut : rc);
}

}  // namespace

Expected<int> run_shell(const std::string &command, const std::string &dir, const std::string &log,
                        const std::vector<std::pair<std::string, std::string>> &env, unsigned timeout_s) {
  SpawnOptions o;
  o.dir = dir;
  o.output = log;
  o.env = env;
  // spawn's error (an unwritable log, a missing directory) comes back through
  // `errors` as this call's.
  int errors[2];
  if (pipe2(errors, O_CLOEXEC) != 0) return Error{fmt::format("/bin/sh: cannot start: pipe: {}", std::strerror(errno))};
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t guardian = fork();
  if (guardian < 0) {
    const int err = errno;
    close(errors[0]);
    close(errors[1]);
    return Error{fmt::format("/bin/sh: cannot start: fork: {}", std::strerror(err))};
  }
  if (guardian == 0) {
    close(errors[0]);
    guard(command, o, parent, timeout_s, errors[1]);
  }
  close(errors[1]);
  const int rc = wait_exit(guardian);
  std::string why;
  char buf[512];
  for (ssize_t n; (n = read(errors[0], buf, sizeof buf)) != 0;)
    if (n > 0) why.append(buf, size_t(n));
    else if (errno != EINTR) break;
  close(errors[0]);
  if (!why.empty()) return Error{why};
  return rc;
}

std::string first_line_of(const std::vector<std::string> &argv) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return "";
  SpawnOptions o;
  o.search_path = true;
  o.stdout_fd = p[1];
  auto pid = spawn(argv, o);
  close(p[1]);
  std::string out;
  if (pid) {
    char buf[256];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) out.append(buf, n);
    wait_exit(*pid);
  }
  close(p[0]);
  out = out.substr(0, out.find('\n'));
  if (!out.empty() && out.back() == '\r') out.pop_back();
  return out;
}

}  // namespace vprof
