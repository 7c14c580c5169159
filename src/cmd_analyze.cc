// vprof analyze TRACE_DIR [TRACE_DIR...]: critical paths, the variance tree
// and the top-k factors (docs/analyze.md). More than one trace directory
// merges refinement runs by fractions, the first being the base run.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/report/reporter.h"
#include "command.h"

namespace vprof::cli {
namespace {

struct AnalyzeCliOptions {
  std::vector<std::string> dirs;
  std::string root, json, csv, manifest, callgraph;
  int k = 3;
  double d = 0.05, e = 2.0;
  unsigned threads = 1;
  int bootstrap = 200;
  std::string contribution = "share";
};

// The manifest of a run: an explicit file, else TRACE_DIR/manifest.json when
// it exists, else none (names fall back to fn#ID / site#ID).
Expected<analyzer::Names> names_for(const std::string &dir, const std::string &explicit_file) {
  std::string path = explicit_file;
  if (path.empty()) {
    std::string in_dir = (std::filesystem::path(dir) / "manifest.json").string();
    if (!std::filesystem::exists(in_dir)) return analyzer::Names{};
    path = in_dir;
  }
  return analyzer::load_manifest(path);
}

Status write_file(const std::string &path, const analyzer::Reporter &rep,
                  const analyzer::Analysis &a) {
  if (path == "-") return rep.write(a, std::cout);
  std::ofstream out(path);
  if (!out) return Error{path + ": cannot open for writing"};
  Status s = rep.write(a, out);
  if (!s.ok()) return Error{path + ": " + s.message()};
  return Status::Ok();
}

int run(const AnalyzeCliOptions &o) {
  analyzer::AnalyzeOptions opt;
  opt.root = o.root;
  opt.factors.k = o.k;
  opt.factors.d = o.d;
  opt.factors.e = o.e;
  opt.factors.bootstrap = o.bootstrap;
  opt.factors.paper = o.contribution == "paper";
  opt.threads = o.threads;
  analyzer::Workers pool(o.threads);  // one for every stage of every run
  opt.workers = &pool;
  analyzer::CallGraph cg;
  if (!o.callgraph.empty()) {
    auto g = analyzer::load_callgraph(o.callgraph);
    if (!g) return fail(g.error().message);
    cg = std::move(*g);
    opt.callgraph = &cg;
  }
  std::vector<std::unique_ptr<analyzer::RunAnalysis>> runs;
  for (size_t i = 0; i < o.dirs.size(); ++i) {
    // Streamed: memory holds the merge's window, not the trace. Damage in a
    // header shows at once, damage in the data once it is decoded; either way
    // the run fails naming the first error.
    auto stream = trace::TraceStream::open(o.dirs[i]);
    if (!stream) return fail(stream.error().message);
    if (std::string e = (*stream)->first_error(); !e.empty()) return fail(e);
    auto names = names_for(o.dirs[i], i == 0 ? o.manifest : std::string());
    if (!names) return fail(names.error().message);
    auto r = analyzer::analyze_run(**stream, std::move(*names), opt, int(i));
    if (std::string e = (*stream)->first_error(); !e.empty()) return fail(e);
    if (!r) return fail(r.error().message);
    runs.push_back(std::move(r).value());
  }
  auto a = analyzer::combine(std::move(runs), opt);
  if (!o.json.empty()) {
    Status s = write_file(o.json, *analyzer::make_json_reporter(), *a);
    if (!s.ok()) return fail(s.message());
  }
  if (!o.csv.empty()) {
    Status s = write_file(o.csv, *analyzer::make_csv_reporter(), *a);
    if (!s.ok()) return fail(s.message());
  }
  if (o.json != "-" && o.csv != "-") {
    Status s = analyzer::make_terminal_reporter()->write(*a, std::cout);
    if (!s.ok()) return fail(s.message());
  }
  return 0;
}

Registrar reg("analyze", "critical paths, variance tree and top-k factors of a trace",
              [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<AnalyzeCliOptions>();
  sub.add_option("trace_dir", o->dirs,
                 "trace directory; more than one merges refinement runs (the first is the base)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub.add_option("--root", o->root, "root function (qualified name); default: the interval latency");
  sub.add_option("-k", o->k, "report at most this many factors")->check(CLI::PositiveNumber);
  sub.add_option("-d", o->d, "minimum contribution of a reported factor, a fraction of Var(L)")
      ->check(CLI::Range(0.0, 1.0));
  sub.add_option("-e,--exponent", o->e, "specificity exponent")->check(CLI::Range(0.0, 10.0));
  sub.add_option("--json", o->json, "write the JSON report to FILE ('-': stdout, no table)");
  sub.add_option("--csv", o->csv, "write the per-interval leaf matrix to FILE ('-': stdout)");
  sub.add_option("--manifest", o->manifest,
                 "the instrumenter's manifest (default: TRACE_DIR/manifest.json)");
  sub.add_option("--callgraph", o->callgraph, "`vprof callgraph --json` output, for heights");
  sub.add_option("--threads", o->threads, "worker threads: decoding, merge, critical paths, bootstrap")
      ->check(CLI::Range(1u, 256u));
  sub.add_option("--bootstrap", o->bootstrap, "bootstrap resamples for ci95 (0: none)")
      ->check(CLI::Range(0, 100000));
  sub.add_option("--contribution", o->contribution,
                 "rank factors by `share` (Cov(X, L)/Var(L), adds up) or by the `paper`'s var/2cov terms")
      ->check(CLI::IsMember({"share", "paper"}))
      ->capture_default_str();
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
