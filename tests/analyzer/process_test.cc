// common/process.h: the one way vprof starts a program.
#include "common/process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace fs = std::filesystem;

namespace vprof {
namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Process : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vprof-process-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Process, ExitStatusAndSignal) {
  EXPECT_EQ(*run_program({"/bin/sh", "-c", "exit 3"}), 3);
  EXPECT_EQ(*run_program({"/bin/sh", "-c", "kill -TERM $$"}), 128 + SIGTERM);
}

TEST_F(Process, ArgvIsNotAShellLine) {
  std::string log = (dir_ / "log").string();
  SpawnOptions o;
  o.output = log;
  o.search_path = true;
  ASSERT_EQ(*run_program({"printf", "%s|", "a b", "$HOME", "'q'"}, o), 0);
  EXPECT_EQ(slurp(log), "a b|$HOME|'q'|");
}

TEST_F(Process, DirEnvAndOutputFile) {
  std::string log = (dir_ / "log").string();
  std::ofstream(log) << "old text, longer than the new\n";
  auto rc = run_shell("pwd; echo \"$VPROF_X\"; echo err >&2", dir_.string(), log, {{"VPROF_X", "x y"}});
  ASSERT_TRUE(rc) << rc.error().message;
  EXPECT_EQ(*rc, 0);
  EXPECT_EQ(slurp(log), fs::canonical(dir_).string() + "\nx y\nerr\n");
}

TEST_F(Process, EnvReplacesAVariableOnce) {
  setenv("VPROF_PROCESS_TEST", "old", 1);
  std::string log = (dir_ / "log").string();
  ASSERT_EQ(*run_shell("env | grep -c '^VPROF_PROCESS_TEST='; echo $VPROF_PROCESS_TEST", ".", log,
                       {{"VPROF_PROCESS_TEST", "new"}}),
            0);
  unsetenv("VPROF_PROCESS_TEST");
  EXPECT_EQ(slurp(log), "1\nnew\n");
}

TEST_F(Process, ErrorsNameWhatWasWrong) {
  auto missing = run_program({"/nonexistent/vprof-no-such-program"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "/nonexistent/vprof-no-such-program: cannot execute: No such file or directory");
  SpawnOptions o;
  o.search_path = true;
  auto unfound = run_program({"vprof-no-such-program"}, o);
  ASSERT_FALSE(unfound);
  EXPECT_EQ(unfound.error().message, "vprof-no-such-program: cannot execute: No such file or directory");
  auto log = run_shell("true", ".", (dir_ / "no" / "log").string(), {});
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().message, (dir_ / "no" / "log").string() + ": cannot write: No such file or directory");
  auto where = run_shell("true", (dir_ / "no").string(), (dir_ / "log").string(), {});
  ASSERT_FALSE(where);
  EXPECT_EQ(where.error().message.rfind((dir_ / "no").string() + ": cannot start /bin/sh there", 0), 0u)
      << where.error().message;
}

TEST_F(Process, InheritsOnlyTheDescriptorItIsGiven) {
  int kept = open((dir_ / "kept").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  int other = open((dir_ / "other").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(kept, 0);
  ASSERT_GE(other, 0);
  std::string log = (dir_ / "log").string();
  SpawnOptions o;
  o.output = log;
  o.inherit_fd = kept;
  std::string probe = "for fd in " + std::to_string(kept) + " " + std::to_string(other) +
                      "; do if [ -e /proc/self/fd/$fd ]; then echo open; else echo closed; fi; done";
  ASSERT_EQ(*run_program({"/bin/sh", "-c", probe}, o), 0);
  EXPECT_EQ(slurp(log), "open\nclosed\n");
  EXPECT_EQ(fcntl(kept, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC) << "this process's flag is left as it was";
  close(kept);
  close(other);
}

TEST_F(Process, AScriptWithoutAnInterpreterLineRunsInSh) {
  std::string script = (dir_ / "noshebang").string();
  std::ofstream(script) << "echo \"$0 $1\"\n";
  fs::permissions(script, fs::perms::owner_all);
  std::string log = (dir_ / "log").string();
  SpawnOptions o;
  o.output = log;
  o.search_path = true;
  ASSERT_EQ(*run_program({script, "arg"}, o), 0);
  EXPECT_EQ(slurp(log), script + " arg\n");
}

TEST_F(Process, FirstLineOf) {
  EXPECT_EQ(first_line_of({"printf", "one\\r\\ntwo\\n"}), "one");
  EXPECT_EQ(first_line_of({"sh", "-c", "echo err >&2"}), "");
  EXPECT_EQ(first_line_of({"vprof-no-such-program"}), "");
}

}  // namespace
}  // namespace vprof
