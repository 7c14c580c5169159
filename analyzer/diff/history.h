// The gate against a history of main (`vprof gate --history DIR`, docs/gate.md,
// "Against a history"): each main run's saved profile is kept in DIR, and a
// head's few runs are judged against the last N of them. Each quantity's
// noise is the history's own run-to-run spread, so a head needs few runs,
// and what a decision could catch is said beside it:
//   with 3 runs against 20, a p99 increase of 12% or more would be caught
// A run is summarized by its mean, p50, p90, p99 and p99.9 latency and its
// variance (change points: on a log scale), and the covariance with the latency of each factor (its terminal
// parts, grouped by factor name: a cause's Held parts by its holder's), which
// names what moved and gives the top factors' shares.
//
// Two uses:
//   judge          the head's m runs against the history's last N: each
//                  statistic of a run (p90/p50 gated; p90 and p99 gated
//                  beyond max_level_increase, said when they moved short of
//                  it; variance, p50, mean, p99.9 reported) on a log scale, the head's mean over its
//                  runs without an outlier (a run whose p99 is far beyond the
//                  history's: on minidb one run in six or seven has a stall
//                  burst that doubles its p99), its p-value a permutation
//                  test's: the share of the m-subsets of the N + m runs
//                  whose statistic is as high (all of them, or 20 000 drawn).
//                  Exact whatever the runs' distribution, where a normal
//                  model fitted to a few runs with bursts raised 4-8 false
//                  alarms in 100 at a 1% rate. The outlier runs' count is
//                  judged the same way. Regression when a gated check's
//                  p-value is at or below the minP level (Westfall and
//                  Young: the alpha quantile of each arrangement's smallest
//                  p-value, a family-wise `alpha` over the correlated
//                  checks) and its change beyond the threshold; else pass. No
//                  "inconclusive": what the runs could not catch is printed
//                  as the detectable change (nothing at all when 1 / C(N+m, m)
//                  is not below the level: too few runs).
//   change_points  when the runs' latency distribution stepped along the
//                  history (E-divisive: binary segmentation by the energy
//                  distance of the runs' p50, p90 and p99, each split's
//                  significance by permutation), with each quantity's step,
//                  the p-value, the run it happened at (its build's commit)
//                  and the factor whose covariance moved most.
#ifndef VPROF_ANALYZER_DIFF_HISTORY_H
#define VPROF_ANALYZER_DIFF_HISTORY_H

#include <map>
#include <string>
#include <vector>

#include "analyzer/profile/profile.h"

namespace vprof::analyzer {

// One run as the history keeps it.
struct RunSummary {
  std::string source;  // the profile it came from
  std::string commit;  // its build's (BuildInfo::commit; "" when unknown)
  size_t intervals = 0;
  double mean = 0, var = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0;  // latency, ns and ns²
  std::map<std::string, double> cov;  // factor -> Cov(its parts, L), ns²
};

// The summary of each run of a profile (a saved profile holds one run, or
// several: a merged analysis).
std::vector<RunSummary> summarize(const Profile &p);

struct HistoryOptions {
  size_t history_runs = 20;         // the last N runs of the history are the reference
  double alpha = 0.01;              // family-wise false-alarm rate of one decision
  double max_var_increase = 0.10;   // a change smaller than this is never a regression
  double max_p99_increase = 0.05;
  // p90 and p99 fail only beyond this (a doubling: more than a slow spell of the host
  // moved them); within it a move is said (HistoryVerdict::levels). A runner that holds
  // still lowers it, down to max_p99_increase.
  double max_level_increase = 1.0;
  int permutations = 999;           // change points: permutations per split
  size_t min_segment = 4;           // change points: runs on each side of a step, at least
  uint64_t seed = 1;
};

// What a check's values are: ns (a latency), ns² (the variance), or a ratio
// of two latencies (p90/p50).
enum class Unit { ns, ns2, ratio };

struct HistoryCheck {
  std::string what;         // "p90", "p99", "variance", ...
  Unit unit = Unit::ns;     // of history, head and limit (shares: fractions of Var(L))
  bool gated = false;       // p90, p99, p90/p50 and the outlier runs decide; the others are reported
  double history = 0;       // the history's (the geometric mean of its runs without an outlier; ns, or ns²)
  double head = 0;          // the head's (the geometric mean of its runs without an outlier)
  double change = 0;        // head / history − 1
  double p = 1;             // one-sided p-value (a permutation test's)
  double limit = 0;         // a regression is above it (at alpha/gated)
  double detectable = 0;    // the smallest increase these runs would catch (relative, inf: none; outlier runs: a count)
  double threshold = 0;     // the change a regression also needs
  bool moved = false;       // p at or below the level and the change beyond max_p99_increase (failed or not)
  bool regression = false;
  // The outlier runs' check: history and head are rates (outliers per run),
  // limit the p99 beyond which a run is one, detectable a count of the head's.
  bool outliers = false;
};

struct FactorMove {
  std::string factor;
  double history = 0, head = 0;  // mean Cov(factor, L), ns²
  double part = 0;               // (head − history) / the variance's change
};

struct HistoryVerdict {
  bool regression = false;
  size_t history_runs = 0, head_runs = 0;
  std::vector<HistoryCheck> checks;
  std::vector<FactorMove> moved;  // the factors whose covariance grew most, largest first
  // Shares of Var(L), reported, not gated: the history's 3 largest factors
  // (median over its runs), the head's largest and the one named as moved. what: the factor;
  // history, head: mean shares; change and detectable: in points (head −
  // history, 0.05 = 5 points), each run's share Cov(F, L) / Var(L).
  std::vector<HistoryCheck> shares;
  std::string summary;            // one line: the verdict and why
  std::string detectable;         // "with 3 runs against 20, a p99 increase of 12% or more ..."
  std::string outliers;           // "2 of 3 runs with a p99 beyond +66% (the history: 3 of 20)"
  // "" unless a regression is the whole distribution moved alike (p90/p50
  // not beyond chance, p50 moved at least half as far as p90): said in the
  // summary, as a slower build and a slower host read the same.
  std::string shifted;
  std::string levels;             // p90's or p99's move short of max_level_increase, in a pass ("" when none)
  double level = 0;               // a gated check is a regression at or below this p-value (minP)
};

// history in the order the runs were recorded (oldest first); its last
// o.history_runs are used. At least 3 history runs and 1 head run (else an
// error the caller says).
Expected<HistoryVerdict> judge(const std::vector<RunSummary> &history, const std::vector<RunSummary> &head,
                               const HistoryOptions &o);

struct ChangePoint {
  size_t at = 0;           // the first run after the step (index in the history)
  std::string commit;      // that run's
  // Each quantity's step: after / before − 1, the medians of the two sides
  // (p50, p90, p99, variance).
  std::vector<std::pair<std::string, double>> steps;
  double p = 1;            // permutation p-value of the split
  std::string factor;      // the factor whose covariance moved most across it
  double factor_part = 0;  // its part of the variance's change there
};

// Where the runs' latency distribution stepped along the whole history, by
// run index: E-divisive (the energy distance between the runs before and
// after a split, of each run's log p50, p90 and p99 scaled by the history's
// median and MAD), binary segmentation, each split's significance by
// permutation.
std::vector<ChangePoint> change_points(const std::vector<RunSummary> &history, const HistoryOptions &o);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_DIFF_HISTORY_H
