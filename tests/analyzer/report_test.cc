// Reporters: the JSON keys docs/analyze.md promises, the CSV matrix, the table; and one
// trip through real trace files (the reader) and a manifest.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace vprof::testing {
namespace {

using namespace analyzer;
using nlohmann::json;

std::unique_ptr<Analysis> small_analysis() {
  // Two threads contend for a lock; thread 2's holder is blamed for 1's wait.
  TraceBuilder tb;
  uint32_t neworder = tb.label("NewOrder");
  for (int i = 0; i < 6; ++i) {
    int64_t t = i * 1000;
    int64_t hold = 10 + 7 * i;
    tb.thread(1).begin(t, 2 * i + 1, neworder).enter(t, 1).site(t + 5, 1).wait(t + 5, 0x10)
        .wait_end(t + 5 + hold, 0x10, 2, t + 4 + hold).site_end(t + 6 + hold, 1)
        .call(t + 6 + hold, t + 20 + hold + i % 3, 2, 3).exit(t + 30 + hold, 1)
        .end(t + 30 + hold, 2 * i + 1);
    tb.thread(2).begin(t, 2 * i + 2).enter(t, 4).release(t + 4 + hold, 0x10).exit(t + 8 + hold, 4)
        .end(t + 9 + hold, 2 * i + 2);
  }
  Names names = make_names({{1, "Txn::run"}, {3, "Log::append"}, {4, "Holder::work"}},
                           {{1, 1, "Lock::acquire", 40}, {2, 1, "Log::append", 41}});
  AnalyzeOptions opt;
  opt.factors.d = 0.0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
  return combine(std::move(runs), opt);
}

void check_node(const json &n, int &count) {
  for (const char *k : {"id", "kind", "label", "functions", "call_site", "value_ns2",
                        "contribution", "children"})
    ASSERT_TRUE(n.contains(k)) << k << " in " << n.dump();
  std::string kind = n["kind"];
  EXPECT_TRUE(kind == "var" || kind == "cov" || kind == "leaf") << kind;
  EXPECT_TRUE(n["call_site"].is_null() || n["call_site"].contains("callee"));
  ++count;
  for (const auto &c : n["children"]) check_node(c, count);
}

TEST(Report, JsonHasTheKeysUsersDependOn) {
  auto a = small_analysis();
  json j = to_json(*a);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["intervals"], 12);
  EXPECT_EQ(j["dropped_records"], 0);
  EXPECT_EQ(j["incomplete_intervals"], 0);
  for (const char *k : {"mean_ns", "variance_ns2", "stddev_ns", "p50_ns", "p90_ns", "p99_ns",
                        "p999_ns", "max_ns"})
    EXPECT_TRUE(j["latency"][k].is_number()) << k;
  EXPECT_EQ(j["overhead"]["probe_ns"], 12.5);
  EXPECT_EQ(j["overhead"]["empty_interval_ns"], 40.0);
  EXPECT_EQ(j["data_quality"]["tiling_violations"], 0);
  int nodes = 0;
  check_node(j["tree"], nodes);
  EXPECT_GT(nodes, 5);
  ASSERT_FALSE(j["factors"].empty());
  for (const auto &f : j["factors"]) {
    for (const char *k : {"rank", "kind", "functions", "contribution", "score", "height",
                          "call_sites", "ci95"})
      EXPECT_TRUE(f.contains(k)) << k;
  }
  EXPECT_EQ(j["factors"][0]["rank"], 1);
  EXPECT_TRUE(j["factors"][0]["tail"].contains("p99"));
  // Half the intervals are labeled NewOrder, the rest unlabeled.
  ASSERT_TRUE(j["types"].is_object());
  EXPECT_EQ(j["types"]["by_type"].size(), 2u);
  EXPECT_NEAR(j["types"]["within_fraction"].get<double>() +
                  j["types"]["between_fraction"].get<double>(), 1.0, 1e-12);
  // The lock wait is blamed on the holder's function.
  ASSERT_FALSE(j["blame"].empty());
  EXPECT_EQ(j["blame"][0]["waker_function"], "Holder::work");
  EXPECT_EQ(j["blame"][0]["waker_tid"], 2);
}

