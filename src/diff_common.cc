#include "diff_common.h"

#include <fstream>
#include <iostream>

#include "analyzer/diff/diff_report.h"
#include "common/output_file.h"
#include "inputs.h"

namespace vprof::cli {

void add_diff_options(CLI::App &sub, DiffCliOptions &o) {
  sub.add_option("--root", o.root, "root function for trace directories (a saved profile keeps its own)");
  sub.add_option("--bootstrap", o.diff.bootstrap, "bootstrap resamples per side for the intervals (0: none)")
      ->check(whole_between(0, 100000));
  sub.add_option("--confidence", o.diff.confidence, "level of every interval (two-sided)")
      ->check(number_check("between 0.5 and 0.999", [](double v) { return v >= 0.5 && v <= 0.999; }));
  sub.add_option("--seed", o.diff.seed, "bootstrap seed");
  sub.add_option("-k", o.diff.k, "factors of the change to select")->check(whole_at_least(1));
  sub.add_option("-d", o.diff.d, "a selected factor's |change| is at least this fraction of Var_base")
      ->check(between(0, 1));
  sub.add_option("--threads", o.threads, "worker threads when a trace directory is analyzed")
      ->check(whole_between(1, 256));
  sub.add_option("--nodes", o.nodes, "nodes listed in the table")->check(whole_at_least(0));
  sub.add_option("--json", o.json, "write the JSON report to FILE ('-': stdout, and no table)");
  sub.add_option("--markdown", o.markdown,
                 "write a Markdown report to FILE (a PR comment, a CI summary; '-': stdout, no table)");
}

Expected<Sides> load_sides(const std::vector<std::string> &base, const std::vector<std::string> &head,
                           const DiffCliOptions &o) {
  if (o.json == "-" && o.markdown == "-")
    return Error{"--json - and --markdown -: each writes to stdout; at most one report may be '-'"};
  std::vector<std::string> inputs = base;
  inputs.insert(inputs.end(), head.begin(), head.end());
  if (Status s = check_outputs({{"--json", o.json}, {"--markdown", o.markdown}}, inputs); !s)
    return Error{s.message()};
  Sides s;
  for (const std::string &p : base) {
    auto x = load_input(p, o.root, o.threads);
    if (!x) return Error{"baseline " + x.error().message};
    s.base.push_back(std::move(*x));
  }
  for (const std::string &p : head) {
    auto x = load_input(p, o.root, o.threads);
    if (!x) return x.error();
    s.head.push_back(std::move(*x));
  }
  return s;
}

Expected<analyzer::Diff> run_diff(const Sides &s, const DiffCliOptions &o) {
  std::vector<const analyzer::Profile *> b, h;
  for (const auto &p : s.base) b.push_back(&p);
  for (const auto &p : s.head) h.push_back(&p);
  return analyzer::diff_profiles(b, h, o.diff);
}

Status write_reports(const analyzer::Diff &d, const DiffCliOptions &o, const analyzer::GateResult *gate) {
  if (!o.json.empty()) {
    std::string text = analyzer::diff_json(d, gate).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (o.json == "-") {
      std::cout << text;
    } else if (Status s = write_output(o.json, [&](std::ostream &f) {
                 f << text;
                 return Status::Ok();
               });
               !s) {
      return s;
    }
  }
  if (o.markdown == "-") {
    analyzer::write_diff_markdown(d, std::cout, gate, o.nodes);
  } else if (!o.markdown.empty()) {
    Status s = write_output(o.markdown, [&](std::ostream &f) {
      analyzer::write_diff_markdown(d, f, gate, o.nodes);
      return Status::Ok();
    });
    if (!s) return s;
  }
  if (o.json != "-" && o.markdown != "-") analyzer::write_diff_text(d, std::cout, gate, o.nodes);
  return Status::Ok();
}

}  // namespace vprof::cli
