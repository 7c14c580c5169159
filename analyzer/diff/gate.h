// The gate's decision (`vprof gate`, docs/gate.md), one of three:
//   regression    the lower end of a change's confidence interval exceeds its
//                 threshold (sure it grew that much);
//   pass          every checked interval lies at or below its threshold (sure
//                 it did not);
//   inconclusive  otherwise: an interval reaches both sides of a threshold,
//                 and the gate says about how many runs a side would decide;
//                 also whenever a side has one run and there are intervals
//                 (they miss how runs differ: never a sure verdict).
// Its message names the factors of the change that grew most, with their
// call sites:
//   variance +38% [+21%, +57%] > +10%: 81% of the increase from
//   LockManager::wait_for_grant (lock_manager.cc:84) in LockManager::acquire
// or, when the change holds Held parts, its causes with their parts:
//   ...: 95% of the increase from minidb::inject_delay (database.cc:65) in
//   minidb::Database::commit (8 own, 87 holding up waits in LockManager::acquire)
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

enum class Verdict { Pass, Regression, Inconclusive };
const char *verdict_name(Verdict v);  // "pass", "regression", "inconclusive"

struct GateCheck {
  std::string what;    // "variance", "p99"
  double change = 0;   // head/base − 1
  Interval ci;         // of the change
  double threshold = 0;
  bool failed = false;  // the lower end is above the threshold
  bool unsure = false;  // not failed, and the upper end is above it
  // Unsure: the runs a side that would put the interval on one side of the
  // threshold, if runs vary as these did (the interval's half-width shrinks
  // as 1/sqrt(runs)); -1: more than 1000 (a change at the threshold needs them all).
  int runs_needed = 0;
};

struct GateResult {
  Verdict verdict = Verdict::Pass;
  bool regression = false;  // verdict == Regression
  int runs = 1;             // the fewer of the two sides' runs
  int runs_needed = 0;      // inconclusive: the most any unsure check needs (-1: more than 1000)
  // One run a side (either side) with intervals: a regression or pass made
  // inconclusive, since those intervals miss how runs differ; runs_needed 2.
  bool one_run = false;
  std::vector<GateCheck> checks;
  std::vector<const FactorDiff *> grew;  // factors of the increase, surest first
  // When the change has Held parts (Diff::causes_held): the causes that grew,
  // surest first; the message names them instead of the factors, each with
  // its own part and the waits it held up.
  std::vector<const FactorDiff *> causes;
  std::string summary;                   // one line: the verdict and its reasons
};

// d must outlive the result.
GateResult decide(const Diff &d, const GateOptions &o);

// "LockManager::wait_for_grant (lock_manager.cc:84) in LockManager::acquire"
std::string factor_place(const FactorDiff &f);

// A cause's place and parts, in points of the increase:
// "minidb::inject_delay (database.cc:65) in minidb::Database::commit
//  (8 own, 87 holding up waits in minidb::LockManager::acquire)"
std::string cause_place(const FactorDiff &c);

// Its parts alone, in points of the increase with `decimals` decimals; a part
// that rounds to zero is left out, and past four the rest are counted:
// "3.3 own, 77.9 holding up waits in minidb::LockManager::acquire"
std::string cause_parts(const FactorDiff &c, int decimals);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_DIFF_GATE_H
