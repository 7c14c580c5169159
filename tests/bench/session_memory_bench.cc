// A session's analyses in one process, as `vprof iterate`'s worker makes them:
// each round analyzes the given runs afresh, as an iteration does, after the
// last round's analysis is dropped. Prints the resident set after each
// analysis and after each drop, with the freed memory given back to the
// system at the drop (trim=1, what the session does) or not (trim=0).
// Usage: vprof_bench_session_memory ROOT ROUNDS TRIM TRACE_DIR...
// docs/performance.md, "A session's worker across iterations".
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/names/names.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/util/prefault.h"
#include "analyzer/util/workers.h"
#include "tests/support/resident.h"

using namespace vprof;

int main(int argc, char **argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s ROOT ROUNDS TRIM TRACE_DIR...\n", argv[0]);
    return 2;
  }
  analyzer::keep_freed_memory();  // as src/main.cc
  const std::string root = argv[1];
  const int rounds = std::atoi(argv[2]);
  const bool trim = std::atoi(argv[3]) != 0;
  std::unique_ptr<analyzer::Analysis> kept;
  long first_after = 0, last_after = 0;
  for (int round = 1; round <= rounds; ++round) {
    kept.reset();
    if (trim) analyzer::give_back_freed_memory();
    const long dropped = vprof::testing::resident_kb();
    analyzer::AnalyzeOptions opt;
    opt.root = root;
    opt.threads = 2;
    analyzer::Workers pool(opt.threads);
    opt.workers = &pool;
    std::vector<std::unique_ptr<analyzer::RunAnalysis>> runs;
    for (int i = 4; i < argc; ++i) {
      auto stream = trace::TraceStream::open(argv[i]);
      if (!stream) return std::fprintf(stderr, "%s\n", stream.error().message.c_str()), 2;
      auto names = analyzer::load_manifest(std::string(argv[i]) + "/manifest.json");
      if (!names) return std::fprintf(stderr, "%s\n", names.error().message.c_str()), 2;
      auto ra = analyzer::analyze_run(**stream, std::move(*names), opt, int(runs.size()));
      if (!ra) return std::fprintf(stderr, "%s\n", ra.error().message.c_str()), 2;
      runs.push_back(std::move(*ra));
    }
    kept = analyzer::combine(std::move(runs), opt);
    const long after = vprof::testing::resident_kb();
    if (round == 1) first_after = after;
    last_after = after;
    std::printf("round %d trim=%d: rss before %.2f GB (last analysis dropped), after %.2f GB\n", round, int(trim),
                dropped / 1048576.0, after / 1048576.0);
    std::fflush(stdout);
  }
  std::printf("trim=%d rounds=%d last_after_over_first_after=%.3f\n", int(trim), rounds,
              double(last_after) / double(first_after));
  return 0;
}
