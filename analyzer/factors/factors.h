// Factors and their ranking (METHOD §5, the paper's Algorithm 1). A factor is
// Var(f) or Cov(f, g); its instances are the tree's terms that name it (f
// through several call sites or parents), and its contribution is their sum.
// An instance nested below another instance of the same factor (recursion)
// is already inside that one and is not added again.
//   specificity = max(0, H - height)^e, score = specificity × value,
// where a factor's value is its share (METHOD §4: the sum of its instances'
// Cov(X, root) / Var(root); the default) or, with FactorOptions::paper, its
// contribution (the paper's var/2·cov terms). With shares only functions,
// bodies and call sites are factors: a covariance is already split between
// its two parts' shares.
// Selection: factors with |value| >= d, ranked by |score| (covariances are
// signed), the first k. Bootstrap intervals (METHOD §7) are computed for
// the selected factors by resampling intervals; a factor whose 95% interval
// touches zero is marked not significant.
#ifndef VPROF_ANALYZER_FACTORS_FACTORS_H
#define VPROF_ANALYZER_FACTORS_FACTORS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/factors/heights.h"
#include "analyzer/tree/columns.h"
#include "analyzer/tree/variance_tree.h"
#include "analyzer/util/workers.h"

namespace vprof::analyzer {

struct FactorSite {
  std::optional<CallSiteInfo> call_site;
  std::optional<CallSiteInfo> other_call_site;  // Cov: the second part's site
  std::string label;                            // the instance's tree label
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
};

struct FactorOptions {
  bool paper = false;  // rank by the paper's terms (--contribution paper), not by shares
  int k = 3;
  double d = 0.05;
  double e = 2.0;
  int bootstrap = 200;     // resamples; 0 = no intervals
  uint64_t seed = 20161104;
  // The bootstrap's sums are shared out to these workers (null: one thread);
  // the intervals do not depend on it.
  Workers *workers = nullptr;
};

// All factors of the tree, selected ones first in rank order, then the rest
// by |score|. The tree must outlive the result (instances point into it).
std::vector<Factor> rank_factors(const VarNode &tree, const Heights &h, const FactorOptions &o);

// What a factor is ranked by: its share, or with `paper` its contribution.
inline double ranked_value(const Factor &f, bool paper) { return paper ? f.contribution : f.share; }
inline double ranked_value(const FactorSite &s, bool paper) { return paper ? s.contribution : s.share; }

// Fills ci95 for the selected factors whose instances all come from `run`,
// whose data is `c`.
void bootstrap_factors(std::vector<Factor> &factors, const Columns &c, int run,
                       const FactorOptions &o);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_FACTORS_H