TEST(Report, CsvRowsSumToLatency) {
  auto a = small_analysis();
  std::stringstream ss;
  ASSERT_TRUE(make_csv_reporter()->write(*a, ss).ok());
  std::string header;
  std::getline(ss, header);
  EXPECT_EQ(header.rfind("interval_id,type,client,latency_ns,", 0), 0u) << header;
  EXPECT_NE(header.find("Txn::run > Lock::acquire@t.cc:40"), std::string::npos) << header;
  std::string line;
  int rows = 0;
  while (std::getline(ss, line)) {
    std::stringstream ls(line);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(ls, cell, ',')) cells.push_back(cell);
    ASSERT_GE(cells.size(), 5u);
    if (std::stoll(cells[0]) % 2 == 1) EXPECT_EQ(cells[1], "NewOrder");
    int64_t sum = 0;
    for (size_t i = 4; i < cells.size(); ++i) sum += std::stoll(cells[i]);
    EXPECT_EQ(sum, std::stoll(cells[3])) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 12);
}

TEST(Report, TerminalTableNamesTheTopFactor) {
  auto a = small_analysis();
  std::stringstream ss;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, ss).ok());
  std::string out = ss.str();
  EXPECT_NE(out.find("12 intervals"), std::string::npos) << out;
  EXPECT_NE(out.find("probe pair 12.5 ns"), std::string::npos) << out;
  EXPECT_NE(out.find(a->factors[0].name), std::string::npos) << out;
  EXPECT_NE(out.find("Holder::work"), std::string::npos) << out;
}

TEST(Report, AFactorAtOnePlaceReachedFromTwoSitesListsBothWithTheSiteAbove) {
  // LevelDB: the writer-queue wait (db_impl.cc:1209) and the memtable-full
  // wait (db_impl.cc:1355) both go through port::CondVar::Wait, so both are
  // std::condition_variable::wait at port_stdcxx.h:75; the table said "via
  // port_stdcxx.h:75:5 (85.1%)" for a factor of 98.9% and hid the other.
  // Here R calls the wrapper W at sites 1 and 2; W calls X at site 3.
  TraceBuilder tb;
  int64_t xa[] = {10, 40, 20, 50, 30, 60, 15, 45}, xb[] = {30, 5, 25, 10, 35, 5, 20, 15};
  for (int i = 0; i < 8; ++i) {
    int64_t t = i * 1000;
    auto &th = tb.thread(1);
    th.begin(t, i + 1).enter(t, 1).site(t + 1, 1).enter(t + 1, 2);
    th.call(t + 2, t + 2 + xa[i], 3, 3);
    int64_t e = t + 2 + xa[i];
    th.exit(e, 2).site_end(e, 1).site(e + 1, 2).enter(e + 1, 2);
    th.call(e + 2, e + 2 + xb[i], 3, 3);
    e += 2 + xb[i];
    th.exit(e, 2).site_end(e, 2).exit(e + 1, 1).end(e + 1, i + 1);
  }
  Names names = make_names({{1, "R"}, {2, "W"}, {3, "X"}},
                           {{1, 1, "W", 10}, {2, 1, "W", 11}, {3, 2, "X", 30}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *x = nullptr;
  for (const auto &f : a->factors)
    if (f.name == "X" && f.rank > 0) x = &f;
  ASSERT_NE(x, nullptr);
  ASSERT_EQ(x->call_sites.size(), 2u);
  std::stringstream ss;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, ss).ok());
  std::string out = ss.str();
  // The larger instance (site 1's: xa varies most) first, then the other.
  EXPECT_NE(out.find("via t.cc:30:3 ("), std::string::npos) << out;
  EXPECT_NE(out.find(") from t.cc:10:3"), std::string::npos) << out;
  EXPECT_NE(out.find("        and t.cc:30:3 ("), std::string::npos) << out;
  EXPECT_NE(out.find(") from t.cc:11:3"), std::string::npos) << out;
  std::stringstream js;
  ASSERT_TRUE(make_json_reporter()->write(*a, js).ok());
  EXPECT_NE(js.str().find("\"parent_call_site\""), std::string::npos);
}

