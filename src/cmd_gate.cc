// vprof gate --baseline BASE HEAD: exit 0 when the latency's variance and p99
// surely stay within bounds (every interval below its threshold), 1 when the
// lower end of an increase's confidence interval exceeds its threshold
// (naming the factors that grew), 3 when it cannot tell (an interval on both
// sides, or one run a side; --inconclusive pass|fail maps it), 2 on bad input
// (docs/gate.md).
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "analyzer/read/recording.h"
#include "common/output_file.h"
#include "common/process.h"
#include "inputs.h"
#include "diff_common.h"
#include "gate_history.h"

namespace vprof::cli {

static std::string xml_escape(const std::string &s) {
  std::string out;
  for (char c : s) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  return out;
}

// One JUnit test case: passed, failed (a regression) or in error. A CI job
// reads this file for the verdict: one that cannot be written is an error.
Status write_junit(const std::string &path, const std::string &name, const char *outcome,
                   const std::string &message, const std::string &details) {
  if (path.empty()) return Status::Ok();
  return write_output(path, [&](std::ostream &f) {
  bool failed = std::string(outcome) == "failure", error = std::string(outcome) == "error",
       skipped = std::string(outcome) == "skipped";
  f << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << fmt::format("<testsuites><testsuite name=\"vprof\" tests=\"1\" failures=\"{}\" errors=\"{}\">\n",
                   failed ? 1 : 0, error ? 1 : 0)
    << fmt::format("  <testcase classname=\"vprof.gate\" name=\"{}\">\n", xml_escape(name));
  if (failed || error || skipped)
    f << fmt::format("    <{} message=\"{}\">{}</{}>\n", outcome, xml_escape(message), xml_escape(details), outcome);
  else
    f << fmt::format("    <system-out>{}</system-out>\n", xml_escape(message));
  f << "  </testcase>\n</testsuite></testsuites>\n";
  return Status::Ok();
  });
}

namespace {

struct Opts {
  std::string first_baseline;
  std::vector<std::string> baseline, head;
  // The gate runs the workloads itself: both builds
  // alternately, until the verdict is decided or max_runs a side.
  std::string base_cmd, head_cmd, work_dir;
  int min_runs = 3, max_runs = 10;
  int timeout = 0;  // seconds a workload run may take (0: no limit)
  std::string max_var = "10%", max_p99 = "5%", junit, name = "vprof gate";
  std::string inconclusive = "inconclusive";  // or "pass", "fail": what an unsure verdict becomes
  DiffCliOptions common;
  // Against a history of main (gate_history.h).
  std::string history, alpha = "1%";
  std::string max_level;  // "": HistoryOptions' default (with --history only)
  size_t history_runs = 20, history_keep = 60;
  bool record = false, changes = false;
};

// "10%", "10" (percent) -> 0.10; what was wrong otherwise.
Expected<double> percent(const std::string &flag, const std::string &text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char *end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end == t.c_str() || *end != '\0' || !(v >= 0))
    return Error{fmt::format("{}: '{}' is not a percentage (as 10% or 10)", flag, text)};
  return v / 100;
}

// One run of `cmd` recording into WORK/SIDE-N (its output in WORK/SIDE-N.log): its profile.
Expected<analyzer::Profile> record(const std::string &cmd, const char *side, int n, const std::string &work,
                                   const DiffCliOptions &c, int timeout) {
  namespace fs = std::filesystem;
  const std::string trace = fmt::format("{}/{}-{}", work, side, n), log = trace + ".log";
  std::error_code ec;
  fs::remove_all(trace, ec);
  // Prepared, locked and summed up as `vprof run` does (analyzer/read/recording.h).
  auto rec = trace::Recording::start(trace);
  if (!rec) return rec.error();
  auto rc = run_shell(cmd, ".", log, (*rec)->env(), unsigned(timeout));
  if (!rc) return rc.error();
  const trace::Recording::Outcome out = (*rec)->finish(say_on_stderr);
  if (out.moved)
    return Error{fmt::format("{}: moved or replaced while --{}-cmd's run {} recorded; its output is in {}", trace,
                             side, n, log)};
  if (*rc == kTimedOut && timeout > 0)
    return Error{fmt::format("--{}-cmd did not finish in {} s (--timeout) in its run {}; it was stopped; its output "
                             "is in {}",
                             side, timeout, n, log)};
  if (*rc != 0)
    return Error{fmt::format("--{}-cmd failed (exit {}) in its run {}; its output is in {}", side, *rc, n, log)};
  auto p = load_input(trace, c.root, c.threads);
  if (!p) return Error{fmt::format("--{}-cmd's run {}: {}", side, n, p.error().message)};
  return p;
}

// Runs both builds in turn (base then head, then head then base: a drift of
// the machine falls on both sides alike), from min_runs a side on deciding
// after each pair, until the verdict is pass or regression or max_runs a
// side are spent: the loop a CI would otherwise script around `vprof gate`.
Status run_workloads(const Opts &o, const analyzer::GateOptions &go, Sides &sides,
                     std::optional<analyzer::Diff> &d, analyzer::GateResult &g) {
  std::fprintf(stderr, "vprof: gate: runs recorded in %s (%d to %d a side)\n", o.work_dir.c_str(), o.min_runs,
               o.max_runs);
  for (int n = 1; n <= o.max_runs; ++n) {
    for (int k = 0; k < 2; ++k) {
      const bool base = (k == 0) == (n % 2 == 1);
      auto p = record(base ? o.base_cmd : o.head_cmd, base ? "base" : "head", n, o.work_dir, o.common, o.timeout);
      if (!p) return Error{p.error().message};
      (base ? sides.base : sides.head).push_back(std::move(*p));
    }
    if (n < o.min_runs) continue;
    auto diff = run_diff(sides, o.common);
    if (!diff) return Error{diff.error().message};
    d = std::move(*diff);
    g = analyzer::decide(*d, go);
    std::fprintf(stderr, "vprof: gate: %d run%s a side: %s\n", n, n == 1 ? "" : "s", g.summary.c_str());
    if (g.verdict != analyzer::Verdict::Inconclusive) break;
  }
  return Status::Ok();
}

// The runs' directory: --work-dir, new or empty, or a new one in $TMPDIR.
Status prepare_work_dir(Opts &o) {
  if (o.work_dir.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/vprof-gate-XXXXXX";
    if (!mkdtemp(dir.data())) return Error{fmt::format("{}: cannot create: {}", dir, std::strerror(errno))};
    o.work_dir = dir;
    return Status::Ok();
  }
  std::error_code ec;
  std::filesystem::create_directories(o.work_dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create the --work-dir: {}", o.work_dir, ec.message())};
  // Each run replaces WORK/base-N and WORK/head-N: never in a directory
  // that holds anything (a trace, a saved profile).
  if (!std::filesystem::is_empty(o.work_dir, ec))
    return Error{fmt::format("{}: the --work-dir is not empty; give a new or empty directory", o.work_dir)};
  return Status::Ok();
}

int run(Opts o) {
  if (!o.first_baseline.empty()) o.baseline.insert(o.baseline.begin(), o.first_baseline);
  auto error = [&](const std::string &m) {
    if (Status j = write_junit(o.junit, o.name, "error", m, m); !j) fail(j.message());
    return fail(m);
  };
  if (o.junit == "-") return fail("--junit -: the JUnit file is for CI to read; name a file");
  if ((o.record || o.changes || !o.max_level.empty()) && o.history.empty())
    return fail(fmt::format("gate: {} goes with --history DIR",
                            o.record ? "--record" : o.changes ? "--changes" : "--max-level-increase"));
  if (!o.history.empty()) {
    if (!o.baseline.empty() || !o.base_cmd.empty())
      return fail("gate: --history is the baseline: give no --baseline, --baseline-runs or --base-cmd beside it");
    if (!o.head_cmd.empty() && !o.head.empty())
      return fail("gate: --head-cmd records the new runs; give no runs beside it");
    if (!o.head_cmd.empty() && o.changes) return fail("gate: --changes judges no new runs; give no --head-cmd");
    auto mv = percent("--max-var-increase", o.max_var);
    if (!mv) return fail(mv.error().message);
    auto mp = percent("--max-p99-increase", o.max_p99);
    if (!mp) return fail(mp.error().message);
    auto alpha = percent("--alpha", o.alpha);
    if (!alpha) return fail(alpha.error().message);
    if (!(*alpha > 0 && *alpha < 0.5)) return fail(fmt::format("--alpha: '{}' is not between 0% and 50%", o.alpha));
    HistoryCliOptions h;
    h.dir = o.history;
    h.head = o.head;
    if (!o.head_cmd.empty()) {
      // The new build's workload, --min-runs times: each run saved as
      // WORK/head-N.vprof, judged as given runs are.
      if (Status s = prepare_work_dir(o); !s) return fail(s.message());
      std::fprintf(stderr, "vprof: gate: %d runs of --head-cmd recorded in %s\n", o.min_runs, o.work_dir.c_str());
      for (int n = 1; n <= o.min_runs; ++n) {
        auto p = record(o.head_cmd, "head", n, o.work_dir, o.common, o.timeout);
        if (!p) return fail(p.error().message);
        const std::string saved = fmt::format("{}/head-{}.vprof", o.work_dir, n);
        if (Status s = analyzer::save_profile(*p, saved); !s) return fail(s.message());
        h.head.push_back(saved);
      }
    }
    h.stats.history_runs = o.history_runs;
    h.stats.alpha = *alpha;
    h.stats.max_var_increase = *mv;
    h.stats.max_p99_increase = *mp;
    if (!o.max_level.empty()) {  // else HistoryOptions' default
      auto ml = percent("--max-level-increase", o.max_level);
      if (!ml) return fail(ml.error().message);
      h.stats.max_level_increase = *ml;
    }
    h.stats.seed = o.common.diff.seed;
    h.keep = o.history_keep;
    h.record = o.record;
    h.changes = o.changes;
    h.json = o.common.json;
    h.markdown = o.common.markdown;
    h.junit = o.junit;
    h.name = o.name;
    h.root = o.common.root;
    h.threads = o.common.threads;
    return run_history(h);
  }
  if (o.common.json == "-" && o.common.markdown == "-")
    return fail("--json - and --markdown -: each writes to stdout; at most one report may be '-'");
  // Before any work, and before any JUnit file is written: outputs that
  // cannot be written or would overwrite an input (outputs.h).
  const bool workloads = !o.base_cmd.empty() || !o.head_cmd.empty();
  if (workloads) {
    if (o.base_cmd.empty() || o.head_cmd.empty())
      return fail("gate: --base-cmd and --head-cmd go together: each runs one build's workload");
    if (!o.baseline.empty() || !o.head.empty())
      return fail("gate: --base-cmd/--head-cmd record the runs; give no baseline or runs beside them");
    if (o.min_runs > o.max_runs)
      return fail(fmt::format("gate: --min-runs {} is more than --max-runs {}", o.min_runs, o.max_runs));
    if (Status s = prepare_work_dir(o); !s) return fail(s.message());
  }
  std::vector<std::string> inputs = o.baseline;
  inputs.insert(inputs.end(), o.head.begin(), o.head.end());
  if (workloads) inputs.push_back(o.work_dir);
  if (Status s = check_outputs({{"--json", o.common.json}, {"--markdown", o.common.markdown}, {"--junit", o.junit}},
                               inputs);
      !s)
    return fail(s.message());
  if (!workloads && o.baseline.empty())
    return error("gate: no baseline: give --baseline FILE or --baseline-runs FILE... (or --base-cmd CMD)");
  if (!workloads && o.head.empty()) return error("gate: nothing to gate: give the new run (or --runs FILE...)");
  auto mv = percent("--max-var-increase", o.max_var);
  if (!mv) return error(mv.error().message);
  auto mp = percent("--max-p99-increase", o.max_p99);
  if (!mp) return error(mp.error().message);
  analyzer::GateOptions go{*mv, *mp};
  Sides sides;
  std::optional<analyzer::Diff> d;
  analyzer::GateResult g;
  if (workloads) {
    if (Status s = run_workloads(o, go, sides, d, g); !s) return error(s.message());
  } else {
    auto loaded = load_sides(o.baseline, o.head, o.common);
    if (!loaded) return error(loaded.error().message);
    sides = std::move(*loaded);
    auto diff = run_diff(sides, o.common);
    if (!diff) return error(diff.error().message);
    d = std::move(*diff);
    g = analyzer::decide(*d, go);
  }
  if (Status s = write_reports(*d, o.common, &g); !s.ok()) return error(s.message());
  // Exit 0 pass, 1 regression, 3 inconclusive, unless --inconclusive makes
  // an unsure verdict a pass or a failure (a CI that must be binary). JUnit:
  // a failure, or <skipped> for an inconclusive verdict left as it is.
  int rc = g.verdict == analyzer::Verdict::Regression ? kExitFinding
           : g.verdict == analyzer::Verdict::Pass     ? kExitOk
                                                      : kExitInconclusive;
  if (rc == kExitInconclusive && o.inconclusive != "inconclusive")
    rc = o.inconclusive == "fail" ? kExitFinding : kExitOk;
  const char *outcome = rc == kExitFinding ? "failure" : rc == kExitInconclusive ? "skipped" : "pass";
  if (Status j = write_junit(o.junit, o.name, outcome, g.summary, g.summary); !j) return fail(j.message());
  if (g.verdict != analyzer::Verdict::Pass) std::fprintf(stderr, "vprof: %s\n", g.summary.c_str());
  // Few runs a side: the intervals miss (at one run) or underrate how runs
  // differ (minidb's same build against itself at one run a side: variance
  // -44% [-57%, -23%], a "sure" pass; docs/gate.md). Where the verdict was
  // made inconclusive for it (g.one_run) its line has said so already.
  if (g.runs < 3 && !g.one_run)
    std::fprintf(stderr,
                 "vprof: warning: %d run%s a side: the intervals do not include how runs of one build "
                 "differ; give the gate 3-5 interleaved runs a side (--baseline-runs, --runs; --min-runs with "
                 "--base-cmd)\n",
                 g.runs, g.runs == 1 ? "" : "s");
  return rc;
}

Registrar reg("gate", "CI gate: exit 1 when latency variance or p99 grew beyond bounds, naming the factor",
              [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<Opts>();
  sub.add_option("--baseline", o->first_baseline, "the baseline: a saved profile or trace directory");
  sub.add_option("--baseline-runs", o->baseline, "more baseline runs (interleaved with the new ones)")
      ->expected(1, 1000);
  sub.add_option("new", o->head, "the run to gate: a saved profile or trace directory");
  sub.add_option("--runs", o->head, "more runs of the new build")->expected(1, 1000);
  sub.add_option("--max-var-increase", o->max_var, "fail when Var(latency) grew by more (lower bound)");
  sub.add_option("--max-p99-increase", o->max_p99, "fail when the p99 latency grew by more (lower bound)");
  sub.add_option("--junit", o->junit, "write a JUnit XML test case to FILE");
  sub.add_option("--inconclusive", o->inconclusive,
                 "what an inconclusive verdict (an interval on both sides of a threshold, or one run a "
                 "side) exits as: `inconclusive` (3), `pass` (0) or `fail` (1)")
      ->check(CLI::IsMember({"inconclusive", "pass", "fail"}));
  sub.add_option("--name", o->name, "the JUnit test case's name");
  sub.add_option("--base-cmd", o->base_cmd,
                 "record the baseline's runs by running CMD (with VPROF_TRACE_DIR set), in turn with --head-cmd");
  sub.add_option("--head-cmd", o->head_cmd, "record the new build's runs by running CMD");
  sub.add_option("--min-runs", o->min_runs,
                 "with --base-cmd: runs a side before the first verdict; with --history and --head-cmd: the new "
                 "build's runs")
      ->check(whole_between(1, 1000));
  sub.add_option("--max-runs", o->max_runs, "with --base-cmd: runs a side at most, while inconclusive")
      ->check(whole_between(1, 1000));
  sub.add_option("--timeout", o->timeout,
                 "with --base-cmd: seconds one workload run may take; past it the run is stopped (its whole "
                 "process group: SIGTERM, then SIGKILL) and the gate fails saying so (0: no limit)")
      ->check(whole_between(0, 86400))
      ->type_name("SECONDS");
  sub.add_option("--work-dir", o->work_dir, "with --base-cmd: where the runs' traces and logs go (default: a new "
                                            "directory in $TMPDIR)");
  sub.add_option("--history", o->history,
                 "judge the new runs against a history of main's runs kept in DIR (each a saved profile): a "
                 "permutation test over the history's runs and the new ones (docs/gate.md)")
      ->type_name("DIR");
  sub.add_option("--history-runs", o->history_runs, "with --history: the last N runs of the history are the "
                                                     "reference")
      ->check(whole_between(3, 100000));
  sub.add_option("--history-keep", o->history_keep, "with --record: the history keeps its newest N runs")
      ->check(whole_between(3, 100000));
  sub.add_flag("--record", o->record, "with --history: add the new runs to the history after judging them (on main)");
  sub.add_flag("--changes", o->changes,
               "with --history: list the runs where the latency's distribution (p50, p90, p99) stepped along the "
               "history, and the factor that moved");
  sub.add_option("--alpha", o->alpha, "with --history: the false-alarm rate of one decision (default 1%)");
  sub.add_option("--max-level-increase", o->max_level,
                 fmt::format("with --history: p90 and p99 fail only when they grew by more (default {:.0f}%: a slow "
                             "spell of a shared host moved them less; lower it on a runner that holds still; "
                             "docs/gate.md)",
                             100 * analyzer::HistoryOptions{}.max_level_increase));
  add_diff_options(sub, o->common);
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
