// The gate's decision (`vprof gate`, docs/gate.md): a regression is declared
// only when the lower end of a change's confidence interval exceeds its
// threshold, so noise alone (an interval that reaches below the threshold)
// passes. Its message names the factors of the change that grew most, with
// their call sites:
//   variance +38% [+21%, +57%] > +10%: 81% of the increase from
//   LockManager::wait_for_grant (lock_manager.cc:84) in LockManager::acquire
#ifndef VPROF_ANALYZER_DIFF_GATE_H
#define VPROF_ANALYZER_DIFF_GATE_H

#include <string>
#include <vector>

#include "analyzer/diff/diff.h"

namespace vprof::analyzer {

struct GateOptions {
  double max_var_increase = 0.10;  // fraction: +10% of Var(L)
  double max_p99_increase = 0.05;
};

struct GateCheck {
  std::string what;    // "variance", "p99"
  double change = 0;   // head/base − 1
  Interval ci;         // of the change
  double threshold = 0;
  bool failed = false;
};

struct GateResult {
  bool regression = false;
  std::vector<GateCheck> checks;
  std::vector<const FactorDiff *> grew;  // factors of the increase, largest score first
  std::string summary;                   // one line: the verdict and its reasons
};

// d must outlive the result.
GateResult decide(const Diff &d, const GateOptions &o);

// "+38% [+21%, +57%]"
std::string percent_change(double change, const Interval &ci);
// "LockManager::wait_for_grant (lock_manager.cc:84) in LockManager::acquire"
std::string factor_place(const FactorDiff &f);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_DIFF_GATE_H
