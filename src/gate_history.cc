// vprof gate --history DIR (gate_history.h).
#include "gate_history.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/output_file.h"
#include "command.h"
#include "inputs.h"
#include "outputs.h"

namespace vprof::cli {
namespace {

namespace fs = std::filesystem;

// A history run's file name, DIR/run-NNNNNN.vprof: the one rule both the
// writer and the reader keep.
std::string history_name(long n) { return fmt::format("run-{:06d}.vprof", n); }

// The history's files, oldest first.
std::vector<std::pair<long, std::string>> history_files(const std::string &dir) {
  std::vector<std::pair<long, std::string>> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const long n = name.size() > 4 ? std::strtol(name.c_str() + 4, nullptr, 10) : 0;
    if (n > 0 && name == history_name(n)) out.push_back({n, e.path().string()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

Expected<std::vector<analyzer::RunSummary>> load_history(const std::string &dir, size_t last) {
  std::vector<analyzer::RunSummary> out;
  auto files = history_files(dir);
  const size_t from = files.size() > last ? files.size() - last : 0;
  for (size_t i = from; i < files.size(); ++i) {
    auto p = analyzer::load_profile(files[i].second);
    if (!p) return Error{p.error().message};  // it names the file
    for (auto &s : analyzer::summarize(*p)) out.push_back(std::move(s));
  }
  return out;
}

// Copies the head's profiles into the history after its newest, then keeps
// the newest `keep`. Each is written whole under a temporary name first.
Status record(const std::string &dir, const std::vector<analyzer::Profile> &head, size_t keep) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create the history: {}", dir, ec.message())};
  auto files = history_files(dir);
  long next = files.empty() ? 1 : files.back().first + 1;
  for (const analyzer::Profile &p : head) {
    const std::string path = dir + "/" + history_name(next++);
    if (Status s = analyzer::save_profile(p, path); !s) return s;
  }
  files = history_files(dir);
  for (size_t i = 0; i + keep < files.size(); ++i) fs::remove(files[i].second, ec);
  return Status::Ok();
}

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

// A factor's share of Var(L), history against head, in points, and what these
// runs could have caught (reported, not gated: HistoryVerdict::shares).
std::string share_line(const analyzer::HistoryCheck &c) {
  return fmt::format("{}: {:.1f}% -> {:.1f}% of Var(latency), {:+.1f} points (p {:.3f}; {})", c.what, 100 * c.history,
                     100 * c.head, 100 * c.change, c.p,
                     std::isinf(c.detectable) ? "no increase could be caught"
                                              : fmt::format("an increase of {:.1f} points would be caught", 100 * c.detectable));
}

std::string short_commit(const std::string &c) { return c.empty() ? "?" : c.substr(0, 12); }

// A report to its file whole, or to stdout ('-').
Status write_text(const std::string &path, const std::string &text) {
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    return Status::Ok();
  }
  return write_output(path, [&](std::ostream &f) {
    f << text;
    return Status::Ok();
  });
}

// The verdict as Markdown, for a CI's job summary or a pull request's comment.
std::string markdown(const analyzer::HistoryVerdict &v, const std::string &name) {
  auto value = [](const analyzer::HistoryCheck &c) {
    return [&c](double x) {
      switch (c.unit) {
        case analyzer::Unit::ns2: return fmt::format("{:.4g} ms²", x / 1e12);
        case analyzer::Unit::ratio: return fmt::format("{:.3f}", x);
        case analyzer::Unit::ns: break;
      }
      return fmt::format("{:.3f} ms", x / 1e6);
    };
  };
  std::string md = fmt::format("### vprof gate: {} — {}\n\n{}\n\n", v.regression ? "❌ regression" : "✅ pass",
                               name.empty() ? "vprof gate" : name, v.summary);
  md += fmt::format("| quantity | history ({} runs) | new ({} runs) | change | p | would catch |\n", v.history_runs,
                    v.head_runs);
  md += "|---|---:|---:|---:|---:|---:|\n";
  for (const auto &c : v.checks) {
    if (c.outliers) {
      md += fmt::format("| outlier runs (p99 > {:.3f} ms) | {:.0f} of {} | {:.0f} of {} | | {:.3f} | {} |\n",
                        c.limit / 1e6, c.history * double(v.history_runs), v.history_runs,
                        c.head * double(v.head_runs), v.head_runs, c.p,
                        c.detectable > double(v.head_runs) ? "none" : fmt::format("{:.0f} of {}", c.detectable, v.head_runs));
      continue;
    }
    const auto f = value(c);
    md += fmt::format("| {}{} | {} | {} | {} | {:.3f} | {} |\n", c.what, c.gated ? "" : " (reported)", f(c.history),
                      f(c.head), pct(c.change), c.p, std::isinf(c.detectable) ? "none" : pct(c.detectable));
  }
  if (!v.shares.empty()) {
    md += "\nShares of Var(latency), reported, not gated:\n\n";
    for (const auto &c : v.shares) md += "- " + share_line(c) + "\n";
  }
  if (!v.moved.empty()) {
    md += "\nWhat moved (covariance with the latency, medians of runs):\n\n";
    for (const auto &m : v.moved)
      md += fmt::format("- `{}`: {:.0f}% of the variance's change\n", m.factor, 100 * m.part);
  }
  md += fmt::format("\n{}; a check fails at p ≤ {:.4g} (the checks' false-alarm rate together: --alpha).\n",
                    v.detectable, v.level);
  return md;
}

int changes(const HistoryCliOptions &o) {
  auto h = load_history(o.dir, SIZE_MAX);
  if (!h) return fail(h.error().message);
  if (h->size() < 2 * o.stats.min_segment)
    return fail(fmt::format("{}: the history holds {} runs: change points need at least {}", o.dir, h->size(),
                            2 * o.stats.min_segment));
  const auto cps = analyzer::change_points(*h, o.stats);
  std::printf("vprof gate: %zu runs in %s, %zu change point%s (alpha %.3g)\n", h->size(), o.dir.c_str(),
              cps.size(), cps.size() == 1 ? "" : "s", o.stats.alpha);
  for (const auto &c : cps) {
    std::string steps;
    for (const auto &[what, step] : c.steps) steps += fmt::format("{}{} {}", steps.empty() ? "" : ", ", what, pct(step));
    std::printf("  run %zu (commit %s): %s (p %.3f)", c.at + 1, short_commit(c.commit).c_str(), steps.c_str(), c.p);
    if (!c.factor.empty())
      std::printf("; %.0f%% of the variance's change from %s", 100 * c.factor_part, c.factor.c_str());
    std::printf("\n");
  }
  if (!o.markdown.empty()) {
    std::string md = fmt::format("### vprof gate: change points of {} ({} runs)\n\n", o.dir, h->size());
    if (cps.empty()) md += "No step (alpha " + fmt::format("{:.3g}", o.stats.alpha) + ").\n";
    for (const auto &c : cps) {
      std::string steps;
      for (const auto &[what, step] : c.steps) steps += fmt::format("{}{} {}", steps.empty() ? "" : ", ", what, pct(step));
      md += fmt::format("- run {} (commit `{}`): {} (p {:.3f}){}\n", c.at + 1, short_commit(c.commit), steps, c.p,
                        c.factor.empty() ? "" : fmt::format("; {:.0f}% of the variance's change from `{}`",
                                                            100 * c.factor_part, c.factor));
    }
    if (Status s = write_text(o.markdown, md); !s) return fail(s.message());
  }
  if (!o.json.empty()) {
    nlohmann::json j;
    j["runs"] = h->size();
    j["changes"] = nlohmann::json::array();
    for (const auto &c : cps) {
      nlohmann::json steps;
      for (const auto &[what, step] : c.steps) steps[what] = step;
      j["changes"].push_back({{"run", c.at + 1}, {"commit", c.commit}, {"steps", steps}, {"p", c.p},
                              {"factor", c.factor}, {"factor_part", c.factor_part}});
    }
    if (Status s = write_output(o.json, [&](std::ostream &f) {
          f << j.dump(2) << "\n";
          return Status::Ok();
        });
        !s)
      return fail(s.message());
  }
  return kExitOk;
}

}  // namespace

int run_history(const HistoryCliOptions &o) {
  // Before any work, in both uses: no output is an input or inside the history.
  std::vector<std::string> inputs = o.head;
  inputs.push_back(o.dir);
  if (Status s = check_outputs({{"--json", o.json}, {"--junit", o.junit}, {"--markdown", o.markdown}}, inputs); !s)
    return fail(s.message());
  if (o.changes) return changes(o);
  if (o.head.empty()) return fail("gate: --history: nothing to judge: give the new build's runs (--runs FILE...)");
  std::vector<analyzer::Profile> head;
  std::vector<analyzer::RunSummary> head_runs;
  for (const std::string &path : o.head) {
    auto p = load_input(path, o.root, o.threads);
    if (!p) return fail(p.error().message);
    for (auto &s : analyzer::summarize(*p)) head_runs.push_back(std::move(s));
    head.push_back(std::move(*p));
  }
  std::error_code ec;
  if (!fs::exists(o.dir, ec) && !o.record)
    return fail(fmt::format("{}: no such history (make it with --record on main's runs)", o.dir));
  auto history = load_history(o.dir, o.stats.history_runs);
  if (!history) return fail(history.error().message);
  int rc = kExitOk;
  if (history->size() < 3 && o.record) {
    std::printf("vprof gate: the history %s holds %zu runs: nothing to judge against yet; recording %zu\n",
                o.dir.c_str(), history->size(), head.size());
  } else {
    auto v = analyzer::judge(*history, head_runs, o.stats);
    if (!v) return fail(fmt::format("{}: {}", o.dir, v.error().message));
    std::printf("vprof gate: %zu new run%s against the last %zu of %s (a check fails at p <= %.4g: --alpha %.3g "
                "over the checks together)\n",
                v->head_runs, v->head_runs == 1 ? "" : "s", v->history_runs, o.dir.c_str(), v->level, o.stats.alpha);
    std::printf("  %-9s %14s %14s %9s %7s %14s %11s\n", "quantity", "history", "new", "change", "p", "limit",
                "detectable");
    for (const auto &c : v->checks) {
      if (c.outliers) {  // counts of runs whose p99 is beyond the limit
        auto of = [](double rate, size_t runs) { return fmt::format("{:.0f} of {}", rate * double(runs), runs); };
        std::printf("  %-9s %14s %14s %9s %7.3f %14s %11s%s\n", "outliers", of(c.history, v->history_runs).c_str(),
                    of(c.head, v->head_runs).c_str(), "", c.p, fmt::format("p99>{:.4g}", c.limit).c_str(),
                    c.detectable > double(v->head_runs)  // not even every head run an outlier would do
                        ? "none"
                        : of(c.detectable / double(v->head_runs), v->head_runs).c_str(),
                    c.regression ? "  REGRESSION" : "");
        continue;
      }
      const bool none = std::isinf(c.detectable);  // too few runs to catch anything
      std::printf("  %-9s %14.4g %14.4g %9s %7.3f %14s %11s%s\n", c.what.c_str(), c.history, c.head,
                  pct(c.change).c_str(), c.p, none ? "-" : fmt::format("{:.4g}", c.limit).c_str(),
                  none ? "none" : pct(c.detectable).c_str(),
                  c.gated ? (c.regression ? "  REGRESSION" : "") : "  (reported, not gated)");
    }
    for (const auto &c : v->shares)
      std::printf("  share: %s\n", share_line(c).c_str());
    for (const auto &m : v->moved)
      std::printf("  moved: %s: Cov with the latency %.4g -> %.4g ns^2 (%.0f%% of the variance's change)\n",
                  m.factor.c_str(), m.history, m.head, 100 * m.part);
    std::printf("%s\n%s\n", v->summary.c_str(), v->detectable.c_str());
    rc = v->regression ? kExitFinding : kExitOk;
    if (!o.json.empty()) {
      nlohmann::json j;
      j["verdict"] = v->regression ? "regression" : "pass";
      j["history_runs"] = v->history_runs;
      j["head_runs"] = v->head_runs;
      j["level"] = v->level;
      j["summary"] = v->summary;
      j["detectable"] = v->detectable;
      j["shifted_alike"] = !v->shifted.empty();  // the whole distribution moved alike (HistoryVerdict::shifted)
      j["levels_moved"] = v->levels;             // p90's or p99's move short of --max-level-increase ("" when none)
      for (const auto &c : v->checks)
        j["checks"].push_back({{"quantity", c.what}, {"gated", c.gated}, {"history", c.history}, {"new", c.head},
                               {"change", c.change}, {"p", c.p}, {"limit", c.limit},
                               {"detectable", c.detectable}, {"threshold", c.threshold},
                               {"regression", c.regression}, {"moved", c.moved}});
      for (const auto &c : v->shares)
        j["shares"].push_back({{"factor", c.what}, {"history", c.history}, {"new", c.head}, {"change", c.change},
                               {"p", c.p}, {"detectable", c.detectable}});
      for (const auto &m : v->moved)
        j["moved"].push_back({{"factor", m.factor}, {"history", m.history}, {"new", m.head}, {"part", m.part}});
      if (Status s = write_output(o.json, [&](std::ostream &f) {
            f << j.dump(2) << "\n";
            return Status::Ok();
          });
          !s)
        return fail(s.message());
    }
    if (!o.markdown.empty())
      if (Status s = write_text(o.markdown, markdown(*v, o.name)); !s) return fail(s.message());
    if (Status s = write_junit(o.junit, o.name, rc == kExitFinding ? "failure" : "pass", v->summary, v->summary); !s)
      return fail(s.message());
    if (rc == kExitFinding) std::fprintf(stderr, "vprof: %s\n", v->summary.c_str());
  }
  if (o.record) {
    if (Status s = record(o.dir, head, o.keep); !s) return fail(s.message());
    std::fprintf(stderr, "vprof: gate: recorded %zu run%s into the history %s\n", head.size(),
                 head.size() == 1 ? "" : "s", o.dir.c_str());
  }
  return rc;
}

}  // namespace vprof::cli
