#include "analyzer/diff/diff_report.h"

#include <cmath>

#include <fmt/format.h>

#include "common/schema.h"

namespace vprof::analyzer {
namespace {

using json = nlohmann::json;

std::string ms(double ns) { return fmt::format("{:.3f} ms", ns / 1e6); }
std::string ms2(double ns2) { return fmt::format("{:.3f} ms²", ns2 / 1e12); }
std::string ci_text(const Interval &ci, double scale = 1, double shift = 0) {
  if (!ci) return "-";
  return fmt::format("[{:.3f}, {:.3f}]", ci->first * scale + shift, ci->second * scale + shift);
}
std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }
std::string pct_ci(const Interval &ci) {
  if (!ci) return "-";
  return fmt::format("[{:+.1f}%, {:+.1f}%]", 100 * ci->first, 100 * ci->second);
}
std::string place(const std::optional<CallSiteInfo> &s) {
  if (!s) return "-";
  return fmt::format("{}:{}", s->file, s->line);
}
json ci_json(const Interval &ci) {
  if (!ci) return nullptr;
  return json::array({ci->first, ci->second});
}
struct Row {
  const char *name;
  const Ratio *r;
  bool squared;
};
std::vector<Row> rows(const Diff &d) {
  const DistDiff &x = d.dist;
  return {{"mean", &x.mean, false}, {"stddev", &x.stddev, false}, {"variance", &x.variance, true},
          {"p50", &x.p50, false},   {"p90", &x.p90, false},       {"p99", &x.p99, false},
          {"p99.9", &x.p999, false}};
}

std::string sources(const std::vector<std::string> &s) {
  if (s.size() == 1) return s.front();
  return fmt::format("{} (+{} more runs)", s.front(), s.size() - 1);
}

std::string runs(size_t n) { return fmt::format("{} run{}", n, n == 1 ? "" : "s"); }

std::string build_line(const BuildInfo &b) {
  std::string s = b.commit.empty() ? "commit ?" : "commit " + b.commit.substr(0, 12);
  if (!b.cpu.empty()) s += ", " + b.cpu;
  if (b.cpus) s += fmt::format(" x{}", b.cpus);
  if (!b.host.empty()) s += ", host " + b.host;
  return s;
}

json cause_json(const FactorDiff &c) {
  json held = json::array();
  for (const FactorDiff::HeldUp &u : c.held_up) held.push_back({{"wait", u.wait}, {"part", u.part}});
  return {{"rank", c.rank},         {"name", c.name},         {"change", c.of_base},
          {"ci", ci_json(c.ci)},    {"part", c.part},         {"own_part", c.own_part},
          {"held_up", held},        {"call_site", site_json(c.site)}, {"caller", c.caller}};
}

}  // namespace