// Found on MariaDB: an iterate session's merged report said "data quality:
// ok" from its first run while its runs 21-28 had each dropped 6-48 M records
// at the trace's budget. The line (and the JSON's own data_quality) are over
// every run, naming the runs that counted each loss; each run's is in `runs`.
TEST(Report, AMergedReportsDataQualityIsEveryRunsNotTheFirsts) {
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  for (uint64_t r = 0; r < 3; ++r) {
    TraceBuilder tb;
    auto &th = tb.thread(1);
    for (uint64_t id = 1; id <= 3; ++id) {
      int64_t t = int64_t(id) * 100;
      th.begin(t, id).enter(t + 1, 1).exit(t + 11 + int64_t(id), 1).end(t + 12 + int64_t(id), id);
    }
    if (r > 0) th.drop(400, 1000 * r);
    runs.push_back(analyze_run(tb.build(), make_names({{1, "R"}}, {}), opt, int(r)).value());
  }
  auto a = combine(std::move(runs), opt);
  std::stringstream ss;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, ss).ok());
  EXPECT_NE(ss.str().find("data quality: loss: 3000 dropped_records (runs 2-3)"), std::string::npos) << ss.str();
  std::stringstream js;
  ASSERT_TRUE(make_json_reporter()->write(*a, js).ok());
  const nlohmann::json j = nlohmann::json::parse(js.str());
  EXPECT_EQ(j["data_quality"]["level"], "loss");
  EXPECT_EQ(j["data_quality"]["dropped_records"], 3000);
  EXPECT_EQ(j["runs"][0]["data_quality"]["level"], "ok");
  EXPECT_EQ(j["runs"][2]["data_quality"]["dropped_records"], 2000);
}

TEST(Report, CallSitesAtDifferentPlacesKeepTheShortForm) {
  auto a = small_analysis();
  std::stringstream ss;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, ss).ok());
  EXPECT_EQ(ss.str().find(") from "), std::string::npos) << ss.str();
}

TEST(Report, AnIntervalWithIdZeroIsCountedNotAnalyzed) {
  // The first LevelDB patch numbered writes from 0: thread 0's first write was
  // interval 0, which the timeline reads as "working for no interval" (its
  // walk followed wakers that worked for no interval as if for it).
  TraceBuilder tb;
  auto &th = tb.thread(1);
  for (uint64_t id = 0; id < 3; ++id) {
    int64_t t = int64_t(id) * 100;
    th.begin(t, id).enter(t + 1, 1).exit(t + 11 + int64_t(id), 1).end(t + 12 + int64_t(id), id);
  }
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), make_names({{1, "R"}}, {}), opt, 0).value());
  EXPECT_EQ(runs[0]->paths.rows.size(), 2u);
  EXPECT_EQ(runs[0]->merge.zero_id_intervals, 1u);
  auto a = combine(std::move(runs), opt);
  std::stringstream ss;
  ASSERT_TRUE(make_terminal_reporter()->write(*a, ss).ok());
  EXPECT_NE(ss.str().find("data quality: warning: 1 zero_id_intervals\n"
                          "  zero_id_intervals: begun with id 0, which means no interval: ignored"),
            std::string::npos)
      << ss.str();
  std::stringstream js;
  ASSERT_TRUE(make_json_reporter()->write(*a, js).ok());
  EXPECT_NE(js.str().find("\"zero_id_intervals\": 1"), std::string::npos);
}

