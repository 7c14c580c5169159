#include "analyzer/diff/gate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace vprof::analyzer {

std::string percent_change(double change, const Interval &ci) {
  std::string s = fmt::format("{:+.1f}%", 100 * change);
  if (ci) s += fmt::format(" [{:+.1f}%, {:+.1f}%]", 100 * ci->first, 100 * ci->second);
  return s;
}

std::string factor_place(const FactorDiff &f) {
  std::string s = f.name;
  if (f.site) {
    std::string file = f.site->file;
    if (size_t p = file.rfind('/'); p != std::string::npos) file = file.substr(p + 1);
    s += fmt::format(" ({}:{})", file, f.site->line);
  }
  if (!f.caller.empty()) s += " in " + f.caller;
  if (!f.held_wait.empty()) s += ", held while others waited in " + f.held_wait;
  return s;
}

namespace {

GateCheck check(const char *what, const Ratio &r, double threshold) {
  GateCheck c;
  c.what = what;
  c.change = r.ratio - 1;
  if (r.ci) c.ci = std::make_pair(r.ci->first - 1, r.ci->second - 1);
  c.threshold = threshold;
  // Without an interval (--bootstrap 0) the point estimate decides.
  c.failed = (c.ci ? c.ci->first : c.change) > threshold;
  return c;
}

}  // namespace

GateResult decide(const Diff &d, const GateOptions &o) {
  GateResult g;
  g.checks.push_back(check("variance", d.dist.variance, o.max_var_increase));
  g.checks.push_back(check("p99", d.dist.p99, o.max_p99_increase));
  for (const GateCheck &c : g.checks) g.regression |= c.failed;
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
  // Surest first: by the lower end of each one's interval, where all have
  // one. A factor that grew in one run alone (a stall) can outscore the one
  // that grew in every run; resampling the runs puts its lower end near 0.
  if (std::all_of(g.grew.begin(), g.grew.end(), [](const FactorDiff *f) { return f->ci.has_value(); }))
    std::stable_sort(g.grew.begin(), g.grew.end(),
                     [](const FactorDiff *a, const FactorDiff *b) { return a->ci->first > b->ci->first; });
  std::string reasons;
  for (const GateCheck &c : g.checks) {
    if (!c.failed && g.regression) continue;
    if (!reasons.empty()) reasons += "; ";
    reasons += fmt::format("{} {} {} {:+.0f}%", c.what, percent_change(c.change, c.ci),
                           c.failed ? ">" : "<=", 100 * c.threshold);
  }
  std::string from;
  if (d.delta_var > 0)
    for (size_t i = 0; i < g.grew.size(); ++i)
      from += fmt::format("{}{:.0f}% of the increase from {}", i ? ", " : "", 100 * g.grew[i]->part,
                          factor_place(*g.grew[i]));
  g.summary = fmt::format("{}: {}{}", g.regression ? "REGRESSION" : "pass", reasons,
                          from.empty() ? "" : ": " + from);
  return g;
}

}  // namespace vprof::analyzer
