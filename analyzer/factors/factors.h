// Factors and their ranking (docs/method.md, "Factors", the paper's Algorithm
// 1). A factor is Var(f) or Cov(f, g); its instances are the tree's terms that
// name it (f through several call sites or parents), and its contribution is
// their sum. An instance nested below another instance of the same factor
// (recursion) is already inside that one and is not added again.
//   specificity = max(0, H - height)^e, score = specificity × value,
// where a factor's value is its share (docs/method.md, "The variance tree": the
// sum of its instances' Cov(X, root) / Var(root); the default) or, with
// FactorOptions::paper, its contribution (the paper's var/2·cov terms). With
// shares only functions, bodies and call sites are factors: a covariance is
// already split between its two parts' shares.
// Selection: factors with |value| >= d, ranked by |score| (covariances are
// signed), the first k. Bootstrap intervals (docs/method.md, "Beyond the
// papers") are computed for the candidates by resampling intervals; a factor
// whose 95% interval touches zero is marked not significant. The candidates are
// the first k; when one of them is fragile, also the eligible factors whose
// |score| is more than half the smallest fragile selected one's (at most 2k in
// all): no other factor can be selected after the halving.
//
// Fragile answers: a factor's term is a sum of per-interval pieces (for a
// share (x_s − x̄)(l_s − l̄) / ((n−1)·Var(L)); for the paper's terms the same
// with a factor column in place of L). top_share = the part of the term the
// ceil(0.1% · n) intervals with the largest pieces (at least one) carry,
// max_one = the largest single piece's part, pieces and parts taken in the
// direction of the term's sign. fragile := ci95 wider than |its value| or
// max_one > 1/2. rerank_fragile then ranks the candidates by |score|, a
// fragile factor's counting half: a fragile factor lands below any stable
// one whose score is more than half its own ("similar").
//
// Runs (docs/method.md, "The variance tree"): a factor grafted from a later run
// r is measured in r — each run instruments the whole chain up to the root — so
// its interval, tails and concentration come from run r's own columns against
// run r's own root, through its instances in run r's tree (found by node key),
// and are of its value in run r (run_value).
#ifndef VPROF_ANALYZER_FACTORS_FACTORS_H
#define VPROF_ANALYZER_FACTORS_FACTORS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/factors/defaults.h"
#include "analyzer/factors/heights.h"
#include "analyzer/tree/columns.h"
#include "analyzer/tree/variance_tree.h"
#include "analyzer/util/workers.h"