TEST(Report, ThroughTraceFilesAndManifest) {
  namespace fs = std::filesystem;
  fs::path dir = vprof::testing::fresh_dir("vprof-an", "files");
  SynthThread a(dir.string(), 1, 11), b(dir.string(), 1, 12);
  for (uint64_t i = 0; i < 5; ++i) {
    uint64_t t = 1000 + i * 1000, hold = 20 + 10 * i;
    a.interval_begin(t, i + 1, "GET");
    a.fn_enter(t, 1);
    a.site_begin(t + 5, 1);
    a.wait_begin(t + 5, 0x40);
    a.wait_end(t + 5 + hold, 12, t + 3 + hold);
    a.site_end(t + 6 + hold, 1);
    a.fn_exit(t + 10 + hold, 1);
    a.interval_end(t + 10 + hold, i + 1);
    b.fn_enter(t, 2);
    b.release(t + 3 + hold, 0x40);
    b.fn_exit(t + 4 + hold, 2);
  }
  a.close();
  b.close();
  std::ofstream(dir / "manifest.json") << R"j({"schema_version": 1,
    "functions": [{"id": 1, "name": "Srv::get", "file": "srv.cc", "line": 10, "column": 1},
                  {"id": 2, "name": "Flusher::run", "file": "fl.cc", "line": 5, "column": 1}],
    "call_sites": [{"id": 1, "function_id": 1, "callee": "std::mutex::lock",
                    "callee_text": "mu.lock()", "file": "srv.cc", "line": 12, "column": 5,
                    "macro": null}]})j";
  auto trace = trace::read_trace_dir(dir.string());
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace->first_error(), nullptr) << trace->first_error()->str();
  auto names = load_manifest((dir / "manifest.json").string());
  ASSERT_TRUE(names.ok()) << names.error().message;
  AnalyzeOptions opt;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(*trace, std::move(*names), opt, 0).value());
  auto an = combine(std::move(runs), opt);
  json j = to_json(*an);
  EXPECT_EQ(j["intervals"], 5);
  // Latencies 30, 40, .., 70: mean 50, sample variance 250.
  EXPECT_DOUBLE_EQ(j["latency"]["mean_ns"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["latency"]["variance_ns2"].get<double>(), 250.0);
  EXPECT_EQ(j["latency"]["max_ns"], 70.0);
  ASSERT_FALSE(j["factors"].empty());
  EXPECT_EQ(j["factors"][0]["name"], "std::mutex::lock");
  EXPECT_EQ(j["factors"][0]["call_sites"][0]["call_site"]["line"], 12);
  ASSERT_FALSE(j["blame"].empty());
  EXPECT_EQ(j["blame"][0]["waker_function"], "Flusher::run");
  fs::remove_all(dir);
}

// Found in MariaDB session 5: os_file_sync_posix calls fdatasync through a
// local `func`, the only value the tree stores there (manifest: stored_in,
// one target). The session's top cause read "func", the expression; it is
// fdatasync, as a direct call's is its callee, and the JSON keeps the
// expression. A pointer with two stored targets, or targets by type, keeps
// its expression's name.
TEST(Report, ACallThroughAPointerTheTreeSetsToOneFunctionIsNamedByIt) {
  namespace fs = std::filesystem;
  fs::path dir = vprof::testing::fresh_dir("vprof-an", "stored");
  SynthThread a(dir.string(), 1, 11);
  for (uint64_t i = 0; i < 6; ++i) {
    uint64_t t = 1000 + i * 1000, sync = 10 + 40 * (i % 3), write = 5 + 7 * (i % 2);
    a.interval_begin(t, i + 1, "Q");
    a.fn_enter(t, 1);
    a.site_begin(t + 1, 1);
    a.site_end(t + 1 + sync, 1);
    a.site_begin(t + 2 + sync, 2);
    a.site_end(t + 2 + sync + write, 2);
    a.site_begin(t + 3 + sync + write, 3);
    a.site_end(t + 4 + sync + write + i, 3);
    a.fn_exit(t + 10 + sync + write + i, 1);
    a.interval_end(t + 10 + sync + write + i, i + 1);
  }
  a.close();
  std::ofstream(dir / "manifest.json") << R"j({"schema_version": 2,
    "functions": [{"id": 1, "name": "os_file_sync_posix", "file": "os0file.cc", "line": 800, "column": 1}],
    "call_sites": [{"id": 1, "function_id": 1, "callee": "func", "callee_text": "func(file)",
                    "file": "os0file.cc", "line": 816, "column": 10, "macro": null, "indirect": true,
                    "targets": ["fdatasync"], "stored_in": "var:os0file.cc:806:8:func"},
                   {"id": 2, "function_id": 1, "callee": "log_sys.writer", "callee_text": "log_sys.writer()",
                    "file": "os0file.cc", "line": 817, "column": 3, "macro": null, "indirect": true,
                    "targets": ["log_writer", "log_writer_resizing"], "stored_in": "field:log_t::writer"},
                   {"id": 3, "function_id": 1, "callee": "hook", "callee_text": "hook(x)",
                    "file": "os0file.cc", "line": 818, "column": 3, "macro": null, "indirect": true,
                    "targets": ["on_write"]}]})j";
  auto names = load_manifest((dir / "manifest.json").string());
  ASSERT_TRUE(names.ok()) << names.error().message;
  EXPECT_EQ(names->callee(1), "fdatasync");
  EXPECT_EQ(names->site(1)->through, "func");
  EXPECT_TRUE(names->site(1)->indirect) << "still a call through a pointer";
  EXPECT_EQ(names->callee(2), "log_sys.writer") << "two stored targets: the expression";
  EXPECT_EQ(names->callee(3), "hook") << "targets by type may miss a library's: the expression";
  auto trace = trace::read_trace_dir(dir.string());
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  AnalyzeOptions opt;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(*trace, std::move(*names), opt, 0).value());
  auto an = combine(std::move(runs), opt);
  json j = to_json(*an);
  ASSERT_FALSE(j["factors"].empty());
  EXPECT_EQ(j["factors"][0]["name"], "fdatasync") << j["factors"].dump(1);
  EXPECT_EQ(j["factors"][0]["call_sites"][0]["call_site"]["through"], "func");
  std::stringstream ss;
  ASSERT_TRUE(make_terminal_reporter()->write(*an, ss).ok());
  EXPECT_NE(ss.str().find("fdatasync (os0file.cc:816)"), std::string::npos) << ss.str();
  EXPECT_EQ(ss.str().find("func"), std::string::npos) << ss.str();
  fs::remove_all(dir);
}

