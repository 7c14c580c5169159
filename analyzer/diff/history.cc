// The gate against a history of main (history.h).
#include "analyzer/diff/history.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iterator>
#include <numeric>
#include <random>

#include <fmt/format.h>

namespace vprof::analyzer {
namespace {

double mean_of(const std::vector<double> &v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double sd_of(const std::vector<double> &v) {
  if (v.size() < 2) return 0.0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

// The nearest-rank q-quantile of sorted values.
double rank_quantile(const std::vector<double> &sorted, double q) {
  if (sorted.empty()) return 0.0;
  size_t k = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(k, 1)) - 1];
}

// A quantity of a run on the log scale (a run whose value is 0 counts as 1
// unit: a latency of 0 ns or no variance at all).
double log_of(double v) { return std::log(std::max(v, 1.0)); }

// A run is an outlier when its p99 is this many (robust) standard deviations
// of the history's p99 beyond its centre: on minidb's contended preset, where
// that spread is 0.11 on a log scale, a p99 66% above the history's (its stall
// bursts double it; a planted +35% stays below).
constexpr double kOutlierSigmas = 4.5;

// judge: the statistics of a run, compared over the runs without an outlier.
struct Judged {
  const char *name;
  double (*of)(const RunSummary &);
  bool gated;
  Unit unit;  // ns2 (the variance): its threshold is --max-var-increase, else --max-p99-increase
  // A run beyond its outlier line counts at the line (winsorized), not at
  // the history's level: a ratio's spread is so small (0.03 on minidb, by the
  // history's lower half) that a plant's every run is beyond the line, and
  // left out they hid it (2 or 3 of a plant's 3 runs). Not for p90 and p99:
  // their histories hold 2-3 bursts in 20, and runs at the line could never
  // be the highest 3 of 23 often enough to be caught.
  bool capped = false;
  bool level = false;  // p90, p99: a regression only beyond HistoryOptions::max_level_increase
};
// Gated: how far the tail lies beyond the median, p90 / p50, a spread that
// settles where the variance does not. On minidb's contended preset its
// log's run-to-run spread is 0.066-0.079 against p90's 0.168 and the
// variance's 0.41-0.47 (a run's disk moves its p50 and p90 together, and the
// ratio cancels it), and a delay planted in the transactions moved it by 4.4
// of those spreads where p90 moved by 1.6 (docs/performance.md).
// The levels, p90 and p99, fail only beyond max_level_increase (a doubling
// by default): a host slows for seconds at a time (minidb's same-build runs
// 1.2 s apart: p90's lag-1 autocorrelation 0.72, p90/p50's 0.17), so a
// head's back-to-back runs share a state the history may never have seen,
// and no history tells a slower build from a slower host by the levels
// alone: at the p99 threshold (+5%) they raised 3 false alarms in 20
// decisions against a history recorded just before, and 23 in 200 against
// histories recorded in batches spread over the same minutes (p90 up to
// +48% in a head of 3 runs); docs/gate.md, "What is gated". Variance is
// reported, not gated: no handful of runs catches less than a doubling.
constexpr Judged kJudged[] = {
    {"p90", [](const RunSummary &r) { return r.p90; }, true, Unit::ns, false, true},
    {"p99", [](const RunSummary &r) { return r.p99; }, true, Unit::ns, false, true},
    {"p90/p50", [](const RunSummary &r) { return r.p50 > 0 ? r.p90 / r.p50 : 1.0; }, true, Unit::ratio, true},
    {"variance", [](const RunSummary &r) { return r.var; }, false, Unit::ns2},
    {"p50", [](const RunSummary &r) { return r.p50; }, false, Unit::ns},
    {"mean", [](const RunSummary &r) { return r.mean; }, false, Unit::ns},
    {"p99.9", [](const RunSummary &r) { return r.p999; }, false, Unit::ns}};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : (v[k - 1] + v[k]) / 2;
}

// A centre and a spread (as a normal's standard deviation).
struct Robust {
  double centre = 0, sigma = 0;
};

// The median of x and the spread of the runs at or below it (their median
// deviation): a run's p99 strays upward (a stall burst), never down, so the
// lower half's spread is that of runs without one, however many had one.
// (With 4 burst runs among 15, the MAD of all of them put the outlier line
// at +203%, and a head with two burst runs of three was a false alarm.)
Robust lower_robust(const std::vector<double> &x) {
  Robust r;
  r.centre = median_of(x);
  std::vector<double> dev;
  for (double v : x)
    if (v <= r.centre) dev.push_back(r.centre - v);
  r.sigma = std::max(1.4826 * median_of(dev), 1e-6);
  return r;
}

std::vector<double> logs(const std::vector<RunSummary> &runs, size_t from, size_t to, double RunSummary::*f) {
  std::vector<double> out;
  for (size_t i = from; i < to; ++i) out.push_back(log_of(runs[i].*f));
  return out;
}

// The median over runs [from, to) of each factor's Cov(factor, L), every
// factor any of them has (0 in a run without it): medians, as a run with a
// stall burst would carry a mean by itself.
std::map<std::string, double> median_cov(const std::vector<RunSummary> &runs, size_t from, size_t to) {
  std::map<std::string, double> out;
  if (to <= from) return out;
  std::map<std::string, std::vector<double>> all;
  for (size_t i = from; i < to; ++i)
    for (const auto &[f, c] : runs[i].cov) all[f];
  for (auto &[f, v] : all) {
    for (size_t i = from; i < to; ++i) {
      auto it = runs[i].cov.find(f);
      v.push_back(it == runs[i].cov.end() ? 0.0 : it->second);
    }
    out[f] = median_of(v);
  }
  return out;
}

double median_var(const std::vector<RunSummary> &runs, size_t from, size_t to) {
  std::vector<double> v;
  for (size_t i = from; i < to; ++i) v.push_back(runs[i].var);
  return median_of(v);
}

// The factors whose covariance with the latency moved most from `a` to `b`
// (the direction of the variance's move), with their parts of it.
std::vector<FactorMove> moves(const std::map<std::string, double> &a, const std::map<std::string, double> &b,
                              double var_a, double var_b) {
  std::vector<FactorMove> out;
  std::map<std::string, std::pair<double, double>> both;
  for (const auto &[f, c] : a) both[f].first = c;
  for (const auto &[f, c] : b) both[f].second = c;
  const double dv = var_b - var_a;
  for (const auto &[f, v] : both) {
    FactorMove m{f, v.first, v.second, dv != 0 ? (v.second - v.first) / dv : 0.0};
    if ((dv >= 0) == (v.second - v.first >= 0) && v.second != v.first) out.push_back(m);
  }
  std::sort(out.begin(), out.end(), [](const FactorMove &x, const FactorMove &y) {
    return std::fabs(x.head - x.history) > std::fabs(y.head - y.history);
  });
  if (out.size() > 3) out.resize(3);
  return out;
}

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

// The smallest d in (0, max] at which p_at(d) (a p-value, falling as d
// grows) is at or below level, by bisection; INFINITY when not even max is.
double smallest_caught(const std::function<double(double)> &p_at, double level, double max) {
  double lo = 0, hi = std::min(1.0, max);
  while (p_at(hi) > level) {
    if (hi >= max) return INFINITY;
    hi = std::min(4 * hi, max);
  }
  for (int it = 0; it < 40; ++it) (p_at((lo + hi) / 2) <= level ? hi : lo) = (lo + hi) / 2;
  return hi;
}

// Each run's share of Var(L) of factor f: Cov(f, L) / Var(L).
double share_of(const RunSummary &r, const std::string &f) {
  auto it = r.cov.find(f);
  return it == r.cov.end() || r.var <= 0 ? 0.0 : it->second / r.var;
}

// The factors whose median share over runs [from, to) of the pool is largest,
// at most k, largest first.
std::vector<std::string> top_shares(const std::vector<const RunSummary *> &pool, size_t from, size_t to, size_t k) {
  std::map<std::string, std::vector<double>> all;
  for (size_t i = from; i < to; ++i)
    for (const auto &[f, c] : pool[i]->cov) all[f];
  std::vector<std::pair<double, std::string>> by;
  for (auto &[f, v] : all) {
    for (size_t i = from; i < to; ++i) v.push_back(share_of(*pool[i], f));
    by.push_back({median_of(v), f});
  }
  std::sort(by.begin(), by.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < by.size() && out.size() < k; ++i)
    if (by[i].first > 0) out.push_back(by[i].second);
  return out;
}

// The top factors' shares (HistoryVerdict::shares), and `named`'s (what the
// verdict names as moved): each run's share, the
// head's mean against the history's by the same permutation test as the
// statistics, on the linear scale (a share may be 0 or below), and the
// smallest increase in points these runs would catch at the gate's level.
std::vector<HistoryCheck> share_checks(const std::vector<const RunSummary *> &pool, size_t n, size_t m,
                                       const std::function<double(const std::vector<double> &)> &p_value,
                                       double level, bool can_catch, const std::string &named) {
  std::vector<std::string> factors = top_shares(pool, 0, n, 3);
  std::vector<std::string> also = top_shares(pool, n, n + m, 1);
  if (!named.empty()) also.push_back(named);
  for (const std::string &f : also)
    if (std::find(factors.begin(), factors.end(), f) == factors.end()) factors.push_back(f);
  std::vector<HistoryCheck> out;
  for (const std::string &name : factors) {
    std::vector<double> x(n + m);
    for (size_t k = 0; k < n + m; ++k) x[k] = share_of(*pool[k], name);
    HistoryCheck c;
    c.what = name;
    c.history = mean_of(std::vector<double>(x.begin(), x.begin() + ptrdiff_t(n)));
    c.head = mean_of(std::vector<double>(x.begin() + ptrdiff_t(n), x.end()));
    c.change = c.head - c.history;
    c.p = p_value(x);
    c.detectable = INFINITY;
    if (can_catch) {
      std::vector<double> g = x;
      auto p_at = [&](double d) {
        for (size_t j = 0; j < m; ++j) g[n + j] = x[n + j] - c.head + c.history + d;
        return p_value(g);
      };
      c.detectable = smallest_caught(p_at, level, 1.0);  // up to 100 points
    }
    c.limit = c.history + c.detectable;
    out.push_back(std::move(c));
  }
  return out;
}

const HistoryCheck *check_named(const HistoryVerdict &v, const std::string &what) {
  for (const HistoryCheck &c : v.checks)
    if (c.what == what) return &c;
  return nullptr;
}

// The levels moved beyond chance and the p99 threshold but not as far as
// max_level_increase: said, not failed (Judged::level).
std::string levels_moved(const HistoryVerdict &v, double max_level_increase) {
  std::string moved;
  for (const HistoryCheck &c : v.checks)
    if (c.moved && !c.regression && (c.what == "p90" || c.what == "p99"))
      moved += fmt::format("{}{} {} (p {:.3f})", moved.empty() ? "" : ", ", c.what, pct(c.change), c.p);
  if (moved.empty()) return "";
  return fmt::format("the levels moved, not beyond {}: {}, as a slower build or a slower host does (a level fails "
                     "beyond --max-level-increase; lower it on a runner that holds still)",
                     pct(max_level_increase), moved);
}

// HistoryVerdict::shifted: "" unless a regression is the whole distribution
// moved alike.
std::string shifted_alike(const HistoryVerdict &v) {
  // A regression on the levels (p90, p99, the runs beyond the p99 line)
  // alone, with p50 moved at least half as far as p90 and the spread
  // (p90/p50) not moved beyond chance: the whole distribution moved. On minidb's
  // pools three same-build decisions in twenty read so, runs in which the
  // host ran slower for some seconds (docs/gate.md, "Known limits").
  const HistoryCheck *p50 = check_named(v, "p50"), *p90 = check_named(v, "p90"), *ratio = check_named(v, "p90/p50");
  if (!v.regression || !p50 || !p90 || !ratio || ratio->p <= v.level) return "";
  if (p90->change <= 0 || p50->change < 0.5 * p90->change) return "";
  return fmt::format(
      "p50 moved as p90 did ({} against {}) and the spread p90/p50 not beyond chance ({}): the whole distribution "
      "shifted, as a slower build or a slower host does; run main's build beside the new one to tell them apart",
      pct(p50->change), pct(p90->change), pct(ratio->change));
}

}  // namespace

