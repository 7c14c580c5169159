#include <algorithm>
#include <cmath>

#include "analyzer/report/histogram.h"
#include "analyzer/report/preemption.h"
#include "analyzer/report/reporter.h"
#include "common/schema.h"

namespace vprof::analyzer {
namespace {

using nlohmann::json;

// JSON has no NaN/Inf; a number that is not finite is reported as null.
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json node_json(const VarNode &n) {
  json children = json::array();
  for (const auto &c : n.children) children.push_back(node_json(c));
  json j = {{"id", n.id},
            {"kind", kind_name(n.kind)},
            {"label", n.label},
            {"functions", n.functions},
            {"call_site", site_json(n.call_site)},
            {"value_ns2", num(n.value_ns2)},
            {"contribution", num(n.contribution)},
            {"share", n.share ? num(*n.share) : json(nullptr)},
            {"run", n.run},
            {"children", std::move(children)}};
  if (n.kind == VarNode::Kind::Cov) j["other_call_site"] = site_json(n.other_call_site);
  return j;
}

// `value`: what the factor stands by in the report (its ranked value; a
// cause's share), which its intervals are around (ci95_at).
json factor_json(const Factor &f, double value) {
  json sites = json::array();
  for (const auto &s : f.call_sites) {
    json e = {{"call_site", site_json(s.call_site)}, {"label", s.label},
              {"parent_call_site", site_json(s.parent_site)},
              {"contribution", num(s.contribution)}};
    if (!f.covariance) e["share"] = num(s.share);
    if (f.covariance) e["other_call_site"] = site_json(s.other_call_site);
    sites.push_back(std::move(e));
  }
  auto interval = [](const std::optional<std::pair<double, double>> &ci) {
    return ci ? json::array({num(ci->first), num(ci->second)}) : json(nullptr);
  };
  return {{"rank", f.rank},
          {"kind", f.covariance ? "cov" : "var"},
          {"name", f.name},
          {"functions", f.functions},
          {"contribution", num(f.contribution)},
          {"share", f.covariance ? json(nullptr) : num(f.share)},
          {"specificity", num(f.specificity)},
          {"score", num(f.score)},
          {"height", f.height},
          {"call_sites", std::move(sites)},
          // With the spread between the runs that hold it, where two do;
          // both around `value`, as the table prints them.
          {"ci95", interval(shown_ci95(f, value))},
          {"ci95_within_run", interval(ci95_at(f.ci95, f, value))},
          // Null where no run was compared: a cause, or a factor with no run.
          {"runs_measured", f.runs_measured() > 0 ? json(f.runs_measured()) : json(nullptr)},
          {"significant", f.ci95 ? json(f.significant) : json(nullptr)},
          {"tail", {{"p99", f.tail99 ? num(*f.tail99) : json(nullptr)},
                    {"p999", f.tail999 ? num(*f.tail999) : json(nullptr)}}},
          {"if_fixed", {{"variance_change", f.fixed_var_change ? num(*f.fixed_var_change) : json(nullptr)},
                        {"variance_change_ci95", interval(f.fixed_var_ci95)},
                        {"p99_change", f.fixed_p99_change ? num(*f.fixed_p99_change) : json(nullptr)},
                        {"p99_change_ci95", interval(f.fixed_p99_ci95)}}},
          {"run", f.run >= 0 ? json(f.run) : json(nullptr)},
          {"run_value", f.run_value ? num(*f.run_value) : json(nullptr)},
          {"top_0.1%", f.top_share ? num(*f.top_share) : json(nullptr)},
          {"max_one", f.max_one ? num(*f.max_one) : json(nullptr)},
          {"fragile", f.fragile}};
}

// A cause (causes.h): a factor's fields where they apply, with its own part
// and the waits it held up.
json cause_json(const Factor &f) {
  json j = factor_json(f, f.share);
  for (const char *k : {"kind", "contribution", "specificity", "score", "height", "call_sites"}) j.erase(k);
  json held = json::array();
  for (const Factor::HeldUp &h : f.held_up)
    held.push_back({{"wait", h.wait}, {"call_site", site_json(h.site)}, {"share", num(h.share)}});
  j["own_share"] = num(f.own_share);
  j["held_up"] = std::move(held);
  return j;
}

json histogram_json(const LatencyHistogram &h) {
  json by_type = json::array();
  for (const auto &t : h.by_type)
    by_type.push_back({{"type", t.type}, {"counts", t.counts}, {"zero", t.zero}});
  return {{"scale", "log10"},           {"bins_per_decade", h.bins_per_decade},
          {"edges_ns", h.edges_ns},     {"counts", h.counts},
          {"zero", h.zero},             {"by_type", std::move(by_type)}};
}

// What damage cost the runs: totals and one entry per damaged file.
json lost_json(const DataLost &d, const std::vector<const RunAnalysis *> &runs) {
  json files = json::array();
  for (const RunAnalysis *r : runs)
    for (const trace::FileLoss &l : r->losses)
      files.push_back({{"file", l.file}, {"unreadable", l.unreadable}, {"bytes", l.bytes},
                       {"missing_bytes", l.missing_bytes}, {"records", l.records},
                       {"clamped_records", l.clamped}, {"first_problem", l.first}});
  return {{"trace_files", d.files},           {"damaged_files", d.damaged},
          {"unreadable_files", d.unreadable}, {"bytes", d.bytes},
          {"missing_bytes", d.missing_bytes}, {"records", d.records},
          {"clamped_records", d.clamped},     {"incomplete_intervals", d.incomplete_intervals},
          {"files", std::move(files)}};
}

// The (preempted) leaves' share of Var(latency); null: not measured.
json preemption_json(const RunAnalysis &r) {
  auto p = preemption_share(r);
  return p ? json(num(*p)) : json(nullptr);
}

json quality_json(const RunAnalysis &r) {
  json q = {{"level", verdict_name(worst_level(r))},
            {"refused", trace::refused_lines(r.processes, r.dir)},
            {"diagnostics", r.first_diagnostics},
            {"data_lost", lost_json(data_lost(r), {&r})}};
  // Every counter, from their lists (*.def), and the level of each, so a
  // reader (the HTML page) marks a count as bad by its level, not by a list of
  // its own.
  json levels = json::object();
  for_each_quality(r, [&](const Counter &c) {
    q[c.name] = c.value;
    levels[c.name] = level_name(c.level);
  });
  q["levels"] = std::move(levels);
  return q;
}

// The report's own data quality, over every run (each run's is under
// `runs`): the worst verdict, each counter summed, damage over all runs. The
// refused files and diagnostics are the first run's.
json quality_json(const Analysis &a) {
  json q = quality_json(*a.runs.front());
  if (a.runs.size() == 1) return q;
  q["level"] = verdict_name(worst_level(a));
  std::vector<const RunAnalysis *> all;
  for (const auto &r : a.runs) all.push_back(r.get());
  q["data_lost"] = lost_json(data_lost(a), all);
  for (size_t i = 1; i < a.runs.size(); ++i)
    for_each_quality(*a.runs[i], [&](const Counter &c) { q[c.name] = q[c.name].get<uint64_t>() + c.value; });
  return q;
}

class JsonReporter : public Reporter {
 public:
  explicit JsonReporter(json extra) : extra_(std::move(extra)) {}
  Status write(const Analysis &a, std::ostream &out) const override {
    out << to_json(a, extra_).dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    if (!out) return Error{"cannot write the JSON report"};
    return Status::Ok();
  }

