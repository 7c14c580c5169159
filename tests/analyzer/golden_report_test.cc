// Golden reports: whole terminal, JSON and CSV reports of built traces whose
// ticks are exact, compared byte for byte with tests/analyzer/golden/. A change
// to what a report says shows here as a diff of the file, not as a substring
// that still matches.
//
// After a change that is meant to alter a report, rewrite the files and read
// their diff before committing it:
//   VPROF_UPDATE_GOLDEN=1 build/tests/analyzer/analyzer_tests --gtest_filter='GoldenReport.*'
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/report/reporter.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// One run's analysis, on one thread (the same reports whatever the machine).
std::unique_ptr<Analysis> analysis_of(TraceBuilder &tb, const Names &names) {
  AnalyzeOptions opt;
  opt.threads = 1;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
  return combine(std::move(runs), opt);
}

// Lock contention over two request types: thread 1 runs Txn::run and waits at
// Lock::acquire for thread 2's Holder::work, whose hold grows by 7 ns a
// request; Log::append's time varies by request too.
std::unique_ptr<Analysis> contention() {
  TraceBuilder tb;
  const uint32_t neworder = tb.label("NewOrder"), payment = tb.label("Payment");
  for (int i = 0; i < 12; ++i) {
    const int64_t t = i * 1000, hold = 10 + 7 * i;
    tb.thread(1).begin(t, 2 * i + 1, i % 3 ? neworder : payment).enter(t, 1).site(t + 5, 1).wait(t + 5, 0x10)
        .wait_end(t + 5 + hold, 0x10, 2, t + 4 + hold).site_end(t + 6 + hold, 1)
        .call(t + 6 + hold, t + 20 + hold + (i * 5) % 11, 2, 3).exit(t + 30 + hold + i % 4, 1)
        .end(t + 30 + hold + i % 4, 2 * i + 1);
    tb.thread(2).begin(t, 2 * i + 2).enter(t, 4).release(t + 4 + hold, 0x10).exit(t + 8 + hold, 4)
        .end(t + 9 + hold, 2 * i + 2);
  }
  Names names = make_names({{1, "Txn::run"}, {3, "Log::append"}, {4, "Holder::work"}},
                           {{1, 1, "Lock::acquire", 40}, {2, 1, "Log::append", 41}});
  return analysis_of(tb, names);
}

// A holder that is preempted and paused by the recorder while it holds: the
// waiter's blocked stretch splits into the holder's code, "(preempted while
// holding)" and "(recorder)" parts, of which only the code is a cause.
std::unique_ptr<Analysis> held_off_cpu() {
  TraceBuilder tb;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = i * 1000, slow = (i % 5 == 0) ? 40 : 0;
    tb.thread(1).begin(t, 2 * i + 1).enter(t, 1).site(t + 10, 1).wait(t + 10, 0x10)
        .wait_end(t + 40 + slow, 0x10, 2, t + 36 + slow).site_end(t + 41 + slow, 1).exit(t + 45 + slow, 1)
        .end(t + 45 + slow, 2 * i + 1);
    tb.thread(2).begin(t, 2 * i + 2).enter(t, 3).site(t + 15, 5).site_end(t + 22 + slow / 2, 5)
        .release(t + 36 + slow, 0x10).exit(t + 37 + slow, 3).end(t + 37 + slow, 2 * i + 2);
    if (i % 2) tb.thread(2).preempted(t + 31, t + 25, t + 30).recorder(t + 31, t + 33);
  }
  Names names = make_names({{1, "Worker::run"}, {3, "Maintenance::step"}},
                           {{1, 1, "pthread_mutex_lock", 10}, {5, 3, "Index::rebuild", 30}});
  return analysis_of(tb, names);
}

std::string render(const Reporter &r, const Analysis &a) {
  std::ostringstream out;
  EXPECT_TRUE(r.write(a, out).ok());
  return out.str();
}

std::string read(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first line where `got` and `want` differ, for the failure message.
std::string first_difference(const std::string &got, const std::string &want) {
  std::istringstream g(got), w(want);
  std::string gl, wl;
  for (int n = 1;; ++n) {
    const bool gm = bool(std::getline(g, gl)), wm = bool(std::getline(w, wl));
    if (!gm && !wm) return "(same lines; line endings differ)";
    if (!gm || !wm || gl != wl)
      return "line " + std::to_string(n) + ":\n  got:  " + (gm ? gl : "(end)") + "\n  want: " + (wm ? wl : "(end)");
  }
}

void expect_golden(const std::string &name, const std::string &got) {
  const std::string path = std::string(VPROF_SOURCE_DIR) + "/tests/analyzer/golden/" + name;
  if (const char *u = std::getenv("VPROF_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << got;
    return;
  }
  const std::string want = read(path);
  ASSERT_FALSE(want.empty()) << path << ": missing (VPROF_UPDATE_GOLDEN=1 writes it)";
  EXPECT_TRUE(got == want) << path << " differs, first at " << first_difference(got, want)
                           << "\n(VPROF_UPDATE_GOLDEN=1 rewrites it: read its diff before committing)";
}

void expect_reports(const std::string &stem, const Analysis &a) {
  expect_golden(stem + ".txt", render(*make_terminal_reporter(), a));
  expect_golden(stem + ".json", render(*make_json_reporter(), a));
  expect_golden(stem + ".csv", render(*make_csv_reporter(), a));
}

TEST(GoldenReport, LockContentionOverTwoRequestTypes) { expect_reports("contention", *contention()); }

TEST(GoldenReport, AHolderPreemptedAndPausedByTheRecorderWhileHolding) {
  expect_reports("held_off_cpu", *held_off_cpu());
}

TEST(GoldenReport, TheSameTraceGivesTheSameReportsTwice) {
  // What the goldens rest on: no report depends on a clock, an address or a
  // thread's timing (the bootstrap's draws are seeded).
  auto a = held_off_cpu(), b = held_off_cpu();
  for (const auto &r : {make_terminal_reporter(), make_json_reporter(), make_csv_reporter()})
    EXPECT_EQ(render(*r, *a), render(*r, *b));
}

}  // namespace
}  // namespace vprof::testing
