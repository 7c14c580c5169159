#include "analyzer/diff/gate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analyzer/util/percent.h"

namespace vprof::analyzer {

namespace {

std::string site_and_caller(const FactorDiff &f) {
  std::string s = f.name;
  if (f.site) {
    std::string file = f.site->file;
    if (size_t p = file.rfind('/'); p != std::string::npos) file = file.substr(p + 1);
    s += fmt::format(" ({}:{})", file, f.site->line);
  }
  if (!f.caller.empty()) s += " in " + f.caller;
  return s;
}

}  // namespace

std::string factor_place(const FactorDiff &f) {
  std::string s = site_and_caller(f);
  if (!f.held_wait.empty()) s += ", held while others waited in " + f.held_wait;
  return s;
}

std::string cause_parts(const FactorDiff &c, int decimals) {
  const double unit = std::pow(10.0, decimals);
  std::string parts;
  size_t said = 0, left = 0;
  auto add = [&](double part, const std::string &what) {
    if (std::lround(100 * part * unit) == 0) return;  // "0 holding up ...": said by nothing
    if (said++ >= 4) {
      ++left;
      return;
    }
    parts += fmt::format("{}{:.{}f} {}", parts.empty() ? "" : ", ", 100 * part, decimals, what);
  };
  add(c.own_part, "own");
  for (const FactorDiff::HeldUp &u : c.held_up) add(u.part, "holding up waits in " + u.wait);
  if (left) parts += fmt::format(" (+{} more)", left);
  return parts;
}

std::string cause_place(const FactorDiff &c) {
  std::string parts = cause_parts(c, 0);
  return site_and_caller(c) + (parts.empty() ? "" : " (" + parts + ")");
}

const char *verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Regression: return "regression";
    case Verdict::Inconclusive: return "inconclusive";
  }
  return "?";
}

namespace {

// The runs a side that would narrow c's interval to one side of its
// threshold: its half-width on the side facing the threshold scales as
// 1/sqrt(runs); with one run a side the interval comes from the intervals'
// bootstrap and the estimate assumes runs vary as much as it says.
int runs_to_decide(const GateCheck &c, int runs) {
  const double x = c.change, t = c.threshold;
  const double half = x <= t ? c.ci->second - x : x - c.ci->first;
  const double margin = std::fabs(t - x);
  if (!(margin > 0) || !(half > 0)) return -1;
  const double n = std::ceil(double(runs) * (half / margin) * (half / margin));
  if (!(n <= 1000)) return -1;
  return std::max(int(n), runs + 1);
}

GateCheck check(const char *what, const Ratio &r, double threshold, int runs) {
  GateCheck c;
  c.what = what;
  c.change = r.ratio - 1;
  if (r.ci) c.ci = std::make_pair(r.ci->first - 1, r.ci->second - 1);
  c.threshold = threshold;
  // Without an interval (--bootstrap 0) the point estimate decides.
  c.failed = (c.ci ? c.ci->first : c.change) > threshold;
  c.unsure = !c.failed && c.ci && c.ci->second > threshold;
  if (c.unsure) c.runs_needed = runs_to_decide(c, runs);
  return c;
}

}  // namespace

