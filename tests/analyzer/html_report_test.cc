// The latency histogram the HTML report draws: every interval falls in the
// bin its edges say.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/histogram.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;
using nlohmann::json;

// Intervals of the given latencies (ns), on one thread, one after another,
// the odd ones labelled `type`; the function's name may be anything.
std::unique_ptr<Analysis> analysis_of(const std::vector<int64_t> &latencies,
                                      const std::string &fn_name = "Txn::run",
                                      const std::string &type = "") {
  TraceBuilder tb;
  uint32_t label = type.empty() ? 0 : tb.label(type);
  int64_t t = 0;
  for (size_t i = 0; i < latencies.size(); ++i) {
    int64_t l = latencies[i];
    tb.thread(1).begin(t, i + 1, i % 2 ? label : 0).enter(t, 1).exit(t + l, 1).end(t + l, i + 1);
    t += l + 10;
  }
  Names names = make_names({{1, fn_name}}, {});
  AnalyzeOptions opt;
  opt.factors.d = 0.0;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
  return combine(std::move(runs), opt);
}

TEST(Histogram, EveryIntervalInTheBinItsEdgesSay) {
  std::vector<int64_t> lat = {1000, 1100, 2500, 9999, 10000, 12345, 100000, 7};
  auto a = analysis_of(lat);
  LatencyHistogram h = latency_histogram(*a);
  ASSERT_EQ(h.edges_ns.size(), h.counts.size() + 1);
  EXPECT_EQ(h.bins_per_decade, 10);
  EXPECT_LE(h.edges_ns.front(), 7.0);
  EXPECT_GT(h.edges_ns.back(), 100000.0);
  for (size_t i = 1; i < h.edges_ns.size(); ++i) {
    EXPECT_GT(h.edges_ns[i], h.edges_ns[i - 1]);
    EXPECT_NEAR(std::log10(h.edges_ns[i]) - std::log10(h.edges_ns[i - 1]), 0.1, 1e-9);
  }
  uint64_t total = 0;
  for (uint64_t c : h.counts) total += c;
  EXPECT_EQ(total, lat.size());
  EXPECT_EQ(h.zero, 0u);
  for (int64_t l : lat) {
    size_t bin = 0;
    while (bin + 1 < h.edges_ns.size() && double(l) >= h.edges_ns[bin + 1]) ++bin;
    EXPECT_GE(h.counts[bin], 1u) << l;
  }
  // 10^3 and 10^4 are edges, and open their bins: [1000, 1258.9) holds 1000
  // and 1100, [10000, 12589.3) holds 10000 and 12345; 9999 is in the bin below.
  auto at = [&](double v) {
    for (size_t i = 0; i < h.edges_ns.size(); ++i)
      if (h.edges_ns[i] == v) return int(i);
    return -1;
  };
  ASSERT_GE(at(1000.0), 0);
  ASSERT_GE(at(10000.0), 0);
  EXPECT_EQ(h.counts[size_t(at(1000.0))], 2u);
  EXPECT_EQ(h.counts[size_t(at(10000.0))], 2u);
  EXPECT_EQ(h.counts[size_t(at(10000.0)) - 1], 1u);
}

TEST(Histogram, ByTypeAddsUpToTheWholeAndZeroIsCountedApart) {
  auto a = analysis_of({0, 500, 600, 700, 5000, 5200}, "Txn::run", "Payment");
  json j = to_json(*a);
  const json &h = j["latency"]["histogram"];
  EXPECT_EQ(h["scale"], "log10");
  EXPECT_EQ(h["zero"], 1);
  ASSERT_EQ(h["by_type"].size(), 2u);  // Payment and the unlabelled
  std::vector<uint64_t> sum(h["counts"].size(), 0);
  uint64_t zero = 0;
  for (const auto &t : h["by_type"]) {
    ASSERT_EQ(t["counts"].size(), sum.size());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += t["counts"][i].get<uint64_t>();
    zero += t["zero"].get<uint64_t>();
  }
  EXPECT_EQ(sum, h["counts"].get<std::vector<uint64_t>>());
  EXPECT_EQ(zero, 1u);
  EXPECT_EQ(j["types"]["by_type"][0]["type"], h["by_type"][0]["type"]);
}

TEST(Histogram, NoIntervalsNoBins) {
  auto a = analysis_of({});
  LatencyHistogram h = latency_histogram(*a);
  EXPECT_TRUE(h.edges_ns.empty());
  EXPECT_TRUE(h.counts.empty());
}

}  // namespace
}  // namespace vprof::testing
