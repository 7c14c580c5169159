// vprof gate --baseline BASE HEAD: exit 0 when the latency's variance and p99
// surely stay within bounds (every interval below its threshold), 1 when the
// lower end of an increase's confidence interval exceeds its threshold
// (naming the factors that grew), 3 when it cannot tell (an interval on both
// sides; --inconclusive pass|fail maps it), 2 on bad input (docs/gate.md).
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "analyzer/util/output_file.h"
#include "diff_common.h"

namespace vprof::cli {
namespace {

struct Opts {
  std::string first_baseline;
  std::vector<std::string> baseline, head;
  std::string max_var = "10%", max_p99 = "5%", junit, name = "vprof gate";
  std::string inconclusive = "inconclusive";  // or "pass", "fail": what an unsure verdict becomes
  DiffCliOptions common;
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

std::string xml_escape(const std::string &s) {
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

int run(Opts o) {
  if (!o.first_baseline.empty()) o.baseline.insert(o.baseline.begin(), o.first_baseline);
  auto error = [&](const std::string &m) {
    if (Status j = write_junit(o.junit, o.name, "error", m, m); !j) fail(j.message());
    return fail(m);
  };
  if (o.junit == "-") return fail("--junit -: the JUnit file is for CI to read; name a file");
  if (o.common.json == "-" && o.common.markdown == "-")
    return fail("--json - and --markdown -: each writes to stdout; at most one report may be '-'");
  // Before any work, and before any JUnit file is written: outputs that
  // cannot be written or would overwrite an input (outputs.h).
  std::vector<std::string> inputs = o.baseline;
  inputs.insert(inputs.end(), o.head.begin(), o.head.end());
  if (Status s = check_outputs({{"--json", o.common.json}, {"--markdown", o.common.markdown}, {"--junit", o.junit}},
                               inputs);
      !s)
    return fail(s.message());
  if (o.baseline.empty()) return error("gate: no baseline: give --baseline FILE or --baseline-runs FILE...");
  if (o.head.empty()) return error("gate: nothing to gate: give the new run (or --runs FILE...)");
  auto mv = percent("--max-var-increase", o.max_var);
  if (!mv) return error(mv.error().message);
  auto mp = percent("--max-p99-increase", o.max_p99);
  if (!mp) return error(mp.error().message);
  auto sides = load_sides(o.baseline, o.head, o.common);
  if (!sides) return error(sides.error().message);
  auto d = run_diff(*sides, o.common);
  if (!d) return error(d.error().message);
  analyzer::GateOptions go{*mv, *mp};
  analyzer::GateResult g = analyzer::decide(*d, go);
  if (Status s = write_reports(*d, o.common, &g); !s.ok()) return error(s.message());
  // Exit 0 pass, 1 regression, 3 inconclusive, unless --inconclusive makes
  // an unsure verdict a pass or a failure (a CI that must be binary). JUnit:
  // a failure, or <skipped> for an inconclusive verdict left as it is.
  int rc = g.verdict == analyzer::Verdict::Regression ? 1 : g.verdict == analyzer::Verdict::Pass ? 0 : 3;
  if (rc == 3 && o.inconclusive != "inconclusive") rc = o.inconclusive == "fail" ? 1 : 0;
  const char *outcome = rc == 1 ? "failure" : rc == 3 ? "skipped" : "pass";
  if (Status j = write_junit(o.junit, o.name, outcome, g.summary, g.summary); !j) return fail(j.message());
  if (g.verdict != analyzer::Verdict::Pass) std::fprintf(stderr, "vprof: %s\n", g.summary.c_str());
  // One run a side: the intervals come from that run's intervals alone and
  // miss how runs differ (minidb's same build against itself at one run a
  // side: variance -44% [-57%, -23%], a "sure" pass; docs/gate.md).
  if (g.runs < 3)
    std::fprintf(stderr,
                 "vprof: warning: %d run%s a side: the intervals do not include how runs of one build "
                 "differ; give the gate 3-5 interleaved runs a side (--baseline-runs, --runs)\n",
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
  sub.add_option("--max-var-increase", o->max_var, "fail when Var(latency) grew by more (lower bound)")
      ->capture_default_str();
  sub.add_option("--max-p99-increase", o->max_p99, "fail when the p99 latency grew by more (lower bound)")
      ->capture_default_str();
  sub.add_option("--junit", o->junit, "write a JUnit XML test case to FILE");
  sub.add_option("--inconclusive", o->inconclusive,
                 "what an inconclusive verdict (an interval on both sides of a threshold) exits as: "
                 "`inconclusive` (3), `pass` (0) or `fail` (1)")
      ->check(CLI::IsMember({"inconclusive", "pass", "fail"}))
      ->capture_default_str();
  sub.add_option("--name", o->name, "the JUnit test case's name")->capture_default_str();
  add_diff_options(sub, o->common);
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