std::vector<RunSummary> summarize(const Profile &p) {
  std::vector<RunSummary> out;
  for (const ProfileRun &r : p.runs) {
    RunSummary s;
    s.source = p.source;
    s.commit = p.build.commit;
    s.intervals = r.intervals();
    std::vector<double> l(r.intervals(), 0.0);
    if (!r.cols.empty()) r.column_into(0, l, 0);
    s.mean = mean_of(l);
    const double sd = sd_of(l);
    s.var = sd * sd;
    std::vector<double> sorted = l;
    std::sort(sorted.begin(), sorted.end());
    s.p50 = rank_quantile(sorted, 0.5);
    s.p90 = rank_quantile(sorted, 0.9);
    s.p99 = rank_quantile(sorted, 0.99);
    s.p999 = rank_quantile(sorted, 0.999);
    // Cov(X, L) = Σ x_i (L_i − L̄) / (n − 1): only a part's non-zero cells count.
    if (l.size() >= 2)
      for (size_t n = 1; n < r.nodes.size() && n < r.cols.size(); ++n) {
        const ProfileNode &node = r.nodes[n];
        if (!node.leaf || node.factor.empty()) continue;
        double c = 0;
        const ProfileRun::Column &col = r.cols[n];
        for (size_t k = 0; k < col.row.size(); ++k) c += col.value[k] * (l[col.row[k]] - s.mean);
        s.cov[node.factor] += c / double(l.size() - 1);
      }
    out.push_back(std::move(s));
  }
  return out;
}