 private:
  json extra_;
};

}  // namespace

json to_json(const Analysis &a) {
  const RunAnalysis &base = *a.runs.front();
  std::vector<const RunAnalysis *> all_runs;
  for (const auto &r : a.runs) all_runs.push_back(r.get());
  const LatencyStats &l = base.latency;
  json factors = json::array();
  for (const auto &f : a.factors)
    if (f.rank > 0) factors.push_back(factor_json(f, ranked_value(f, a.paper)));
  json causes = json::array();
  for (const auto &f : a.causes.ranked)
    if (f.rank > 0) causes.push_back(cause_json(f));
  json blame = json::array();
  for (const auto &b : a.blame)
    blame.push_back({{"wait_site", b.wait_site}, {"waker_tid", b.waker_tid},
                     {"waker_pid", b.waker_pid},
                     {"waker_function", b.waker_function}, {"waker_interval", b.waker_interval},
                     {"ns", num(b.ns)}});
  json disagreements = json::array();
  for (const Graft &g : a.disagreements)
    disagreements.push_back({{"node", g.label}, {"run", g.run}, {"from_run", g.from_run},
                             {"merged_share", num(g.merged_share)},
                             {"run_share", num(g.run_share)}});
  json types = nullptr;
  if (a.types.labeled) {
    json by = json::array();
    for (const auto &t : a.types.types)
      by.push_back({{"type", t.type}, {"intervals", t.intervals}, {"mean_ns", num(t.mean_ns)},
                    {"variance_ns2", num(t.variance_ns2)}, {"tree", node_json(t.tree)}});
    types = {{"within_fraction", num(a.types.within_fraction)},
             {"between_fraction", num(a.types.between_fraction)},
             {"by_type", std::move(by)}};
  }
  // Per-client fairness (tree/by_client.h): null without client labels.
  json clients = nullptr, unfairness = nullptr, mean_cv = nullptr, unlabeled = nullptr;
  if (a.clients.labeled) {
    clients = json::array();
    for (const ClientStats &c : a.clients.clients)
      clients.push_back({{"client", c.client}, {"intervals", c.intervals}, {"share", num(c.share)},
                         {"cv", num(c.cv)}, {"mean_ns", num(c.mean_ns)}});
    unfairness = num(a.clients.unfairness);
    mean_cv = num(a.clients.mean_cv);
    unlabeled = a.clients.unlabeled_intervals;
  }
  // Windowed recording (docs/run.md): null when recorded in full.
  auto sampling_json = [](const RunAnalysis &r) -> json {
    const Sampling &s = r.merge_stats.sampling;
    if (!s.sampled) return nullptr;
    return {{"windows", s.windows},
            {"capped", r.merge.windows_capped},
            {"on_ns", s.on_ns},
            {"recording_ns", s.recording_ns},
            {"span_ns", s.span_ns},
            {"duty", s.span_ns > 0 ? num(double(s.on_ns) / double(s.span_ns)) : json(nullptr)},
            {"intervals_counted", r.paths.rows.size()},
            {"intervals_left_out", intervals_left_out(r)}};
  };
  json runs = json::array();
  for (size_t i = 0; i < a.runs.size(); ++i) {
    // Which intervals each run had: a factor's "run" names the run whose
    // intervals its ci95, tails and concentration come from.
    const auto &rows = a.runs[i]->paths.rows;
    json ids = nullptr;
    if (!rows.empty()) {
      auto [lo, hi] = std::minmax_element(rows.begin(), rows.end(),
                                          [](const IntervalRow &x, const IntervalRow &y) { return x.id < y.id; });
      ids = {{"first", lo->id}, {"last", hi->id}};
    }
    runs.push_back({{"run", i}, {"trace_dir", a.runs[i]->dir},
                    {"intervals", rows.size()},
                    {"interval_ids", std::move(ids)},
                    {"variance_ns2", num(a.runs[i]->tree.value_ns2)},
                    {"sampling", sampling_json(*a.runs[i])},
                    {"data_quality", quality_json(*a.runs[i])}});
  }
  return {{"schema_version", schema::kAnalysis.version},
          {"trace_dir", base.dir},
          {"root", a.root_label},
          {"intervals", base.paths.rows.size()},
          {"dropped_records", base.read.dropped_records},
          {"incomplete_intervals", base.paths.counters.incomplete_intervals},
          {"data_lost", lost_json(data_lost(a), all_runs)},
          {"latency",
           {{"mean_ns", num(l.mean_ns)}, {"variance_ns2", num(l.variance_ns2)},
            {"stddev_ns", num(l.stddev_ns)}, {"p50_ns", num(l.p50_ns)}, {"p90_ns", num(l.p90_ns)},
            {"p99_ns", num(l.p99_ns)}, {"p999_ns", num(l.p999_ns)}, {"max_ns", num(l.max_ns)},
            {"histogram", histogram_json(latency_histogram(a))}}},
          {"preemption", preemption_json(base)},
          {"sampling", sampling_json(base)},
          {"root_share", [&] {
             auto v = a.root_label != "latency" ? root_share(base) : std::nullopt;
             return v ? json(num(*v)) : json(nullptr);
           }()},
          {"tree", node_json(a.tree)},
          {"factors", std::move(factors)},
          {"causes", {{"ranked", std::move(causes)}, {"held", a.causes.held}, {"none_share", num(a.causes.none)}}},
          {"selection",
           {{"k", a.k}, {"d", a.d}, {"d_selected", a.d_selected}, {"e", a.e}, {"root_height", a.height_root},
            {"ranked_by", a.paper ? "contribution" : "share"}}},
          {"blame", std::move(blame)},
          {"run_disagreements", std::move(disagreements)},
          {"types", std::move(types)},
          {"clients", std::move(clients)},
          {"unfairness", std::move(unfairness)},
          {"mean_client_cv", std::move(mean_cv)},
          {"unlabeled_client_intervals", std::move(unlabeled)},
          {"overhead",
           {{"probe_ns", num(base.overhead.probe_pair_ns)},
            {"empty_interval_ns", num(base.overhead.empty_interval_ns)}}},
          {"data_quality", quality_json(a)},
          {"runs", std::move(runs)}};
}

json to_json(const Analysis &a, const json &extra) {
  json doc = to_json(a);
  if (extra.is_object())
    for (const auto &[k, v] : extra.items()) doc[k] = v;
  return doc;
}

std::unique_ptr<Reporter> make_json_reporter(json extra) {
  return std::make_unique<JsonReporter>(std::move(extra));
}

}  // namespace vprof::analyzer
