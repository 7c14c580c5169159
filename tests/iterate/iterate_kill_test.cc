// Fault injection for `vprof iterate`: the session killed (SIGKILL, SIGINT,
// SIGTERM) at random moments, in any of its steps (instrument, build, run,
// analyze, restore). Afterwards the target's sources are pristine, or `vprof
// restore` makes them so, byte for byte. VPROF_FAULT_ROUNDS sets the count
// (scripts/fault-injection.sh runs more).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "iterate/config.h"
#include "tests/iterate/planted_target.h"

namespace fs = std::filesystem;

namespace {

using vprof::testing::slurp;

int sh(const std::string &cmd) {
  int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

// `vprof iterate --auto --fresh` on the config at `config`, started in
// `dir` with stdout discarded and stderr to `log` (appended when `append`).
pid_t start_iterate(const fs::path &dir, const std::string &config, const fs::path &log, bool append) {
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(127);
    freopen("/dev/null", "w", stdout);
    freopen(log.c_str(), append ? "a" : "w", stderr);
    execl(VPROF_CLANG_BIN, VPROF_CLANG_BIN, "iterate", "--auto", "--fresh", "--config", config.c_str(),
          static_cast<char *>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST(IterateKill, KilledAtRandomMomentsTheTreeComesBack) {
  int rounds = getenv("VPROF_FAULT_ROUNDS") ? atoi(getenv("VPROF_FAULT_ROUNDS")) : 4;
  unsigned seed = getenv("VPROF_FAULT_SEED") ? static_cast<unsigned>(atoi(getenv("VPROF_FAULT_SEED")))
                                             : std::random_device{}();
  std::mt19937 rng(seed);
  vprof::iterate::Config c = vprof::testing::make_planted_target("kill", "stage3", 5);
  const fs::path dir = c.dir;
  ASSERT_TRUE(vprof::iterate::save_config(c, c.path).ok());
  const std::string pristine = slurp((dir / "planted.cc").string());
  const int sigs[] = {SIGKILL, SIGINT, SIGTERM};
  int killed = 0;
  for (int round = 0; round < rounds; ++round) {
    int sig = sigs[round % 3];
    int delay_ms = std::uniform_int_distribution<int>(0, 6000)(rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round) + " signal " +
                 std::to_string(sig) + " after " + std::to_string(delay_ms) + " ms");
    pid_t pid = start_iterate(dir, c.path, dir / "iterate.log", true);
    int status = 0;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms);
    bool exited = false;
    while (!exited && std::chrono::steady_clock::now() < end) {
      exited = waitpid(pid, &status, WNOHANG) == pid;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!exited) {
      ++killed;
      kill(pid, sig);
      waitpid(pid, &status, 0);
    }
    // Killed outright, the session leaves a journal (or only its lock): restore
    // finishes the job, or says there was nothing to restore.
    if (slurp((dir / "planted.cc").string()) != pristine || fs::exists(dir / ".vprof")) {
      int rc = sh(std::string(VPROF_CLANG_BIN) + " restore -p " + (dir / "b").string() + " >> " +
                  (dir / "iterate.log").string() + " 2>&1");
      EXPECT_TRUE(rc == 0 || (rc == 2 && slurp((dir / "planted.cc").string()) == pristine)) << rc;
    }
    ASSERT_EQ(slurp((dir / "planted.cc").string()), pristine) << slurp((dir / "iterate.log").string());
    ASSERT_FALSE(fs::exists(dir / ".vprof")) << "vprof's journal is gone once the tree is restored";
    if (sig == SIGINT && !exited) {
      EXPECT_TRUE(WIFEXITED(status)) << "SIGINT: the session stops itself and restores";
    }
    // Stopped by a signal, it exits 128 + that signal (docs/cli.md): 143 for
    // SIGTERM, not 130 as if it were Ctrl-C.
    if ((sig == SIGINT || sig == SIGTERM) && !exited && WIFEXITED(status) && WEXITSTATUS(status) > 128)
      EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  }
  std::printf("iterate fault injection: %d rounds, %d killed mid-session (seed %u)\n", rounds, killed, seed);
}

// No signal path leaves the tree instrumented. The session
// (the child of `vprof iterate`, its supervisor) dies of SIGSEGV and of
// SIGABRT mid-run, with the target instrumented and running: the supervisor
// restores the tree by itself (no `vprof restore`), says so, and exits
// 128 + the signal.
TEST(IterateKill, ASessionThatCrashesIsRestoredByItsSupervisor) {
  vprof::iterate::Config c = vprof::testing::make_planted_target("crash", "stage3", 5);
  const fs::path dir = c.dir;
  ASSERT_TRUE(vprof::iterate::save_config(c, c.path).ok());
  const std::string pristine = slurp((dir / "planted.cc").string());
  for (int sig : {SIGSEGV, SIGABRT}) {
    SCOPED_TRACE("signal " + std::to_string(sig));
    fs::remove_all(dir / ".vprof-session");  // the last round's run.log is not this one's
    pid_t pid = start_iterate(dir, c.path, dir / "crash.log", false);
    // Wait for the first run to start: the tree is instrumented then.
    const fs::path started = dir / ".vprof-session" / "iter-1" / "run.log";
    int status = 0;
    bool exited = false;
    auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(3);
    while (!fs::exists(started) && std::chrono::steady_clock::now() < give_up &&
           !(exited = waitpid(pid, &status, WNOHANG) == pid))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_FALSE(exited) << slurp((dir / "crash.log").string());
    ASSERT_TRUE(fs::exists(started)) << "the first run never started";
    ASSERT_NE(slurp((dir / "planted.cc").string()), pristine) << "instrumented while it runs";
    // The session is the supervisor's only child.
    std::ifstream kids("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
    pid_t session = 0;
    ASSERT_TRUE(kids >> session) << "no session process under the supervisor";
    kill(session, sig);
    waitpid(pid, &status, 0);
    std::string log = slurp((dir / "crash.log").string());
    ASSERT_TRUE(WIFEXITED(status)) << log;
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << log;
    EXPECT_NE(log.find("the tree is restored"), std::string::npos) << log;
    EXPECT_EQ(slurp((dir / "planted.cc").string()), pristine) << log;
    EXPECT_FALSE(fs::exists(dir / ".vprof")) << "the journal is gone: restored";
  }
}

// `vprof iterate` killed outright (SIGKILL to the supervisor, as a CI job's
// hard timeout does) while its workload runs: the workload goes too, with
// whatever it started in its process group, instead of running on and
// writing into the session's trace.
TEST(IterateKill, AKilledSessionTakesItsWorkloadWithIt) {
  vprof::iterate::Config c = vprof::testing::make_planted_target("orphan", "stage3", 5);
  const fs::path dir = c.dir;
  const fs::path pidfile = dir / "workload.pid", childfile = dir / "child.pid";
  c.run_command = "sleep 300 & echo $! > " + childfile.string() + "; echo $$ > " + pidfile.string() +
                  "; exec sleep 300";
  ASSERT_TRUE(vprof::iterate::save_config(c, c.path).ok());
  pid_t pid = start_iterate(dir, c.path, dir / "orphan.log", false);
  auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (!(fs::exists(pidfile) && fs::exists(childfile) && fs::file_size(childfile) > 0) &&
         std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(pidfile)) << "the workload never started: " << slurp((dir / "orphan.log").string());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const pid_t workload = std::stoi(slurp(pidfile.string())), child = std::stoi(slurp(childfile.string()));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // Gone (or a zombie no one has reaped yet: it runs nothing) within 5 s.
  auto running = [](pid_t p) {
    std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    const size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
  };
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((running(workload) || running(child)) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(running(workload)) << "the workload runs on after its session was killed";
  EXPECT_FALSE(running(child)) << "what the workload started in the background runs on";
  if (running(workload)) kill(workload, SIGKILL);
  if (running(child)) kill(child, SIGKILL);
  sh(std::string(VPROF_CLANG_BIN) + " restore -p " + (dir / "b").string() + " >/dev/null 2>&1");
}
