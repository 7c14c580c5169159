// Tail attribution (docs/method.md, "Beyond the papers"): how much a factor
// moves the tail, not only the variance. For a variance factor f with
// per-interval time X_f (the sum of its instances' columns) and root value L:
//   tail_q(f) = (E[X_f | L >= p_q] - E[X_f]) / (E[L | L >= p_q] - E[L])
// the share of the tail's excess over the mean that f accounts for. Not
// divided by p_q - E[L]: the tail's own mean is used instead so that
// the shares of leaves tiling L add up to 1 (L is their sum, and both
// numerator and denominator are linear in it). Undefined (nullopt) for
// covariance factors, for factors no run's own tree holds (Factor::run < 0),
// and when p_q <= mean.
//
// What a fix would buy: with the factor's time replaced by its mean in every
// interval, L' = L − X_f + E[X_f] (the other parts kept as measured),
//   fixed_var_change = Var(L') / Var(L) − 1,  fixed_p99_change = p99(L') / p99(L) − 1.
// Their 95% intervals (fixed_*_ci95) come from bootstrap_factors, over the
// resamples of the factor's ci95: the variance change is one more weighted
// sum there, Var(L') − Var(L) = Var(X) − 2·Cov(X, L), and each resample's
// p99s are read off the same weights (resample.h's poisson_quantile).
// They are the prediction's sampling error, not whether it holds: removing a
// cause can also change what the other parts do (a shorter lock hold shortens
// the others' waits), which the prediction does not see.
//
// tail_shares fills tail99, tail999 and the fixed_* changes of the selected factors measured in
// `run` (Factor::run, through their run_instances), whose data is `c`, against
// that run's own root: the quantiles and the tail's rows are found once for
// all of them.
#ifndef VPROF_ANALYZER_FACTORS_TAIL_H
#define VPROF_ANALYZER_FACTORS_TAIL_H

#include <vector>

#include "analyzer/factors/factors.h"

namespace vprof::analyzer {

void tail_shares(std::vector<Factor> &factors, const Columns &c, int run);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_TAIL_H
