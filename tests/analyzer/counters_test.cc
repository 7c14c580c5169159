// The data-quality counters come from one list each (read_counters.def,
// merge_counters.def, path_counters.def): the JSON reports
// every one, docs/analyze.md's `data_quality` entry names every one (a
// counter added to a list and not to the page fails here), and each
// counter's level sets the report's verdict, the terminal's "data quality:"
// line and `analyze --fail-on`'s exit status.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using analyzer::Counter;
using analyzer::Level;

std::string data_quality_entry() {
  std::ifstream in(std::string(VPROF_SOURCE_DIR) + "/docs/analyze.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string page = ss.str();
  const size_t at = page.find("- `data_quality`:");
  if (at == std::string::npos) return "";
  const size_t end = page.find("\n- `", at + 1);
  return page.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

TEST(Counters, EveryCounterIsInTheDocsDataQualityList) {
  const std::string entry = data_quality_entry();
  ASSERT_FALSE(entry.empty()) << "docs/analyze.md has no `data_quality` entry";
  std::set<std::string> names;
  analyzer::RunAnalysis r;
  for_each_quality(r, [&](const Counter &c) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " is in two lists";
    EXPECT_NE(entry.find(c.name), std::string::npos) << c.name << " is not in docs/analyze.md's data_quality list";
    EXPECT_NE(entry.find(std::string(c.name) + "` (" + analyzer::level_name(c.level)), std::string::npos)
        << c.name << ": docs/analyze.md does not give its level, " << analyzer::level_name(c.level);
  });
  EXPECT_EQ(names.size(), 39u);  // 9 of the reader, 13 of the walk, 17 of the merge
}

// A call through a pointer that reaches one function in one interval and
// another in the next is dispatch (a connection's first command through one
// handler, later ones through another): info, not a warning. A direct call
// site that enters another function than its callee still is one.
TEST(Counters, DispatchToAnotherTargetIsInfoADirectCallsMismatchAWarning) {
  auto run = [](bool indirect) {
    TraceBuilder tb;
    for (int i = 0; i < 4; ++i) {
      const int64_t t = i * 1000;
      const uint32_t target = i % 2 ? 2 : 3;
      tb.thread(1).begin(t, i + 1).enter(t + 1, 1).site(t + 2, 7).enter(t + 3, target).exit(t + 10, target)
          .site_end(t + 11, 7).exit(t + 12, 1).end(t + 13, i + 1);
    }
    analyzer::Names names;
    for (uint32_t f : {1u, 2u, 3u}) names.functions[f] = {"f" + std::to_string(f), "a.c", int(f)};
    analyzer::CallSiteInfo site;
    site.function_id = 1;
    site.callee = indirect ? "handler->fn" : "f2";
    site.indirect = indirect;
    if (indirect) site.targets = {"f2", "f3"};
    names.sites[7] = site;
    names.schema_version = 2;  // call sites say whether they are indirect
    analyzer::AnalyzeOptions opt;
    opt.factors.bootstrap = 0;
    return analyzer::analyze_run(tb.build(), names, opt, 0).value();
  };
  auto indirect = run(true);
  EXPECT_GT(indirect->merge.dispatch_changes, 0u);
  EXPECT_EQ(indirect->merge.callee_mismatches, 0u);
  EXPECT_NE(analyzer::worst_level(*indirect), Level::warning);
  auto direct = run(false);
  EXPECT_GT(direct->merge.callee_mismatches, 0u);
  EXPECT_EQ(direct->merge.dispatch_changes, 0u);
}

// The verdict is the worst level that counted anything: info counters never
// raise it, damage to a file is a loss.
TEST(Counters, WorstLevelIsTheWorstNonzeroCounter) {
  analyzer::RunAnalysis r;
  EXPECT_EQ(worst_level(r), Level::info);
  r.read.late_switches = 7;
  r.paths.counters.wake_edges_followed = 100;
  EXPECT_EQ(worst_level(r), Level::info);
  r.merge.reused_ids = 2;
  EXPECT_EQ(worst_level(r), Level::warning);
  r.read.dropped_records = 1;
  EXPECT_EQ(worst_level(r), Level::loss);

  analyzer::RunAnalysis damaged;
  trace::FileLoss l;
  l.file = "t-1-1.vpt";
  l.records = 3;
  damaged.losses.push_back(l);
  EXPECT_EQ(worst_level(damaged), Level::loss);
}

}  // namespace
}  // namespace vprof::testing
