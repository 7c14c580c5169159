// The HTML report and the latency histogram it draws: the page embeds the JSON
// document unchanged (so it shows the JSON's numbers), nothing in a name can
// end the script element it sits in, the page can load nothing, and every
// interval falls in the histogram bin its edges say. Whether the page renders
// in a browser is tests/report/html_report_test.py's job.
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
  return analyze_one(tb.build(), names, opt);
}

// The JSON document embedded in a page, as the page's script reads it.
json embedded(const std::string &page) {
  const std::string open = "<script type=\"application/json\" id=\"vprof-data\">";
  size_t b = page.find(open);
  EXPECT_NE(b, std::string::npos);
  b += open.size();
  size_t e = page.find("</script>", b);
  EXPECT_NE(e, std::string::npos);
  return json::parse(page.substr(b, e - b));
}

std::string page_of(const Analysis &a, json extra = json::object()) {
  std::stringstream ss;
  EXPECT_TRUE(make_html_reporter(std::move(extra))->write(a, ss).ok());
  return ss.str();
}

TEST(HtmlReport, EmbedsTheJsonDocumentUnchanged) {
  auto a = analysis_of({100, 200, 400, 800, 1600, 3200});
  std::string page = page_of(*a);
  EXPECT_EQ(embedded(page), to_json(*a));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(HtmlReport, ExtraKeysReachTheJsonAndThePageAlike) {
  auto a = analysis_of({100, 200, 300});
  json extra = {{"iterations", json::array({{{"iteration", 1}, {"run", 0}}})},
                {"session", {{"stop_reason", "fixed point"}}}};
  std::stringstream js;
  ASSERT_TRUE(make_json_reporter(extra)->write(*a, js).ok());
  json doc = json::parse(js.str());
  EXPECT_EQ(doc["iterations"][0]["iteration"], 1);
  EXPECT_EQ(doc, embedded(page_of(*a, extra)));
  EXPECT_EQ(doc, to_json(*a, extra));
}

TEST(HtmlReport, ANameCannotEndTheScriptElement) {
  // A function named like markup: its '<' must not reach the page as '<'.
  const std::string evil = "f</script><script>alert(1)</script><!--";
  auto a = analysis_of({100, 200, 400, 800}, evil);
  std::string page = page_of(*a);
  json doc = embedded(page);  // parses only if the element ended where it should
  EXPECT_EQ(doc, to_json(*a));
  EXPECT_NE(doc.dump().find(evil), std::string::npos);
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(page.find("<!--\""), std::string::npos);
}

TEST(HtmlReport, ThePageMayLoadNothing) {
  std::string page = page_of(*analysis_of({100, 200}));
  size_t csp = page.find("http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';");
  EXPECT_NE(csp, std::string::npos);
  EXPECT_NE(page.find("script-src 'sha256-", csp), std::string::npos);
  // No address to fetch: the one "http" in the page is the SVG namespace's name.
  size_t n = 0;
  for (size_t at = page.find("http"); at != std::string::npos; at = page.find("http", at + 1)) {
    if (page.compare(at, 4, "http") == 0 && (page.compare(at, 7, "http://") == 0 ||
                                             page.compare(at, 8, "https://") == 0)) {
      EXPECT_EQ(page.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << page.substr(at, 40);
      ++n;
    }
  }
  EXPECT_EQ(n, 1u);
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
  EXPECT_TRUE(page_of(*a).find("vprof-data") != std::string::npos);
}

}  // namespace
}  // namespace vprof::testing
