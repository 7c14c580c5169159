// The gate against a history of main (history.h).
#include "analyzer/diff/history.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

namespace vprof::analyzer {
namespace {

// The inverse of the standard normal distribution (Acklam's rational
// approximation, relative error below 1.2e-9).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425, hi = 1 - lo;
  if (p <= 0) return -INFINITY;
  if (p >= 1) return INFINITY;
  if (p < lo) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > hi) return -normal_quantile(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

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

// Change points: per-run values on a log scale.
struct Quantity {
  const char *name;
  double RunSummary::*field;
  bool gated;
};
constexpr Quantity kQuantities[] = {{"p90", &RunSummary::p90, true},
                                    {"p99", &RunSummary::p99, true},
                                    {"variance", &RunSummary::var, true}};

// A run is an outlier when its p99 is this many (robust) standard deviations
// of the history's p99 beyond its centre: on minidb's contended preset, where
// that spread is 0.11 on a log scale, a p99 66% above the history's (its stall
// bursts double it; a planted +35% stays below).
constexpr double kOutlierSigmas = 4.5;

// P(X >= k) for X ~ Binomial(m, p).
double binomial_tail(size_t m, size_t k, double p) {
  double t = 0;
  for (size_t i = k; i <= m; ++i) {
    double c = 1;
    for (size_t j = 0; j < i; ++j) c = c * double(m - j) / double(j + 1);
    t += c * std::pow(p, double(i)) * std::pow(1 - p, double(m - i));
  }
  return std::min(t, 1.0);
}

// judge: the statistics of a run, compared as the median over runs.
struct Judged {
  const char *name;
  double RunSummary::*field;
  bool gated;
  bool variance;  // its threshold is --max-var-increase (else --max-p99-increase)
};
// Variance is reported, not gated: on minidb its run-to-run spread (a log
// standard deviation of 0.63 against p90's 0.10) lets no handful of runs
// catch less than a doubling, and a third gated statistic costs false alarms.
constexpr Judged kJudged[] = {{"p90", &RunSummary::p90, true, false},  {"p99", &RunSummary::p99, true, false},
                              {"variance", &RunSummary::var, false, true}, {"p50", &RunSummary::p50, false, false},
                              {"mean", &RunSummary::mean, false, false},  {"p99.9", &RunSummary::p999, false, false}};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : (v[k - 1] + v[k]) / 2;
}

// A sample's median and its MAD as a standard deviation (a normal's): what a
// few runs with stall bursts move neither of.
struct Robust {
  double centre = 0, sigma = 0;
};
Robust robust(const std::vector<double> &x) {
  Robust r;
  r.centre = median_of(x);
  std::vector<double> dev(x.size());
  for (size_t k = 0; k < x.size(); ++k) dev[k] = std::fabs(x[k] - r.centre);
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
  const size_t from = history.size() - n, m = head.size();
  HistoryVerdict v;
  v.history_runs = n;
  v.head_runs = m;
  // Outlier runs: a run whose p99 is beyond the history's centre by
  // kOutlierSigmas of its spread. On minidb one run in six or seven has a
  // stall burst that doubles its p99, and two such among a head's three moved
  // its median as a regression would (2 false alarms in 20). How often runs
  // are outliers, not how far, is what a handful of head runs can judge: the
  // statistics below are compared over the runs that are not outliers (the
  // history's and the head's), and the count of the head's outliers against
  // the history's rate (a binomial tail). When every head run is an outlier
  // (a regression that moves every run that far), they are all compared.
  const Robust r99 = robust(logs(history, from, history.size(), &RunSummary::p99));
  const double c99 = r99.centre, outlier_at = c99 + kOutlierSigmas * r99.sigma;
  auto outlier = [&](const RunSummary &r) { return log_of(r.p99) > outlier_at; };
  std::vector<const RunSummary *> hist, heads;  // the runs that are not outliers
  for (size_t k = from; k < history.size(); ++k)
    if (!outlier(history[k])) hist.push_back(&history[k]);
  for (const RunSummary &r : head)
    if (!outlier(r)) heads.push_back(&r);
  if (hist.size() < 3) hist.clear();  // too few to learn from: every run counts
  if (hist.empty())
    for (size_t k = from; k < history.size(); ++k) hist.push_back(&history[k]);
  const size_t hn = hist.size(), hm = heads.size(), out_h = n - hn, out_m = m - hm;
  int gated = 1;  // the outliers' count
  for (const Judged &q : kJudged) gated += q.gated;
  const double z = normal_quantile(1 - o.alpha / gated);
  // The head median's standard error: the median of hm normal draws (its
  // variance in sigma² units: exact up to 5, pi/2m beyond) plus the history
  // median's own, pi/2N.
  static const double kMedianVar[] = {1.0, 1.0, 0.5, 0.449, 0.361, 0.287};
  const size_t mm = hm ? hm : m;  // every head run an outlier: they are all compared
  const double vm = mm < 6 ? kMedianVar[mm] : M_PI / (2.0 * double(mm));
  std::string caught;
  std::vector<double> x(hn), y(hm ? hm : m);
  for (const Judged &q : kJudged) {
    HistoryCheck c;
    c.what = q.name;
    c.gated = q.gated;
    c.threshold = q.variance ? o.max_var_increase : o.max_p99_increase;
    for (size_t k = 0; k < hn; ++k) x[k] = log_of(hist[k]->*q.field);
    for (size_t k = 0; k < y.size(); ++k) y[k] = log_of(hm ? heads[k]->*q.field : head[k].*q.field);
    const Robust r = robust(x);
    const double centre = r.centre, h = median_of(y);
    const double se = r.sigma * std::sqrt(vm + M_PI / (2.0 * double(hn)));
    c.history = std::exp(centre);
    c.head = std::exp(h);
    c.change = std::exp(h - centre) - 1;
    c.limit = std::exp(centre + z * se);
    c.p = 0.5 * std::erfc((h - centre) / se / std::sqrt(2.0));
    c.detectable = std::max(c.threshold, std::exp(z * se) - 1);
    c.regression = q.gated && h > centre + z * se && c.change > c.threshold;
    v.regression = v.regression || c.regression;
    if (q.gated)
      caught += fmt::format("{}a {} increase of {:.0f}% or more", caught.empty() ? "" : ", ", q.name,
                            100 * c.detectable);
    v.checks.push_back(c);
  }
  {
    // The history's rate, with half a run added to each side (a history
    // without an outlier does not make one outlier a certain regression).
    HistoryCheck c;
    c.what = "outlier runs";
    c.gated = true;
    c.outliers = true;
    const double rate = (double(out_h) + 0.5) / (double(n) + 1);
    c.history = double(out_h) / double(n);
    c.head = double(out_m) / double(m);
    c.change = c.head / rate - 1;
    c.limit = std::exp(outlier_at);  // a run's p99 above this is an outlier
    c.p = binomial_tail(m, out_m, rate);
    size_t need = m + 1;  // the fewest outliers among m runs that would be a regression
    for (size_t k = m + 1; k-- > 0;)
      if (binomial_tail(m, k, rate) < o.alpha / gated) need = k;
    c.detectable = double(need);
    c.regression = c.p < o.alpha / gated;
    v.regression = v.regression || c.regression;
    v.outliers = fmt::format("{} of {} run{} with a p99 beyond {} (the history: {} of {})", out_m, m,
                             m == 1 ? "" : "s", pct(std::exp(outlier_at - c99) - 1), out_h, n);
    if (need <= m)
      caught += fmt::format("{}{} outlier run{} of {}", caught.empty() ? "" : ", ", need, need == 1 ? "" : "s", m);
    v.checks.push_back(c);
  }
  v.detectable = fmt::format("with {} run{} against {}, {} would be caught", m, m == 1 ? "" : "s", n, caught);
  v.moved = moves(median_cov(history, from, history.size()), median_cov(head, 0, m), median_var(history, from, history.size()),
                  median_var(head, 0, m));
  std::string why;
  for (const HistoryCheck &c : v.checks) {
    if (!c.gated) continue;
    if (c.outliers)
      why += fmt::format("{}{} (p {:.3f})", why.empty() ? "" : ", ", v.outliers, c.p);
    else
      why += fmt::format("{}{} {} (p {:.3f}{})", why.empty() ? "" : ", ", c.what, pct(c.change), c.p,
                         c.regression ? fmt::format(", beyond {}", pct(c.threshold)) : "");
  }
  v.summary = fmt::format("{}: {} (medians of {} run{}) against the last {} runs of the history",
                          v.regression ? "REGRESSION" : "PASS", why, m, m == 1 ? "" : "s", n);
  if (v.regression && !v.moved.empty() && v.moved.front().part > 0)
    v.summary += fmt::format("; {:.0f}% of the variance's increase from {}", 100 * v.moved.front().part,
                             v.moved.front().factor);
  return v;
}

std::vector<ChangePoint> change_points(const std::vector<RunSummary> &history, const HistoryOptions &o) {
  std::vector<ChangePoint> out;
  std::mt19937_64 rng(o.seed);
  const size_t seg = std::max<size_t>(o.min_segment, 2);
  int gated = 0;
  for (const Quantity &q : kQuantities) gated += q.gated;
  for (const Quantity &q : kQuantities) {
    if (!q.gated) continue;
    const std::vector<double> all = logs(history, 0, history.size(), q.field);
    // The split of v with the largest standardized rank-sum (Mann-Whitney's
    // U, in z units), and it: ranks, so that a run with a stall burst counts
    // as one high value, not as a mean moved by itself.
    auto best_split = [&](const std::vector<double> &v, size_t &at) {
      const size_t len = v.size();
      std::vector<size_t> order(len);
      std::iota(order.begin(), order.end(), size_t{0});
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
      std::vector<double> rank(len);
      for (size_t r = 0; r < len; ++r) rank[order[r]] = double(r + 1);
      double best = 0, sum = 0;
      at = 0;
      const double n = double(len);
      for (size_t k = 1; k + seg <= len; ++k) {
        sum += rank[k - 1];
        if (k < seg) continue;
        const double a = double(k), b = n - a;
        const double u = sum - a * (a + 1) / 2;
        const double z = std::fabs(u - a * b / 2) / std::sqrt(a * b * (n + 1) / 12);
        if (z > best) best = z, at = k;
      }
      return best;
    };
    // Binary segmentation: a significant split, then each side on its own.
    std::vector<std::pair<size_t, size_t>> todo{{0, all.size()}};
    while (!todo.empty()) {
      auto [lo, hi] = todo.back();
      todo.pop_back();
      if (hi - lo < 2 * seg) continue;
      std::vector<double> v(all.begin() + ptrdiff_t(lo), all.begin() + ptrdiff_t(hi));
      size_t at = 0;
      const double t = best_split(v, at);
      if (at == 0) continue;
      size_t beyond = 0;
      std::vector<double> shuffled = v;
      for (int k = 0; k < o.permutations; ++k) {
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        size_t ignored = 0;
        if (best_split(shuffled, ignored) >= t) ++beyond;
      }
      const double p = double(beyond + 1) / double(o.permutations + 1);
      if (p >= o.alpha / gated) continue;
      ChangePoint c;
      c.at = lo + at;
      c.commit = history[c.at].commit;
      c.what = q.name;
      const double before = median_of(std::vector<double>(v.begin(), v.begin() + ptrdiff_t(at)));
      const double after = median_of(std::vector<double>(v.begin() + ptrdiff_t(at), v.end()));
      c.step = std::exp(after - before) - 1;
      c.p = p;
      auto m = moves(median_cov(history, lo, c.at), median_cov(history, c.at, hi), median_var(history, lo, c.at),
                     median_var(history, c.at, hi));
      if (!m.empty()) c.factor = m.front().factor, c.factor_part = m.front().part;
      out.push_back(c);
      todo.push_back({lo, c.at});
      todo.push_back({c.at, hi});
    }
  }
  std::sort(out.begin(), out.end(), [](const ChangePoint &a, const ChangePoint &b) {
    return a.at != b.at ? a.at < b.at : a.what < b.what;
  });
  return out;
}

}  // namespace vprof::analyzer