Expected<HistoryVerdict> judge(const std::vector<RunSummary> &history, const std::vector<RunSummary> &head,
                               const HistoryOptions &o) {
  const size_t n = std::min(history.size(), std::max<size_t>(o.history_runs, 3));
  if (n < 3)
    return Error{fmt::format("the history holds {} run{}: at least 3 are needed to learn its noise (record main's "
                             "runs into it with --record)",
                             history.size(), history.size() == 1 ? "" : "s")};
  if (head.empty()) return Error{"nothing to judge: give the new build's runs (--runs FILE...)"};
  const size_t from = history.size() - n, m = head.size(), total = n + m;
  HistoryVerdict v;
  v.history_runs = n;
  v.head_runs = m;
  // The pool: the history's last n runs, then the head's m. Each statistic is
  // compared by a permutation test over it: were the head's runs any m of
  // the pool's (the same build, runs exchangeable), how often would their
  // statistic be as high? That holds whatever the runs' distribution is (on
  // minidb: a p99 with a second mode where a stall burst doubles it), where a
  // normal model fitted to a few runs raised 4-8 false alarms in 100 at a 1%
  // rate (docs/gate.md).
  std::vector<const RunSummary *> pool;
  for (size_t k = from; k < history.size(); ++k) pool.push_back(&history[k]);
  for (const RunSummary &r : head) pool.push_back(&r);
  // Outlier runs: a p99 beyond the history's median by kOutlierSigmas of
  // its lower half's spread. The line is the history's, the reference: from
  // the whole pool, a head that moved raised it over the history's bursts
  // (and the +35% plant was caught less often). Their count is one check;
  // each level check below has its own line, by the same rule.
  std::vector<double> l99;
  for (const RunSummary *r : pool) l99.push_back(log_of(r->p99));
  const Robust r99 = lower_robust(std::vector<double>(l99.begin(), l99.begin() + ptrdiff_t(n)));
  const double outlier_at = r99.centre + kOutlierSigmas * r99.sigma;
  std::vector<char> out(total);
  size_t out_h = 0, out_m = 0;
  for (size_t k = 0; k < total; ++k) {
    out[k] = l99[k] > outlier_at;
    (k < n ? out_h : out_m) += out[k];
  }
  // The arrangements: every m-subset of the pool when there are at most
  // kExact of them, else kSampled random ones (and the head's own).
  constexpr double kExact = 100000;
  constexpr size_t kSampled = 20000;
  double arrangements = 1;
  for (size_t k = 0; k < m; ++k) arrangements = arrangements * double(total - k) / double(k + 1);
  std::vector<uint32_t> subsets;  // m indices each
  if (arrangements <= kExact) {
    std::vector<uint32_t> c(m);
    std::iota(c.begin(), c.end(), 0u);
    for (;;) {
      subsets.insert(subsets.end(), c.begin(), c.end());
      size_t i = m;
      while (i > 0 && c[i - 1] == total - m + i - 1) --i;
      if (i == 0) break;
      ++c[i - 1];
      for (size_t j = i; j < m; ++j) c[j] = c[j - 1] + 1;
    }
  } else {
    std::mt19937_64 rng(o.seed);
    std::vector<uint32_t> idx(total);
    std::iota(idx.begin(), idx.end(), 0u);
    for (size_t s = 0; s < kSampled; ++s) {
      for (size_t j = 0; j < m; ++j) std::swap(idx[j], idx[j + rng() % (total - j)]);
      subsets.insert(subsets.end(), idx.begin(), idx.begin() + ptrdiff_t(m));
    }
    for (size_t j = 0; j < m; ++j) subsets.push_back(uint32_t(n + j));
  }
  const size_t count = subsets.size() / m;
  int gated = 1;  // the outliers' count
  for (const Judged &q : kJudged) gated += q.gated;
  auto threshold_of = [&](const Judged &q) {  // the change a regression also needs
    return q.unit == Unit::ns2 ? o.max_var_increase
           : q.level           ? std::max(o.max_p99_increase, o.max_level_increase)
                               : o.max_p99_increase;
  };
  // A subset's statistic: the mean of its runs' values, where an outlier
  // run's value is the history's level (a burst is judged by the count of
  // outliers alone: were it left out, a subset of one high run and two
  // bursts would be as high as that one run). When every head run is an
  // outlier, every run counts as it is: a head moved that far is compared
  // by its level too (choosing so adds at most the chance of m outliers in
  // m runs times alpha to the false alarms).
  auto p_value = [&](const std::vector<double> &f) {
    auto stat = [&](const uint32_t *s) {
      double sum = 0;
      for (size_t j = 0; j < m; ++j) sum += f[s[j]];
      return sum;
    };
    double t = 0;
    for (size_t j = 0; j < m; ++j) t += f[n + j];
    t -= 1e-9 * (1 + std::fabs(t));
    size_t beyond = 0;
    for (size_t s = 0; s < count; ++s) beyond += stat(&subsets[s * m]) >= t;
    return double(beyond) / double(count);
  };
  // One statistic's values over the pool: its logs x, and f, the values its
  // arrangements are summed from (an outlier run's at the history's level).
  // Each statistic has its own outlier line, by the same rule as the p99's:
  // a run whose p99 a stall burst doubled may keep its p90 (on LevelDB, whose
  // runs' p99 spread is 0.75 on a log scale and p90's 0.08, left out of the
  // p90 check by their p99 they hid a +26% p90 from 3 runs in 4).
  struct Prepared {
    std::vector<double> x, f;
    std::vector<char> out;
    double centre = 0, h = 0;  // the history's and the head's level (mean log, outliers apart)
    double line = 0;           // a run beyond it is an outlier
    bool capped = false;       // outliers count at the line (Judged::capped)
  };
  auto prepare = [&](const Judged &j) {
    Prepared q;
    q.x.resize(total);
    for (size_t k = 0; k < total; ++k) q.x[k] = log_of(j.of(*pool[k]));
    const Robust rq = lower_robust(std::vector<double>(q.x.begin(), q.x.begin() + ptrdiff_t(n)));
    q.line = rq.centre + kOutlierSigmas * rq.sigma;
    q.capped = j.capped;
    q.out.resize(total);
    std::vector<double> hist, heads;
    size_t out_head = 0;
    for (size_t k = 0; k < total; ++k) {
      q.out[k] = q.x[k] > q.line;
      if (k < n && !q.out[k]) hist.push_back(q.x[k]);
      if (k >= n) {
        out_head += q.out[k];
        if (!q.out[k]) heads.push_back(q.x[k]);
      }
    }
    if (hist.empty()) hist.assign(q.x.begin(), q.x.begin() + ptrdiff_t(n));
    if (heads.empty()) heads.assign(q.x.begin() + ptrdiff_t(n), q.x.end());  // each head run an outlier
    q.centre = mean_of(hist);
    q.h = mean_of(heads);
    q.f = q.x;
    if (q.capped || out_head < m)  // when every head run is an outlier (a regression that far), all runs count as they are
      for (size_t k = 0; k < total; ++k)
        if (q.out[k]) q.f[k] = q.capped ? q.line : q.centre;
    return q;
  };
  // The level a gated check's p-value must reach: Westfall and Young's minP
  // over the arrangements, so that the chance that any gated check of an
  // unchanged build is a regression is `alpha`. p90's and p99's statistics
  // move together, so this level is higher than alpha over the number of
  // checks (Bonferroni's), and as exact.
  std::vector<Prepared> prepared;  // each of kJudged's, once
  for (const Judged &q : kJudged) prepared.push_back(prepare(q));
  std::vector<double> outliers_in(count, 0.0);  // each arrangement's count of outlier runs
  for (size_t s = 0; s < count; ++s)
    for (size_t j = 0; j < m; ++j) outliers_in[s] += out[subsets[s * m + j]];
  double level = 0;
  {
    // An arrangement counts a check's p-value only where its change is
    // beyond that check's threshold, as a decision does: a p90 that must
    // double to fail (max_level_increase) takes little of the false alarms'
    // share, and the level stays `alpha` for the rule as applied.
    std::vector<std::vector<double>> stats{outliers_in};  // per gated check, per arrangement
    std::vector<double> beyond{-INFINITY};                // the sum over m runs a change must exceed
    for (size_t i = 0; i < std::size(kJudged); ++i) {
      if (!kJudged[i].gated) continue;
      std::vector<double> &st = stats.emplace_back(count, 0.0);
      for (size_t s = 0; s < count; ++s)
        for (size_t j = 0; j < m; ++j) st[s] += prepared[i].f[subsets[s * m + j]];
      beyond.push_back(double(m) * (prepared[i].centre + std::log1p(threshold_of(kJudged[i]))));
    }
    std::vector<double> min_p(count, 1.0);
    for (size_t c = 0; c < stats.size(); ++c) {
      const std::vector<double> &v = stats[c];
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      for (size_t s = 0; s < count; ++s) {
        if (v[s] <= beyond[c]) continue;
        const double t = v[s] - 1e-9 * (1 + std::fabs(v[s]));
        const size_t below = size_t(std::lower_bound(sorted.begin(), sorted.end(), t) - sorted.begin());
        min_p[s] = std::min(min_p[s], double(count - below) / double(count));
      }
    }
    std::sort(min_p.begin(), min_p.end());
    // The largest p-value with at most alpha of the arrangements at or below
    // it: the k-th smallest, or just below it when its ties run past k; never
    // above alpha, what one check alone would have (fewer than k arrangements
    // with a change beyond a threshold: alpha).
    const size_t k = size_t(o.alpha * double(count));
    if (k > 0) {
      level = min_p[k - 1];
      if (level >= 1.0) level = o.alpha;
      else if (k < count && min_p[k] == level) level = std::nextafter(level, 0.0);
      level = std::min(level, o.alpha);
    }
  }
  // Even a head far above every history run is as high as 1 arrangement in
  // `count`: with too few runs nothing could be caught.
  const bool can_catch = level > 0 && 1.0 / double(count) <= level;
  v.level = level;
  std::string caught;
  for (size_t i = 0; i < std::size(kJudged); ++i) {
    const Judged &q = kJudged[i];
    HistoryCheck c;
    c.what = q.name;
    c.gated = q.gated;
    c.unit = q.unit;
    c.threshold = threshold_of(q);
    const Prepared &pq = prepared[i];
    const std::vector<double> &x = pq.x, &f = pq.f;
    const double centre = pq.centre, h = pq.h;
    c.history = std::exp(centre);
    c.head = std::exp(h);
    c.change = std::exp(h - centre) - 1;
    c.p = p_value(f);
    // The smallest increase these runs would catch: the head's runs, none an
    // outlier, moved (their spread kept) until their level is the
    // history's times 1 + d and its p-value below the level.
    c.detectable = INFINITY;
    if (can_catch) {
      std::vector<double> g = f;
      auto p_at = [&](double d) {
        for (size_t j = 0; j < m; ++j) {
          g[n + j] = (pq.out[n + j] ? h : x[n + j]) - h + centre + std::log1p(d);
          if (pq.capped) g[n + j] = std::min(g[n + j], pq.line);
        }
        return p_value(g);
      };
      c.detectable = std::max(c.threshold, smallest_caught(p_at, level, 1e6));
    }
    c.limit = c.history * (1 + c.detectable);
    c.moved = c.p <= level && c.change > std::min(c.threshold, o.max_p99_increase);
    c.regression = c.gated && c.p <= level && c.change > c.threshold;
    v.regression = v.regression || c.regression;
    if (c.gated && can_catch && std::isfinite(c.detectable))
      caught += fmt::format("{}a {} increase of {:.0f}% or more", caught.empty() ? "" : ", ", q.name,
                            100 * c.detectable);
    v.checks.push_back(c);
  }
  {
    // The count of the head's outlier runs: as many among any m runs of the
    // pool (a hypergeometric tail, by counting arrangements).
    HistoryCheck c;
    c.what = "outlier runs";
    c.gated = true;
    c.outliers = true;
    c.history = double(out_h) / double(n);
    c.head = double(out_m) / double(m);
    c.change = c.head - c.history;
    c.limit = std::exp(outlier_at);  // a run's p99 above this is an outlier
    auto tail = [&](size_t k) {  // the share of arrangements with k or more outliers
      const auto beyond = std::count_if(outliers_in.begin(), outliers_in.end(), [&](double o_s) { return o_s >= double(k); });
      return double(beyond) / double(count);
    };
    c.p = tail(out_m);
    // The fewest outliers among m runs that would be a regression: k of the
    // head's runs outliers make out_h + k in the pool, and k or more of them
    // fall among m runs drawn from it as a hypergeometric tail says (the
    // pool as it is holds the head's own, not k: against a history without
    // one, any k looked caught).
    auto log_choose = [](double a, double b) { return std::lgamma(a + 1) - std::lgamma(b + 1) - std::lgamma(a - b + 1); };
    auto tail_with = [&](size_t k) {
      const size_t all = out_h + k;
      double p = 0;
      for (size_t j = k; j <= std::min(m, all); ++j)
        if (m - j <= total - all)
          p += std::exp(log_choose(double(all), double(j)) + log_choose(double(total - all), double(m - j)) -
                        log_choose(double(total), double(m)));
      return p;
    };
    size_t need = m + 1;
    for (size_t k = m + 1; k-- > 1;)
      if (tail_with(k) <= level) need = k;
    c.detectable = double(need);
    c.regression = c.p <= level;
    v.regression = v.regression || c.regression;
    v.outliers = fmt::format("{} of {} run{} with a p99 beyond {} (the history: {} of {})", out_m, m,
                             m == 1 ? "" : "s", pct(std::exp(outlier_at - r99.centre) - 1), out_h, n);
    if (need <= m)
      caught += fmt::format("{}{} outlier run{} of {}", caught.empty() ? "" : ", ", need, need == 1 ? "" : "s", m);
    v.checks.push_back(c);
  }
  if (can_catch) {
    v.detectable = fmt::format("with {} run{} against {}, {} would be caught", m, m == 1 ? "" : "s", n, caught);
  } else {
    // The fewest history runs with which these m could catch anything.
    size_t need = n;
    // (at Bonferroni's level, alpha over the checks: a bound)
    const double bound = o.alpha / gated;
    for (double a = arrangements; 1.0 / a >= bound && need < 100000; ++need)
      a = a * double(need + m + 1) / double(need + 1);
    v.detectable = fmt::format("with {} run{} against {}, nothing could be caught: however high, the head's "
                               "runs would be the highest {} of the {} by chance 1 time in {:.0f}, not below {:.3g}; "
                               "{} history runs would do",
                               m, m == 1 ? "" : "s", n, m, total, arrangements, bound, need);
  }
  v.moved = moves(median_cov(history, from, history.size()), median_cov(head, 0, m), median_var(history, from, history.size()),
                  median_var(head, 0, m));
  v.shares = share_checks(pool, n, m, p_value, level, can_catch, v.moved.empty() ? "" : v.moved.front().factor);
  std::string why;
  for (const HistoryCheck &c : v.checks) {
    if (!c.gated) continue;
    if (c.outliers)
      why += fmt::format("{}{} (p {:.3f})", why.empty() ? "" : ", ", v.outliers, c.p);
    else
      why += fmt::format("{}{} {} (p {:.3f}{})", why.empty() ? "" : ", ", c.what, pct(c.change), c.p,
                         c.regression ? fmt::format(", beyond {}", pct(c.threshold)) : "");
  }
  v.summary = fmt::format("{}: {} ({} run{}, outlier runs apart) against the last {} runs of the history{}",
                          v.regression ? "REGRESSION" : "PASS", why, m, m == 1 ? "" : "s", n,
                          can_catch ? "" : " (too few runs to catch anything)");
  if (v.regression && !v.moved.empty() && v.moved.front().part > 0)
    v.summary += fmt::format("; {:.0f}% of the variance's increase from {}", 100 * v.moved.front().part,
                             v.moved.front().factor);
  v.shifted = shifted_alike(v);
  if (!v.shifted.empty()) v.summary += "; " + v.shifted;
  if (!v.regression) v.levels = levels_moved(v, o.max_level_increase);  // a regression's table shows them
  if (!v.levels.empty()) v.summary += "; " + v.levels;
  return v;
}

