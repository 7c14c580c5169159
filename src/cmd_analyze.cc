// vprof analyze TRACE_DIR [TRACE_DIR...]: critical paths, the variance tree
// and the top-k factors (docs/analyze.md). More than one trace directory
// merges refinement runs by fractions, the first being the base run.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "analyzer/factors/defaults.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/pipeline/trace_dirs.h"
#include "analyzer/profile/merge.h"
#include "analyzer/profile/profile.h"
#include "analyzer/read/process_files.h"
#include "analyzer/read/trace_reader.h"
#include "analyzer/read/trace_stream.h"
#include "analyzer/report/perfetto.h"
#include "analyzer/report/reporter.h"
#include "common/output_file.h"
#include "command.h"
#include "inputs.h"
#include "outputs.h"

namespace vprof::cli {
namespace {

struct AnalyzeCliOptions {
  std::vector<std::string> dirs;
  std::string root, json, csv, html, manifest, callgraph, save, perfetto;
  int perfetto_intervals = 20;
  int k = analyzer::kDefaultK;
  double d = analyzer::kDefaultD, e = analyzer::kDefaultE;
  unsigned threads = 1;
  int bootstrap = 200;
  std::string contribution = "share";
  std::string fail_on = "never";
  bool by_type = false;
};

// Before any work: no report may be written over a file the analysis reads
// or into a trace directory it reads (outputs.h), two reports may not share
// a file, and at most one goes to stdout.
Status check_outputs(const AnalyzeCliOptions &o) {
  if (o.perfetto == "-")
    return Error{"--perfetto -: the trace events go to a file (ui.perfetto.dev opens files); name one"};
  if ((o.json == "-") + (o.csv == "-") + (o.html == "-") > 1)
    return Error{"--json -, --csv - and --html -: each writes to stdout; at most one report may be '-'"};
  std::vector<std::string> inputs = o.dirs;
  inputs.push_back(o.manifest);
  inputs.push_back(o.callgraph);
  return cli::check_outputs({{"--json", o.json}, {"--csv", o.csv}, {"--html", o.html}, {"--save", o.save},
                             {"--perfetto", o.perfetto}},
                            inputs);
}

// A report to its file, whole or not at all (common/output_file.h), or to stdout.
Status write_file(const std::string &path, const analyzer::Reporter &rep,
                  const analyzer::Analysis &a) {
  if (path == "-") {
    // stdout: what failed is the write, and the system says why (/dev/full:
    // "No space left on device"), in one line.
    errno = 0;
    Status s = rep.write(a, std::cout);
    if (!s) {
      const int err = errno;
      return Error{fmt::format("stdout: cannot write: {}", err ? std::strerror(err) : s.message())};
    }
    return s;
  }
  return write_output(path, [&](std::ostream &out) { return rep.write(a, out); });
}

// --perfetto: the chosen intervals of the base run, from a second pass over
// its trace directory (analyzer/report/perfetto.h).
Status write_perfetto_file(const AnalyzeCliOptions &o, const analyzer::RunAnalysis &run) {
  auto stream = trace::TraceStream::open(o.dirs.front());
  if (!stream) return stream.error();
  const trace::Trace meta = (*stream)->summary();
  auto chosen = analyzer::choose_intervals(run.paths, size_t(o.perfetto_intervals));
  return write_output(o.perfetto, [&](std::ostream &out) {
    return analyzer::write_perfetto((*stream)->sources(), meta, run, chosen, o.threads, out);
  });
}

// Saved profiles, merged into one tree from their sums (analyzer/profile/merge.h):
// each is read, reduced and let go, one at a time.
int run_profiles(const AnalyzeCliOptions &o) {
  for (const auto &[flag, set] : {std::pair<const char *, bool>{"--csv", !o.csv.empty()},
                                  {"--html", !o.html.empty()},
                                  {"--save", !o.save.empty()},
                                  {"--perfetto", !o.perfetto.empty()},
                                  {"--manifest", !o.manifest.empty()},
                                  {"--callgraph", !o.callgraph.empty()},
                                  {"--root", !o.root.empty()}})
    if (set)
      return fail(fmt::format("{}: saved profiles are merged from their trees' sums (root and names included); "
                              "{} needs trace directories",
                              o.dirs.front(), flag));
  analyzer::MergedTree all;
  std::vector<analyzer::PartSums> parts;  // each input's, for the between-run intervals
  std::map<std::string, std::string> seen;  // a file given twice would count its intervals twice
  for (const std::string &path : o.dirs) {
    std::error_code ec;
    const std::string real = std::filesystem::weakly_canonical(path, ec).string();
    if (auto [it, fresh] = seen.emplace(ec ? path : real, path); !fresh)
      return fail(fmt::format("{}: given twice (as {} too): each run's intervals are counted once", path, it->second));
    analyzer::MergedTree one;
    if (analyzer::is_profile_file(path)) {
      auto p = analyzer::load_profile(path);
      if (!p) return fail(p.error().message);
      one = analyzer::reduce_profile(*p);
    } else {
      std::error_code ec;
      if (std::filesystem::is_directory(path, ec))
        return fail(fmt::format("{}: a trace directory among saved profiles: give saved profiles (and merged "
                                "trees' JSON) only, or trace directories only",
                                path));
      std::ifstream in(path, std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) return fail(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
      if (!analyzer::is_merged_json(text)) {
        // A merged tree's JSON cut short (a copy that stopped, a full disk)
        // is said as such, not as some other file.
        if (text.find("\"vprof merged tree\"") != std::string::npos)
          return fail(fmt::format("{}: a merged tree's JSON that does not parse (cut short or damaged)", path));
        return fail(fmt::format("{}: neither a trace directory, a saved profile nor a merged tree's JSON", path));
      }
      auto t = analyzer::parse_merged_json(text);
      if (!t) return fail(fmt::format("{}: {}", path, t.error().message));
      one = std::move(*t);
    }
    if (Status s = analyzer::merge_into(all, one); !s) return fail(fmt::format("{}: {}", path, s.message()));
    parts.push_back(analyzer::part_sums(all, one));
  }
  analyzer::between_run_intervals(all, parts, size_t(o.bootstrap), 1);
  if (!o.json.empty()) {
    Status s = o.json == "-" ? (std::cout << analyzer::merged_json(all, size_t(o.k)), Status::Ok())
                             : write_output(o.json, [&](std::ostream &f) {
                                 f << analyzer::merged_json(all, size_t(o.k));
                                 return Status::Ok();
                               });
    if (!s) return fail(s.message());
    if (o.json == "-") return kExitOk;
  }
  std::cout << analyzer::merged_text(all, size_t(o.k), 0.01);
  return kExitOk;
}

int run(const AnalyzeCliOptions &o) {
  if (Status s = check_outputs(o); !s.ok()) return fail(s.message());
  if (std::any_of(o.dirs.begin(), o.dirs.end(), [](const std::string &d) {
        std::error_code ec;
        return std::filesystem::is_regular_file(d, ec);
      }))
    return run_profiles(o);  // saved profiles or merged trees' JSON
  for (const std::string *in : {&o.manifest, &o.callgraph})
    if (!in->empty())
      if (Status s = regular_input(*in); !s.ok()) return fail(s.message());
  // A session's run whose trace files were deleted (keep_traces: false) is
  // read from its summary, which holds its names and no records.
  for (const auto &[flag, set] : {std::pair<const char *, bool>{"--perfetto", !o.perfetto.empty()},
                                  {"--manifest", !o.manifest.empty()}}) {
    if (set && analyzer::summary_only(o.dirs.front()))
      return fail(fmt::format("{}: its trace files were deleted (the session's keep_traces is false) and only its "
                              "run.summary is left; {} needs the trace: rerun it with keep_traces: true",
                              o.dirs.front(), flag));
  }
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
  auto analysis = analyze_dirs(o.dirs, opt, o.manifest, say_on_stderr);
  if (!analysis) return fail(analysis.error().message);
  auto a = std::move(analysis).value();
  if (!o.json.empty()) {
    Status s = write_file(o.json, *analyzer::make_json_reporter(), *a);
    if (!s.ok()) return fail(s.message());
  }
  if (!o.csv.empty()) {
    Status s = write_file(o.csv, *analyzer::make_csv_reporter(), *a);
    if (!s.ok()) return fail(s.message());
  }
  if (!o.html.empty()) {
    Status s = write_file(o.html, *analyzer::make_html_reporter(), *a);
    if (!s.ok()) return fail(s.message());
  }
  if (!o.save.empty()) {
    Status s = analyzer::save_profile(analyzer::make_profile(*a, analyzer::build_info()), o.save);
    if (!s.ok()) return fail(s.message());
  }
  if (!o.perfetto.empty()) {
    Status s = write_perfetto_file(o, *a->runs.front());
    if (!s.ok()) return fail(s.message());
  }
  if (o.json != "-" && o.csv != "-" && o.html != "-") {
    analyzer::TerminalOptions table;
    table.by_type = o.by_type;
    Status s = analyzer::make_terminal_reporter(table)->write(*a, std::cout);
    if (!s.ok()) return fail(s.message());
  }
  // --fail-on LEVEL: the reports are written either way; the exit status
  // says whether a counter of that level or worse counted anything.
  if (auto at = analyzer::parse_level(o.fail_on)) {
    const analyzer::Level worst = analyzer::worst_level(*a);
    if (worst >= *at) {
      std::cout.flush();
      fmt::print(stderr, "vprof: analyze: data quality is '{}' (--fail-on {}): the \"data quality:\" line "
                         "and the JSON's data_quality say which counters\n",
                 analyzer::level_name(worst), o.fail_on);
      return kExitFinding;
    }
  }
  return kExitOk;
}

Registrar reg("analyze", "critical paths, variance tree and top-k factors of a trace",
              [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<AnalyzeCliOptions>();
  sub.add_option("trace_dir", o->dirs,
                 "trace directory; more than one merges refinement runs (the first is the base); or saved "
                 "profiles (--save) and merged trees' JSON, merged into one tree")
      ->required()
      ->check(CLI::Validator(
          [](std::string &s) -> std::string {
            std::error_code ec;
            if (std::filesystem::is_regular_file(s, ec)) return "";  // run_profiles says what it is
            return existing_directory()(s);
          },
          "DIR|PROFILE"));
  sub.add_option("--root", o->root, "root function (qualified name); default: the interval latency");
  sub.add_option("-k", o->k, "report at most this many factors")->check(whole_at_least(1));
  sub.add_option("-d", o->d, "minimum contribution of a reported factor, a fraction of Var(L)")
      ->check(between(0, 1));
  sub.add_option("-e,--exponent", o->e, "specificity exponent")->check(above(0));
  sub.add_option("--json", o->json, "write the JSON report to FILE ('-': stdout, no table)");
  sub.add_option("--csv", o->csv, "write the per-interval leaf matrix to FILE ('-': stdout)");
  sub.add_option("--html", o->html,
                 "write the HTML report to FILE: one page, no network, opens from disk ('-': stdout)");
  sub.add_option("--save", o->save, "write a saved profile to FILE, for vprof diff and vprof gate");
  auto *perfetto = sub.add_option("--perfetto", o->perfetto,
                 "write the slowest and the median intervals' timelines to FILE as Chrome Trace Event "
                 "JSON (ui.perfetto.dev, chrome://tracing)");
  sub.add_option("--perfetto-intervals", o->perfetto_intervals,
                 "with --perfetto: this many slowest intervals, and as many nearest the median")
      ->check(whole_between(1, 1000))
      ->needs(perfetto);
  sub.add_option("--manifest", o->manifest,
                 "the instrumenter's manifest (default: TRACE_DIR/manifest.json)");
  sub.add_option("--callgraph", o->callgraph, "`vprof callgraph --json` output, for heights");
  sub.add_option("--threads", o->threads, "worker threads: decoding, merge, critical paths, bootstrap")
      ->check(whole_between(1, 256));
  sub.add_option("--bootstrap", o->bootstrap, "bootstrap resamples for ci95 (0: none)")
      ->check(whole_between(0, 100000));
  sub.add_option("--contribution", o->contribution,
                 "rank factors by `share` (Cov(X, L)/Var(L), adds up) or by the `paper`'s var/2cov terms")
      ->check(CLI::IsMember({"share", "paper"}));
  sub.add_option("--fail-on", o->fail_on,
                 "exit 1 when a data-quality counter of this level or worse counted anything: "
                 "`loss` (records, threads or paths lost), `warning` (also odd data a rule handled), "
                 "`never`")
      ->check(CLI::IsMember({"never", "warning", "loss"}));
  sub.add_flag("--by-type", o->by_type,
               "also print the variance tree within each interval type (the JSON always has them)");
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