void write_diff_text(const Diff &d, std::ostream &out, const GateResult *gate, size_t max_nodes) {
  out << fmt::format("vprof {}: base {} ({}, {} intervals) -> head {} ({}, {} intervals); root {}\n",
                     gate ? "gate" : "diff", sources(d.base_sources), runs(d.base_sources.size()),
                     d.dist.base_intervals, sources(d.head_sources), runs(d.head_sources.size()),
                     d.dist.head_intervals, d.root);
  out << "  base: " << build_line(d.base_build) << "\n  head: " << build_line(d.head_build) << "\n\n";
  const int level = int(std::lround(100 * d.confidence));
  out << fmt::format("  {:<9} {:>14} {:>14} {:>10}  ci{} of head/base\n", "latency", "base", "head",
                     "head/base", level);
  for (const Row &r : rows(d))
    out << fmt::format("  {:<9} {:>14} {:>14} {:>10.3f}  {}\n", r.name,
                       r.squared ? ms2(r.r->base) : ms(r.r->base), r.squared ? ms2(r.r->head) : ms(r.r->head),
                       r.r->ratio, ci_text(r.r->ci));
  const double var_b = d.dist.variance.base;
  out << fmt::format("\nΔVar(latency) = {:+.3f} ms² ({} of the baseline's), attributed below: "
                     "ΔCov(X, L) of each node; the parts of a node add up to it\n",
                     d.delta_var / 1e12, var_b > 0 ? pct(d.delta_var / var_b) : "-");
  out << fmt::format("\nfactors of the change (ΔCov / Var_base; part = of ΔVar):\n");
  out << fmt::format("  {:>4}  {:<40} {:>9} {:<20} {:>7} {:>6} {:>8}  where\n", "rank", "factor",
                     "change", "ci" + std::to_string(level), "part", "height", "score");
  size_t shown = 0;
  for (const FactorDiff &f : d.factors) {
    if (shown >= 6 || (f.rank == 0 && shown >= 3)) break;
    ++shown;
    out << fmt::format("  {:>4}  {:<40} {:>9} {:<20} {:>7} {:>6} {:>8.3f}  {}{}\n",
                       f.rank ? std::to_string(f.rank) : "-", f.name, pct(f.of_base), pct_ci(f.ci),
                       pct(f.part), f.height, f.score, place(f.site),
                       f.caller.empty() ? "" : " in " + f.caller);
  }
  if (d.causes_held) {
    out << "\ncauses of the change (own change plus the waits each held up; part = of ΔVar):\n";
    out << fmt::format("  {:>4}  {:<40} {:>9} {:<20} {:>7}  parts (points of ΔVar)\n", "rank", "cause", "change",
                       "ci" + std::to_string(level), "part");
    for (const FactorDiff &c : d.causes) {
      if (c.rank == 0) break;
      out << fmt::format("  {:>4}  {:<40} {:>9} {:<20} {:>7}  {}\n", c.rank, c.name, pct(c.of_base), pct_ci(c.ci),
                         pct(c.part), cause_parts(c, 1));
    }
  }
  out << fmt::format("\nnodes by |ΔCov(X, L)| (first {}):\n", max_nodes);
  out << fmt::format("  {:>9} {:<20} {:>7}  {:<11} node\n", "change", "ci" + std::to_string(level), "part", "status");
  for (size_t i = 0; i < d.nodes.size() && i < max_nodes; ++i) {
    const NodeDiff &n = d.nodes[i];
    out << fmt::format("  {:>9} {:<20} {:>7}  {:<11} {}{}{}\n", pct(n.of_base), pct_ci(n.ci), pct(n.part),
                       status_name(n.status), std::string(size_t(2 * std::max(0, n.depth - 1)), ' '),
                       n.label, n.one_sided ? "  (broken down on one side only)" : "");
  }
  auto list = [&](NodeStatus s, const char *title, size_t count) {
    if (!count) return;
    out << fmt::format("\n{} ({}):\n", title, count);
    size_t k = 0;
    for (const NodeDiff &n : d.nodes) {
      if (n.status != s) continue;
      if (++k > 20) {
        out << fmt::format("  ... {} more (--json lists all)\n", count - 20);
        break;
      }
      // By label and parent, not by key: a key is the node's whole path,
      // hundreds of characters a line on MariaDB's Held parts (--json has it).
      std::string under;
      for (const NodeDiff &p : d.nodes)
        if (p.key == n.parent_key) under = "  (under " + p.label + ")";
      if (s == NodeStatus::Moved)
        out << fmt::format("  {}: {} -> {}{}\n", n.label, place(n.base_site), place(n.head_site), under);
      else
        out << fmt::format("  {}{}\n", n.label, under);
    }
  };
  list(NodeStatus::Moved, "moved (same node, another place)", d.moved);
  list(NodeStatus::Appeared, "appeared (in head only)", d.appeared);
  list(NodeStatus::Disappeared, "disappeared (in base only)", d.disappeared);
  if (gate) out << "\n" << gate->summary << "\n";
}

json diff_json(const Diff &d, const GateResult *gate) {
  json j;
  j["schema_version"] = schema::kDiff.version;
  j["root"] = d.root;
  j["confidence"] = d.confidence;
  auto side = [](const std::vector<std::string> &s, const BuildInfo &b, size_t n) {
    return json{{"sources", s},
                {"intervals", n},
                {"build", {{"commit", b.commit}, {"compiler", b.compiler}, {"cpu", b.cpu}, {"cpus", b.cpus},
                           {"kernel", b.kernel}, {"host", b.host}, {"clock", b.clock}, {"created", b.created}}}};
  };
  j["base"] = side(d.base_sources, d.base_build, d.dist.base_intervals);
  j["head"] = side(d.head_sources, d.head_build, d.dist.head_intervals);
  json lat;
  for (const Row &r : rows(d))
    lat[r.name] = {{"base", r.r->base}, {"head", r.r->head}, {"ratio", r.r->ratio}, {"ci", ci_json(r.r->ci)}};
  j["latency"] = lat;
  j["delta_var_ns2"] = d.delta_var;
  j["factors"] = json::array();
  for (const FactorDiff &f : d.factors)
    j["factors"].push_back({{"rank", f.rank}, {"name", f.name}, {"functions", f.functions},
                            {"change", f.of_base}, {"ci", ci_json(f.ci)}, {"part", f.part},
                            {"height", f.height}, {"score", f.score}, {"label", f.site_label},
                            {"call_site", site_json(f.site)}, {"caller", f.caller},
                            {"held_wait", f.held_wait.empty() ? json() : json(f.held_wait)}});
  j["causes"] = json::array();
  for (const FactorDiff &c : d.causes) j["causes"].push_back(cause_json(c));
  j["nodes"] = json::array();
  for (const NodeDiff &n : d.nodes)
    j["nodes"].push_back({{"key", n.key}, {"label", n.label}, {"parent", n.parent_key},
                          {"status", status_name(n.status)}, {"leaf", n.leaf}, {"one_sided", n.one_sided},
                          {"base_cov_ns2", n.base_cov}, {"head_cov_ns2", n.head_cov},
                          {"delta_ns2", n.delta}, {"change", n.of_base}, {"part", n.part},
                          {"ci", ci_json(n.ci)}, {"base_call_site", site_json(n.base_site)},
                          {"head_call_site", site_json(n.head_site)}});
  j["moved"] = d.moved;
  j["appeared"] = d.appeared;
  j["disappeared"] = d.disappeared;
  if (gate) {
    json g = {{"verdict", verdict_name(gate->verdict)},
              {"regression", gate->regression},
              {"runs", gate->runs},
              {"runs_needed", gate->verdict == Verdict::Inconclusive ? json(gate->runs_needed) : json(nullptr)},
              {"summary", gate->summary},
              {"checks", json::array()}};
    for (const GateCheck &c : gate->checks)
      g["checks"].push_back({{"what", c.what}, {"change", c.change}, {"ci", ci_json(c.ci)},
                             {"threshold", c.threshold}, {"failed", c.failed}, {"unsure", c.unsure},
                             {"runs_needed", c.unsure ? json(c.runs_needed) : json(nullptr)}});
    g["factors"] = json::array();
    for (const FactorDiff *f : gate->grew)
      g["factors"].push_back({{"name", f->name}, {"part", f->part}, {"where", factor_place(*f)}});
    g["causes"] = json::array();
    for (const FactorDiff *c : gate->causes)
      g["causes"].push_back({{"name", c->name}, {"part", c->part}, {"where", cause_place(*c)}});
    j["gate"] = g;
  }
  return j;
}

