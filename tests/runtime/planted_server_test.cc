// A server whose functions are constant work but one planted heavy-tailed
// function, run 10 times beside two spinning threads on the machine's cores.
// Preemption inside a constant function is the kernel's doing, not the
// function's: it goes to a (preempted) leaf, and the planted function ranks
// first among functions in every run. scripts/planted-server.sh is the long
// version.
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/report/preemption.h"
#include "tests/support/temp_dir.h"

namespace {

int run_server(const std::string &dir, int seed) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("VPROF_TRACE_DIR", dir.c_str(), 1);
    std::string s = std::to_string(seed);
    execl(SERVER_PATH, SERVER_PATH, "2000", s.c_str(), "2", (char *)nullptr);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The first factor, in rank order (selected first, then the rest by score),
// that names a function. Under this load preemption carries nearly all of
// Var(L), so what is left to the functions may reach no threshold: the
// order is what is checked.
std::string first_function(const vprof::analyzer::Analysis &a) {
  for (const auto &f : a.factors)
    if (!f.covariance && !f.functions.empty()) return f.functions.front();
  return "";
}

}  // namespace

TEST(PlantedServer, PlantedFunctionRanksFirstUnderLoadInTenOfTenRuns) {
  using namespace vprof::analyzer;
  int measured = 0;
  for (int run = 0; run < 10; ++run) {
    std::string dir = vprof::testing::fresh_dir("vprof-planted", std::to_string(run));
    ASSERT_EQ(run_server(dir, 100 + run), 0);
    auto trace = vprof::trace::read_trace_dir(dir);
    ASSERT_TRUE(trace.ok());
    AnalyzeOptions opt;
    opt.factors.bootstrap = 0;  // the ranking is what is checked
    std::vector<std::unique_ptr<RunAnalysis>> runs;
    auto r = analyze_run(*trace, Names{}, opt, 0);
    ASSERT_TRUE(r.ok()) << r.error().message;
    runs.push_back(std::move(r).value());
    auto a = combine(std::move(runs), opt);
    ASSERT_EQ(a->runs.front()->paths.rows.size(), 2000u);
    EXPECT_EQ(first_function(*a), "fn#4") << "run " << run;
    auto share = preemption_share(*a->runs.front());
    if (!share) continue;
    ++measured;
    EXPECT_GT(*share, 0.0) << "run " << run << ": the spinners preempt the workers";
    const StackTrie &trie = a->runs.front()->trie;
    bool leaf = false;
    for (uint32_t n = 0; n < trie.size(); ++n) leaf = leaf || trie[n].kind == FrameKind::Preempted;
    EXPECT_TRUE(leaf) << "run " << run << ": no (preempted) leaf";
  }
  if (measured == 0)
    GTEST_SKIP() << "perf_event_open refused: preemption not measured (the ranking held anyway)";
}
