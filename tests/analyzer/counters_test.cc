// The data-quality counters come from one list each (merge_counters.def,
// path_counters.def; issue 27, item 1): the JSON reports every one, and
// docs/analyze.md's `data_quality` entry names every one (a counter added to
// a list and not to the page fails here).
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/merge/timeline.h"

namespace vprof::testing {
namespace {

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
  int n = 0;
  auto named = [&](const char *name, uint64_t) {
    ++n;
    EXPECT_NE(entry.find(name), std::string::npos) << name << " is not in docs/analyze.md's data_quality list";
  };
  for_each_counter(analyzer::MergeCounters{}, named);
  for_each_counter(analyzer::PathCounters{}, named);
  EXPECT_EQ(n, 21);  // 12 of the merge, 9 of the walk
}

}  // namespace
}  // namespace vprof::testing