GateResult decide(const Diff &d, const GateOptions &o) {
  GateResult g;
  g.runs = int(std::max<size_t>(1, std::min(d.base_sources.size(), d.head_sources.size())));
  g.checks.push_back(check("variance", d.dist.variance, o.max_var_increase, g.runs));
  g.checks.push_back(check("p99", d.dist.p99, o.max_p99_increase, g.runs));
  bool unsure = false;
  for (const GateCheck &c : g.checks) {
    g.regression |= c.failed;
    unsure |= c.unsure;
    if (c.unsure && g.runs_needed >= 0) g.runs_needed = c.runs_needed < 0 ? -1 : std::max(g.runs_needed, c.runs_needed);
  }
  g.verdict = g.regression ? Verdict::Regression : unsure ? Verdict::Inconclusive : Verdict::Pass;
  if (g.verdict != Verdict::Inconclusive) g.runs_needed = 0;
  // One run a side is never a sure verdict. Its intervals come
  // from resampling that run's intervals alone, so they cannot include how
  // whole runs differ (the machine's load over minutes): minidb's same build
  // against itself at one run a side said regression 7 times in 20 and pass
  // 8 times (docs/performance.md). With intervals, a regression or a pass
  // there becomes inconclusive, its checks still printed; an inconclusive
  // one already asks for at least 2 runs. --bootstrap 0 (no intervals: the
  // point estimates decide) is left as it was.
  const Verdict sure = g.verdict;
  g.one_run = g.runs == 1 && sure != Verdict::Inconclusive &&
              std::any_of(g.checks.begin(), g.checks.end(), [](const GateCheck &c) { return c.ci.has_value(); });
  if (g.one_run) {
    g.verdict = Verdict::Inconclusive;
    g.regression = false;
    g.runs_needed = 2;
  }
  // The factors that grew: the selected ones (analyze's ranking of the
  // change, which leaves out a factor nested in a selected one), else the
  // first that grew.
  for (const FactorDiff &f : d.factors)
    if (f.rank > 0 && f.of_base > 0) g.grew.push_back(&f);
  if (g.grew.empty())
    for (const FactorDiff &f : d.factors)
      if (f.of_base > 0) {
        g.grew.push_back(&f);
        break;
      }
  // With Held parts in the change, its causes likewise: a wait that grew
  // because its holder got slower is the holder's own change and the waits'.
  if (d.causes_held)
    for (const FactorDiff &c : d.causes)
      if (c.rank > 0 && c.of_base > 0) g.causes.push_back(&c);
  // Surest first: by the lower end of each one's interval, where all have
  // one. A factor that grew in one run alone (a stall) can outscore the one
  // that grew in every run; resampling the runs puts its lower end near 0.
  auto surest_first = [](std::vector<const FactorDiff *> &v) {
    if (std::all_of(v.begin(), v.end(), [](const FactorDiff *f) { return f->ci.has_value(); }))
      std::stable_sort(v.begin(), v.end(),
                       [](const FactorDiff *a, const FactorDiff *b) { return a->ci->first > b->ci->first; });
  };
  surest_first(g.grew);
  surest_first(g.causes);
  // The checks that made the verdict the intervals gave: the failed ones of
  // a regression, the unsure ones of an inconclusive verdict, all of a pass.
  std::string reasons;
  for (const GateCheck &c : g.checks) {
    if (sure == Verdict::Regression && !c.failed) continue;
    if (sure == Verdict::Inconclusive && !c.unsure) continue;
    if (!reasons.empty()) reasons += "; ";
    reasons += fmt::format("{} {} {} {:+.0f}%", c.what, percent_change(c.change, c.ci),
                           c.failed ? ">" : c.unsure ? "reaches both sides of" : "<=", 100 * c.threshold);
  }
  if (g.one_run)
    reasons += "; one run a side: its intervals cannot include how runs differ; give the gate at least 2 runs "
               "a side (--baseline-runs/--runs)";
  else if (g.verdict == Verdict::Inconclusive)
    reasons += g.runs_needed > 0
                   ? fmt::format("; about {} runs a side would decide (from {}, if runs vary as these did)",
                                 g.runs_needed, g.runs)
                   : std::string("; more than 1000 runs a side would be needed to decide");
  std::string from;
  if (d.delta_var > 0 && !g.causes.empty())
    for (size_t i = 0; i < g.causes.size(); ++i)
      from += fmt::format("{}{:.0f}% of the increase from {}", i ? "; " : "", 100 * g.causes[i]->part,
                          cause_place(*g.causes[i]));
  else if (d.delta_var > 0)
    for (size_t i = 0; i < g.grew.size(); ++i)
      from += fmt::format("{}{:.0f}% of the increase from {}", i ? ", " : "", 100 * g.grew[i]->part,
                          factor_place(*g.grew[i]));
  const char *head = g.verdict == Verdict::Regression     ? "REGRESSION"
                     : g.verdict == Verdict::Inconclusive ? "INCONCLUSIVE"
                                                          : "pass";
  g.summary = fmt::format("{}: {}{}", head, reasons, from.empty() ? "" : ": " + from);
  return g;
}

}  // namespace vprof::analyzer
