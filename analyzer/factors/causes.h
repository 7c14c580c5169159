// Causes (docs/method.md, "Causes"): the factors name places; a wait's
// blocked time is at the wait's place, broken down in the tree by where the
// holder was meanwhile (its Held parts). A cause is a place with its own time
// and every Held part that names it as the holder, at any depth: the WAL
// flush's fdatasync with the time the backends waited for the lock its
// flusher held. Exact by construction: every terminal part of the tree (a
// part with no parts of its own) goes to one cause or to none, so the causes'
// shares and the rest add up to the root's, 1.
//   - a Held part goes to its holder's place (its factor name: the callee at
//     the holder's innermost call site, or "F (body)");
//   - any other part of the code goes to its own factor name (a body, a call
//     site not broken down, a wait's "(not held)" rest: the wait's function);
//   - (outside), (untracked), (queue wait), (preempted), (recorder) and
//     "held by (outside)" (the holder was outside instrumented code: not
//     recorded) are no cause; their sum is Causes::none.
// A cause is a Factor (factors.h) whose instances are its terminal parts: the
// same bootstrap gives its ci95 (of the sum of its parts' shares, resampling
// intervals) and its "if fixed".
#ifndef VPROF_ANALYZER_FACTORS_CAUSES_H
#define VPROF_ANALYZER_FACTORS_CAUSES_H

#include <vector>

#include "analyzer/factors/factors.h"

namespace vprof::analyzer {

struct Causes {
  std::vector<Factor> ranked;  // by share, the first k with share >= d ranked 1..k
  double none = 0;             // the terminal parts that are no cause
  bool held = false;           // some cause holds a Held part: they differ from the factors
};

// The tree must outlive the result (instances point into it). Candidates are
// the ranked ones: place_causes_in_runs and bootstrap_factors assess them.
Causes rank_causes(const VarNode &tree, const FactorOptions &o);

// Where each candidate is measured: the latest run whose own tree has a cause
// of that name (run_trees[r]: run r's tree, outliving the causes), with that
// run's parts and share (run_value). A merged tree's cause gathers parts that
// several runs broke down; each run measured the whole latency, and the
// latest one the finest: its interval is the cause's, scaled to the merged
// share in the reports as a factor's is.
void place_causes_in_runs(Causes &causes, const std::vector<const VarNode *> &run_trees,
                          const FactorOptions &o);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_CAUSES_H
