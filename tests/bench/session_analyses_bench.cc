// A session's analyses in one process, as `vprof iterate`'s worker makes
// them: iteration n analyses runs 1..n and writes its reports (JSON, saved
// profile, text, into OUT/iter-n), then lets the analysis go. With reuse=1
// each run is analysed once and kept, reduced, for the later iterations,
// and an iteration's profile holds its own run (what a session does); with
// reuse=0 every iteration reads every run's trace again and saves every run
// (what it did before). Prints per iteration the seconds of the
// analysis and of the reports and the resident set after each.
// Usage: vprof_bench_session_analyses ROOT REUSE OUT TRACE_DIR...
// docs/performance.md, "A session's analyses, iteration after iteration".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/pipeline/trace_dirs.h"
#include "analyzer/profile/profile.h"
#include "analyzer/report/reporter.h"
#include "analyzer/util/prefault.h"
#include "analyzer/util/workers.h"
#include "common/output_file.h"
#include "tests/support/resident.h"

using namespace vprof;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s ROOT REUSE OUT TRACE_DIR...\n", argv[0]);
    return 2;
  }
  analyzer::keep_freed_memory();  // as src/main.cc
  const std::string root = argv[1];
  const bool reuse = std::atoi(argv[2]) != 0;
  const std::string out = argv[3];
  std::vector<std::string> all(argv + 4, argv + argc);
  analyzer::AnalyzedRuns analyzed;
  std::unique_ptr<analyzer::Analysis> last;
  double first_s = 0, last_s = 0;
  for (size_t n = 1; n <= all.size(); ++n) {
    if (reuse)
      analyzer::keep_runs(last, analyzed, "");
    else
      analyzer::drop(last);
    const auto t0 = std::chrono::steady_clock::now();
    analyzer::AnalyzeOptions opt;
    opt.root = root;
    opt.threads = 2;
    analyzer::Workers pool(opt.threads);
    opt.workers = &pool;
    std::vector<std::string> dirs(all.begin(), all.begin() + long(n));
    auto a = analyzer::analyze_dirs(dirs, opt, "", [](const std::string &) {}, reuse ? &analyzed : nullptr);
    if (!a) return std::fprintf(stderr, "%s\n", a.error().message.c_str()), 2;
    const double analysis_s = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string stem = out + "/iter-" + std::to_string(n) + "/report";
    std::filesystem::create_directories(out + "/iter-" + std::to_string(n));
    Status s = write_output(stem + ".json", [&](std::ostream &o) {
      return analyzer::make_json_reporter(nlohmann::json::object())->write(**a, o);
    });
    // Now an iteration's profile holds its own run; before, every run.
    std::optional<int> only;
    if (reuse) only = (*a)->runs.back()->run;
    if (s) s = analyzer::save_profile(analyzer::make_profile(**a, analyzer::build_info(), only), stem + ".vprof");
    if (s) s = write_output(stem + ".txt", [&](std::ostream &o) { return analyzer::make_terminal_reporter()->write(**a, o); });
    if (!s) return std::fprintf(stderr, "%s\n", s.message().c_str()), 2;
    const double reports_s = seconds_since(t1);
    if (n == 1) first_s = analysis_s + reports_s;
    last_s = analysis_s + reports_s;
    std::printf("iteration %zu reuse=%d: analysis %.2f s, reports %.2f s, rss %.2f GB\n", n, int(reuse), analysis_s,
                reports_s, vprof::testing::resident_kb() / 1048576.0);
    std::fflush(stdout);
    last = std::move(*a);
  }
  std::printf("reuse=%d iterations=%zu last_over_first=%.2f\n", int(reuse), all.size(), last_s / first_s);
  return 0;
}