namespace vprof::analyzer {

struct FactorSite {
  std::optional<CallSiteInfo> call_site;
  std::optional<CallSiteInfo> other_call_site;  // Cov: the second part's site
  std::string label;                            // the instance's tree label
  // The nearest call site above the instance in the tree: what tells two
  // instances at one place apart (a wait inside a wrapper such as LevelDB's
  // port::CondVar::Wait, called from several places).
  std::optional<CallSiteInfo> parent_site;
  double contribution = 0;
  double share = 0;
};

struct Factor {
  int rank = 0;                 // 1-based among the selected; 0 = not selected
  bool covariance = false;
  std::string name;             // "f", "f (body)", "cov(f, g)"
  std::vector<std::string> functions;
  double contribution = 0;
  double share = 0;             // 0 for a covariance
  double specificity = 0, score = 0;
  int height = 0;
  std::vector<FactorSite> call_sites;   // per instance, largest |contribution| first
  std::vector<const VarNode *> instances;
  std::optional<std::pair<double, double>> ci95;  // of the value ranked by
  bool significant = true;
  std::optional<double> tail99, tail999;  // tail.h; filled for the selected factors
  // What a fix would buy (tail.h): the root's variance and p99 if the
  // factor's time were its mean in every interval, the rest as measured, as
  // changes (−0.48: −48%) of the run's own; selected variance factors.
  std::optional<double> fixed_var_change, fixed_p99_change;
  // Their 95% intervals over the resamples of ci95, set by bootstrap_factors
  // for every assessed candidate; reported only beside a fixed_* value.
  std::optional<std::pair<double, double>> fixed_var_ci95, fixed_p99_ci95;
  bool candidate = false;  // could be selected: assessed before the final ranking
  // Not selected because it nests with a selected factor (shares only): the
  // selected factor's name. Its share is already on the list.
  std::string nested_with;
  bool assessed = false;   // bootstrap_factors has seen it
  // The run that measured it: its instances' latest run when that run's own
  // tree holds them all (by key); -1 when none does (nothing is assessed).
  int run = -1;
  std::vector<const VarNode *> run_instances;  // in runs[run]'s own tree
  std::optional<double> run_value;   // its ranked value in that run alone (ci95 is of this)
  // How runs differ (between_runs): its value in each run whose own tree
  // holds it as the run that measured it does, that run's first, and ci95
  // widened by their spread (nullopt under 2 runs or without ci95).
  std::vector<double> run_values;
  std::optional<std::pair<double, double>> runs_ci95;
  int runs_measured() const { return int(run_values.size()); }  // 0: not compared (no run, or a cause)
  std::optional<double> top_share;   // the largest 0.1% of intervals' part of the term
  std::optional<double> max_one;     // the largest single interval's part of the term
  bool fragile = false;
  // A cause (causes.h): the share of its own time, and of the waits it held
  // up, by the wait (its label in the tree), largest first. Empty for a factor.
  struct HeldUp {
    std::string wait;                     // the wait's function
    std::optional<CallSiteInfo> site;     // and its call site, when it has one
    double share = 0;
  };
  double own_share = 0;
  std::vector<HeldUp> held_up;
};

struct FactorOptions {
  bool paper = false;  // rank by the paper's terms (--contribution paper), not by shares
  int k = kDefaultK;
  double d = kDefaultD;
  double e = kDefaultE;
  int bootstrap = 200;     // resamples; 0 = no intervals
  uint64_t seed = 20161104;
  // The bootstrap's sums are shared out to these workers (null: one thread);
  // the intervals do not depend on it.
  Workers *workers = nullptr;
  // A wait's Held parts (the blocked time by where the waker, working for
  // another interval, was: variance_tree.h) as factors in the wait's place:
  // the holder's code is named instead of the wait. Off: the wait is the
  // factor and its Held parts only break it down in the tree (analyze,
  // iterate). On: `vprof diff`/`gate`, which name what changed.
  bool held_parts = false;
};

// The share of Var(root) in the (preempted) and (recorder) leaves below n,
// and in the Held parts whose holder was off its CPU: the machine's, not the
// code's (the report's preemption figure).
double preempted_share(const VarNode &n);

// The threshold a factor's or cause's value must reach to be selected: d of
// what the code holds of Var(root), that is d × (1 − the machine's share).
// Shares stay fractions of Var(root) (docs/method.md, "Factors"); on a
// machine whose preemption holds 96% of Var(root), a function that holds
// 3% of it holds three quarters of the code's part, and the session breaks
// it down (tests/iterate/contended.c's `wake`, beside busy loops, ended on
// "no factor reaches d" with its planted 1 ms call at 3-4%).
double selection_threshold(const VarNode &tree, double d);

// All factors of the tree, selected ones first in rank order, then the rest
// by |score|; the selected are the first candidates. The tree must outlive
// the result (instances point into it).
std::vector<Factor> rank_factors(const VarNode &tree, const Heights &h, const FactorOptions &o);

// After the selected are assessed: marks the further candidates a fragile
// selected factor lets in (see above); false when there are none.
bool widen_candidates(std::vector<Factor> &factors, const FactorOptions &o);

// Sets run, run_instances and run_value of the candidates not yet placed;
// run_trees[r] is
// run r's own tree (they must outlive the factors).
void place_in_runs(std::vector<Factor> &factors, const std::vector<const VarNode *> &run_trees,
                   bool paper);

// For the placed candidates: the other runs whose own trees hold the factor
// as its run does (every part by key; a body, the rest of its parent, with
// the same parts beside it), its value in each, and
// runs_ci95: ci95 with the spread between runs added (a random effect: the
// variance of the values less the within-run variance, which the bootstrap
// of the measuring run gives for all of them, each side of ci95 widened in
// quadrature by 1.96 times its root; docs/method.md, "How runs differ").
void between_runs(std::vector<Factor> &factors, const std::vector<const VarNode *> &run_trees, bool paper);

// Ranks the candidates again by |score| with a fragile factor's counting
// half, and selects the first k of them (ranks 1..k); the rest follow.
void rerank_fragile(std::vector<Factor> &factors, const FactorOptions &o);

// What a factor is ranked by: its share, or with `paper` its contribution.
inline double ranked_value(const Factor &f, bool paper) { return paper ? f.contribution : f.share; }
inline double ranked_value(const FactorSite &s, bool paper) { return paper ? s.contribution : s.share; }

// A ci95 (ci95 or runs_ci95) as reported beside `value`, the merged value it
// stands by: it is around the value in the run that measured it
// (run_value), so it is scaled to `value` (the same relative width) and never
// excludes the value beside it. The table and the JSON print this one. The
// base run too: a cause measured there whose place later runs broke down
// keeps only the rest of it in the merged tree (LevelDB: AddRecord 4.6%
// merged, 29.4% in run 0, printed with run 0's [0.224, 0.341]).
inline std::optional<std::pair<double, double>> ci95_at(const std::optional<std::pair<double, double>> &ci,
                                                        const Factor &f, double value) {
  if (!ci) return std::nullopt;
  double scale = 1.0;
  if (f.run >= 0 && f.run_value && *f.run_value != 0 && value / *f.run_value > 0) scale = value / *f.run_value;
  return std::make_pair(scale * ci->first, scale * ci->second);
}

// The interval the reports print beside `value`: with the spread between
// runs where two or more runs hold the factor (runs_ci95), else its run's
// bootstrap, scaled as ci95_at does.
inline std::optional<std::pair<double, double>> shown_ci95(const Factor &f, double value) {
  return ci95_at(f.runs_ci95 ? f.runs_ci95 : f.ci95, f, value);
}

// Fills ci95, top_share, max_one, fragile and the fixed_* intervals for the
// candidates measured in `run` (Factor::run) and not yet assessed, whose data
// is `c`: one pass over the intervals for all of them. With o.bootstrap == 0
// only the concentration is filled.
void bootstrap_factors(std::vector<Factor> &factors, const Columns &c, int run,
                       const FactorOptions &o);
// The same over factors of several lists (the factors' and the causes'
// candidates in one pass: one set of weights, one root column).
void bootstrap_factors(const std::vector<Factor *> &factors, const Columns &c, int run,
                       const FactorOptions &o);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_FACTORS_H