namespace {

// The E-divisive statistic of splitting runs [0, n) at k, for every k with
// at least `seg` runs a side, from their distances d (n x n): the energy
// distance between the two sides, scaled by ab / (a + b) (Matteson and
// James, 2014, with exponent 1). Returns the largest and its k (0: none).
double best_energy_split(const std::vector<double> &d, size_t n, size_t seg, size_t &at) {
  // within(k) = Σ_{i<j<k} d_ij, rest(k) = Σ_{k<=i<j} d_ij, across(k) =
  // Σ_{i<k<=j} d_ij, moved along k with each run's sums to the left and right.
  std::vector<double> left(n, 0.0), right(n, 0.0);
  double rest = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) rest += d[i * n + j];
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) (j < i ? left : right)[i] += d[i * n + j];
  double within = 0, across = 0, best = 0;
  at = 0;
  for (size_t k = 1; k < n; ++k) {
    // Run k − 1 moves from the right side to the left.
    const size_t r = k - 1;
    within += left[r];
    rest -= right[r];
    across += right[r] - left[r];
    if (k < seg || n - k < seg) continue;
    const double a = double(k), b = double(n - k);
    const double q = a * b / (a + b) *
                     (2 * across / (a * b) - within / (a * (a - 1) / 2) - rest / (b * (b - 1) / 2));
    if (q > best) best = q, at = k;
  }
  return best;
}

}  // namespace

