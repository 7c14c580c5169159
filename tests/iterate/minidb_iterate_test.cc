// vprof iterate --auto on the bundled engine (examples/minidb), as the demo
// runs it: a contended FCFS run must end on the lock manager's wait, and a
// delay injected into a function (ground truth) must end on that function's
// injected call site. The engine is copied, built and instrumented for real;
// every session restores the copy byte for byte.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "iterate/config.h"
#include "iterate/decide.h"
#include "iterate/session.h"

namespace fs = std::filesystem;
using namespace vprof::iterate;

namespace {

std::map<std::string, std::string> snapshot(const fs::path &dir) {
  std::map<std::string, std::string> files;
  for (const auto &e : fs::recursive_directory_iterator(dir / "src")) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    files[e.path().string()] = ss.str();
  }
  return files;
}

class Minidb : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vprof-minidb-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(MINIDB_SOURCE_DIR, dir_ / "minidb", fs::copy_options::recursive);
    std::string cmd = "cmake -S " + (dir_ / "minidb").string() + " -B " + (dir_ / "minidb/b").string() +
                      " -G Ninja -DCMAKE_BUILD_TYPE=Release -DVPROF_INCLUDE_DIR=" VPROF_INCLUDE_DIR
                      " -DVPROF_LIB_DIR=" VPROF_LIB_DIR " > " + (dir_ / "configure.log").string() + " 2>&1";
    configured_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  Config config(const std::string &run_args, int k) {
    Config c;
    c.dir = (dir_ / "minidb").string();
    c.path = c.dir + "/vprof.json";
    c.root = "minidb::run_transaction";
    c.build_dir = "b";
    c.build_command = "cmake --build b";
    c.run_command = "./b/minidb_bench " + run_args + " --dir " + (dir_ / "data").string();
    c.sync_packs = {"stdcxx"};
    c.k = k;
    c.max_iterations = 9;
    return c;
  }

  Outcome run(const Config &c) {
    SessionOptions o;
    o.annotations_dir = VPROF_ANNOTATIONS_DIR;
    o.include_dir = VPROF_INCLUDE_DIR;
    o.fresh = true;
    auto before = snapshot(c.dir);
    auto out = run_session(c, o, Hooks{});
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    EXPECT_EQ(snapshot(c.dir), before) << "the engine's sources are restored byte for byte";
    if (!out.ok()) return Outcome{};
    // A fixed point; what is unreached there is a library's function (the
    // planted std::this_thread::sleep_for), never a dead end inside the tree.
    EXPECT_EQ(out->state.stop_reason.rfind("fixed point:", 0), 0u) << out->state.stop_reason;
    for (const Decision &d : out->state.decisions)
      if (d.decision == "unreached")
        EXPECT_NE(d.reason.find("no definition in the tree"), std::string::npos) << d.factor << ": " << d.reason;
    return std::move(out).value();
  }

  static std::string describe(const Outcome &out) {
    std::string s;
    for (const auto &f : out.analysis->factors)
      if (f.rank > 0)
        s += "  #" + std::to_string(f.rank) + " " + f.name + " via " + caller_of(*out.analysis, f) + "\n";
    return s;
  }

  static inline fs::path dir_;
  static inline bool configured_ = false;
};

}  // namespace

TEST_F(Minidb, ContendedFcfsEndsOnTheLockManagersWait) {
  ASSERT_TRUE(configured_);
  Outcome out = run(config("--preset contended --txns 600", 3));
  ASSERT_TRUE(out.analysis);
  bool found = false;
  for (const auto &f : out.analysis->factors)
    if (f.rank > 0 && !f.covariance &&
        (f.functions[0] == "minidb::LockManager::wait_for_grant" ||
         caller_of(*out.analysis, f) == "minidb::LockManager::wait_for_grant"))
      found = true;
  EXPECT_TRUE(found) << "selected factors:\n" << describe(out);
  // The wait's cause is what its holder did, followed down the
  // commit (Database::commit, Log::commit, Log::flush, Log::fsync) to the
  // fsync it holds the row locks across.
  const auto &causes = out.analysis->causes;
  ASSERT_TRUE(causes.held);
  ASSERT_FALSE(causes.ranked.empty());
  std::string all;
  const vprof::analyzer::Factor *fsync = nullptr;
  for (const auto &c : causes.ranked) {
    if (c.rank <= 0) continue;
    all += "  #" + std::to_string(c.rank) + " " + c.name + " " + std::to_string(c.share) + " own " +
           std::to_string(c.own_share) + "\n";
    // The libc call, Log::fsync's body, or Log::fsync itself when the last
    // run ended with the libc call unreached below it: each is the fsync.
    if (!fsync && c.name.find("fsync") != std::string::npos) fsync = &c;
  }
  all += "stop: " + out.state.stop_reason + "\n";
  // Ranked (first but for a convoy of waiters on a busy machine), and what it
  // carries is the waits it held up, the row lock's first.
  ASSERT_NE(fsync, nullptr) << all;
  EXPECT_LE(fsync->rank, 2) << all;
  // Its own part: the committing transaction's fsync in its own latency
  // (0.3 points at rest, 9 with two CPU hogs beside it); the rest is held up.
  EXPECT_GT(fsync->share - fsync->own_share, fsync->own_share) << "held up, not its own:\n" << all;
  ASSERT_FALSE(fsync->held_up.empty());
  EXPECT_EQ(fsync->held_up.front().wait, "std::condition_variable::wait_until") << "the row-lock wait";
}

class MinidbPlanted : public Minidb, public ::testing::WithParamInterface<const char *> {};

TEST_P(MinidbPlanted, AutoEndsOnTheInjectedCallSite) {
  ASSERT_TRUE(configured_);
  std::string victim = GetParam();
  Outcome out = run(config("--flush lazy --frames 8 --txns 1500 --seed 3 --inject-delay " + victim +
                               "=exp:300us",
                           2));
  ASSERT_TRUE(out.analysis);
  // First: the injected delay itself (inject_delay, or the sleep inside it)...
  const vprof::analyzer::Factor *top = nullptr;
  for (const auto &f : out.analysis->factors)
    if (f.rank == 1) top = &f;
  ASSERT_TRUE(top);
  EXPECT_TRUE(top->name == "minidb::inject_delay" || top->name == "std::this_thread::sleep_for" ||
              top->name == "minidb::inject_delay (body)")
      << describe(out);
  // ...reached through the call site planted in the victim: its largest
  // part's place in the tree (its key, the path of parts down to it) passes
  // through the victim's call and inject_delay's. (A run that broke down the
  // level below write_row, inject_delay among it, finds the sleep inside
  // write_row's call of Log::append, whose own part is nothing: the session
  // need not break Log::append down; more than one level a run, docs/iterate.md.)
  const vprof::analyzer::VarNode *largest = nullptr;
  for (const auto *inst : top->instances)
    if (!largest || std::abs(inst->contribution) > std::abs(largest->contribution)) largest = inst;
  ASSERT_NE(largest, nullptr) << describe(out);
  EXPECT_NE(largest->key.find(victim), std::string::npos) << largest->key << "\n" << describe(out);
  EXPECT_NE(largest->key.find("inject_delay"), std::string::npos) << largest->key << "\n" << describe(out);
}

INSTANTIATE_TEST_SUITE_P(Depths, MinidbPlanted,
                         ::testing::Values("Log::append", "BufferPool::read_page"));