// The manifest's sync_sites mark the call sites at their places: the walk
// reads an unlock's own call as no frame of the hold (walker.h, hold_start).
TEST(Report, AWrappedSyncCallIsMarkedOnItsCallSite) {
  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / ("vprof_sync_manifest_" + std::to_string(::getpid()));
  std::ofstream(p) << R"j({"schema_version": 2,
    "functions": [{"id": 1, "name": "update", "file": "t.c", "line": 5, "column": 1}],
    "call_sites": [{"id": 1, "function_id": 1, "callee": "pthread_mutex_unlock", "file": "t.c", "line": 9,
                    "column": 3, "macro": null},
                   {"id": 2, "function_id": 1, "callee": "rebuild", "file": "t.c", "line": 8, "column": 3,
                    "macro": null}],
    "sync_sites": [{"callee": "pthread_mutex_unlock", "file": "t.c", "line": 9, "column": 3,
                    "object": "(&m)", "role": "VPROF_SYNC_MUTEX"}]})j";
  auto n = load_manifest(p.string());
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_TRUE(n->site(1)->sync);
  EXPECT_FALSE(n->site(2)->sync);
  std::ofstream(p) << R"j({"schema_version": 2, "sync_sites": [{"file": "t.c", "line": "nine", "column": 3}]})j";
  auto bad = load_manifest(p.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("sync_sites[0].line"), std::string::npos) << bad.error().message;
  fs::remove(p);
}

TEST(Report, ManifestErrorsNameFileAndField) {
  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / ("vprof_bad_manifest_" + std::to_string(::getpid()));
  std::ofstream(p) << R"({"functions": [{"id": 1, "name": 7}]})";
  auto n = load_manifest(p.string());
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find(p.string()), std::string::npos);
  EXPECT_NE(n.error().message.find("functions[0].name"), std::string::npos) << n.error().message;
  std::ofstream(p) << "{not json";
  EXPECT_NE(load_manifest(p.string()).error().message.find("not valid JSON"), std::string::npos);
  fs::remove(p);
}

}  // namespace
}  // namespace vprof::testing

namespace vprof::testing {
namespace {

TEST(Report, NoIntervalsGivesAnEmptyButValidReport) {
  // Function records only, and one interval that never ends: nothing to
  // analyze, yet every reporter works and no number is NaN.
  TraceBuilder tb;
  tb.thread(1).enter(0, 1).exit(10, 1).begin(20, 5);
  AnalyzeOptions opt;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), Names{}, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  json j = to_json(*a);
  EXPECT_EQ(j["intervals"], 0);
  EXPECT_EQ(j["incomplete_intervals"], 1);
  EXPECT_EQ(j["latency"]["mean_ns"], 0.0);
  EXPECT_TRUE(j["factors"].empty());
  EXPECT_EQ(j["tree"]["value_ns2"], 0.0);
  std::stringstream t, c;
  EXPECT_TRUE(make_terminal_reporter()->write(*a, t).ok());
  EXPECT_NE(t.str().find("none reaches the threshold"), std::string::npos) << t.str();
  EXPECT_TRUE(make_csv_reporter()->write(*a, c).ok());
}

}  // namespace
}  // namespace vprof::testing