void write_diff_markdown(const Diff &d, std::ostream &out, const GateResult *gate, size_t max_nodes) {
  const int level = int(std::lround(100 * d.confidence));
  if (gate)
    out << fmt::format("### vprof gate: {}\n\n{}\n\n",
                       gate->verdict == Verdict::Regression     ? "❌ regression"
                       : gate->verdict == Verdict::Inconclusive ? "⚠️ inconclusive"
                                                                : "✅ pass",
                       gate->summary);
  else
    out << "### vprof diff\n\n";
  out << fmt::format("base: `{}` ({}, {} intervals, {}) · head: `{}` ({}, {} intervals, {}) · root `{}`\n\n",
                     sources(d.base_sources), runs(d.base_sources.size()), d.dist.base_intervals,
                     build_line(d.base_build), sources(d.head_sources), runs(d.head_sources.size()),
                     d.dist.head_intervals, build_line(d.head_build), d.root);
  out << fmt::format("| latency | base | head | head/base | ci{} |\n|---|---:|---:|---:|---|\n", level);
  for (const Row &r : rows(d))
    out << fmt::format("| {} | {} | {} | {:.3f} | {} |\n", r.name, r.squared ? ms2(r.r->base) : ms(r.r->base),
                       r.squared ? ms2(r.r->head) : ms(r.r->head), r.r->ratio, ci_text(r.r->ci));
  out << fmt::format("\nΔVar(latency) = {:+.3f} ms²; by factor (ΔCov / Var_base, part of ΔVar):\n\n",
                     d.delta_var / 1e12);
  out << fmt::format("| rank | factor | change | ci{} | part | where |\n|---:|---|---:|---|---:|---|\n", level);
  size_t shown = 0;
  for (const FactorDiff &f : d.factors) {
    if (shown >= 5 || (f.rank == 0 && shown >= 3)) break;
    ++shown;
    out << fmt::format("| {} | `{}` | {} | {} | {} | {}{} |\n", f.rank ? std::to_string(f.rank) : "-", f.name,
                       pct(f.of_base), pct_ci(f.ci), pct(f.part), place(f.site),
                       f.caller.empty() ? "" : " in `" + f.caller + "`");
  }
  if (d.causes_held) {
    out << fmt::format("\nBy cause (own change plus the waits each held up):\n\n| rank | cause | change | ci{} | part | "
                       "parts (points of ΔVar) |\n|---:|---|---:|---|---:|---|\n",
                       level);
    for (const FactorDiff &c : d.causes) {
      if (c.rank == 0) break;
      out << fmt::format("| {} | `{}` | {} | {} | {} | {} |\n", c.rank, c.name, pct(c.of_base), pct_ci(c.ci),
                         pct(c.part), cause_parts(c, 1));
    }
  }
  out << fmt::format("\n<details><summary>nodes by change (first {}); {} moved, {} appeared, {} disappeared</summary>\n\n",
                     max_nodes, d.moved, d.appeared, d.disappeared);
  out << "| change | part | status | node |\n|---:|---:|---|---|\n";
  for (size_t i = 0; i < d.nodes.size() && i < max_nodes; ++i)
    out << fmt::format("| {} | {} | {} | `{}` |\n", pct(d.nodes[i].of_base), pct(d.nodes[i].part),
                       status_name(d.nodes[i].status), d.nodes[i].label);
  out << "\n</details>\n";
}

}  // namespace vprof::analyzer
