// With --root the tree is the root function's time alone, and every share is
// of its variance: the report says what part of Var(latency) the root holds
// (Redis: aeProcessEvents held 14.9% of it, and the planted stall's 86.8% was
// read as the client's). Here each interval spends 0 or 100 ns outside f and
// 10 or 30 ns in f, independently: f holds Var(b) / (Var(o) + Var(b)) =
// 100 / 2600 of Var(latency).
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

TEST(RootCoverage, TheReportSaysWhatPartOfTheLatencysVarianceTheRootHolds) {
  TraceBuilder tb;
  auto &th = tb.thread(1);
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    int64_t t = int64_t(i) * 1000;
    const int64_t outside = i % 2 ? 100 : 0, in_f = (i / 2) % 2 ? 30 : 10;
    th.begin(t, uint64_t(i) + 1).enter(t + outside, 1).exit(t + outside + in_f, 1).end(t + outside + in_f, uint64_t(i) + 1);
  }
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  opt.root = "f";
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), make_names({{1, "f"}}, {}), opt, 0).value());
  auto a = combine(std::move(runs), opt);
  std::ostringstream out;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, out).ok());
  EXPECT_NE(out.str().find("root: f holds 3.8% of Var(latency); the shares below are of its own variance"),
            std::string::npos)
      << out.str();
  std::ostringstream js;
  ASSERT_TRUE(make_json_reporter()->write(*a, js).ok());
  EXPECT_NEAR(nlohmann::json::parse(js.str())["root_share"].get<double>(), 100.0 / 2600.0, 1e-3);
}

}  // namespace
}  // namespace vprof::testing