std::vector<ChangePoint> change_points(const std::vector<RunSummary> &history, const HistoryOptions &o) {
  std::vector<ChangePoint> out;
  const size_t n_all = history.size();
  const size_t seg = std::max<size_t>(o.min_segment, 2);
  if (n_all < 2 * seg) return out;
  // Each run as a point: its log p50, p90 and p99, each scaled by the
  // history's median and MAD (a distribution that changed shape, p50 down
  // and p90 up, is a step too: a delay in a closed loop does that on minidb).
  constexpr double RunSummary::*kAxes[] = {&RunSummary::p50, &RunSummary::p90, &RunSummary::p99};
  std::vector<std::array<double, 3>> x(n_all);
  for (size_t a = 0; a < 3; ++a) {
    std::vector<double> v = logs(history, 0, n_all, kAxes[a]);
    const double med = median_of(v);
    std::vector<double> dev(v.size());
    for (size_t i = 0; i < v.size(); ++i) dev[i] = std::fabs(v[i] - med);
    const double sigma = std::max(1.4826 * median_of(dev), 1e-6);
    for (size_t i = 0; i < n_all; ++i) x[i][a] = (v[i] - med) / sigma;
  }
  std::mt19937_64 rng(o.seed);
  std::vector<std::pair<size_t, size_t>> todo{{0, n_all}};
  while (!todo.empty()) {
    auto [lo, hi] = todo.back();
    todo.pop_back();
    const size_t n = hi - lo;
    if (n < 2 * seg) continue;
    std::vector<double> d(n * n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        double s2 = 0;
        for (size_t a = 0; a < 3; ++a) s2 += (x[lo + i][a] - x[lo + j][a]) * (x[lo + i][a] - x[lo + j][a]);
        d[i * n + j] = std::sqrt(s2);
      }
    size_t at = 0;
    const double t = best_energy_split(d, n, seg, at);
    if (at == 0) continue;
    size_t beyond = 0;
    std::vector<size_t> perm(n);
    std::iota(perm.begin(), perm.end(), size_t{0});
    std::vector<double> dp(n * n);
    for (int k = 0; k < o.permutations; ++k) {
      std::shuffle(perm.begin(), perm.end(), rng);
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) dp[i * n + j] = d[perm[i] * n + perm[j]];
      size_t ignored = 0;
      if (best_energy_split(dp, n, seg, ignored) >= t) ++beyond;
    }
    const double p = double(beyond + 1) / double(o.permutations + 1);
    if (p >= o.alpha) continue;
    ChangePoint c;
    c.at = lo + at;
    c.commit = history[c.at].commit;
    c.p = p;
    for (const auto &[name, field] : {std::pair<const char *, double RunSummary::*>{"p50", &RunSummary::p50},
                                      {"p90", &RunSummary::p90},
                                      {"p99", &RunSummary::p99},
                                      {"variance", &RunSummary::var}}) {
      const double before = median_of(logs(history, lo, c.at, field));
      const double after = median_of(logs(history, c.at, hi, field));
      c.steps.push_back({name, std::exp(after - before) - 1});
    }
    auto m = moves(median_cov(history, lo, c.at), median_cov(history, c.at, hi), median_var(history, lo, c.at),
                   median_var(history, c.at, hi));
    if (!m.empty()) c.factor = m.front().factor, c.factor_part = m.front().part;
    out.push_back(c);
    todo.push_back({lo, c.at});
    todo.push_back({c.at, hi});
  }
  std::sort(out.begin(), out.end(), [](const ChangePoint &a, const ChangePoint &b) { return a.at < b.at; });
  return out;
}

}  // namespace vprof::analyzer
