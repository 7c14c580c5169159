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
//   - but a loop is its function's: the parts of a call site some thread
//     called in a row (SITE_RUN: calls with nothing recorded between them),
//     the Held parts that name it, and the body of the function holding such
//     a site, or a holder in that body, go to that function's cause
//     (VarNode::cause). A stall spinning on clock_gettime read as two causes,
//     the calls (the runtime writes a row's calls as one span after the time
//     between them) and the body, and the function that spins as a third,
//     where the holder was still at its call;
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
// the ranked ones, which assess_causes assesses.
Causes rank_causes(const VarNode &tree, const FactorOptions &o);

// Fills the ranked causes' ci95, tails and "if fixed" as bootstrap_factors and
// tail_shares do a factor's, once the factors are assessed; only when some
// Held part exists (without one every cause is a terminal part's factor
// again, and the table leaves them out). Each is measured in the run its
// largest part came from (VarNode::run), else the latest run whose own tree
// (run_trees[r], with its columns[r]) has a cause of that name: a merged
// tree's cause gathers parts that several runs broke down, and each run
// measured the whole latency. A cause
// with no Held part whose share is an assessed factor's is that factor's
// quantity (a call site not broken down, a body): it takes the factor's
// assessment instead of columns of its own (three causes' columns cost 25% of
// an analysis on the 16x benchmark). Shares whatever o.paper says.
// The candidate causes that cannot be a factor's twin (a Held part, or no
// factor of that name), each placed in the run that measures it: their
// bootstrap can share the factors' pass (bootstrap_factors on both lists:
// one set of weights, one root column). Empty unless some Held part exists,
// and with o.paper (the factors' pass then ranks by contributions).
std::vector<Factor *> place_own_causes(Causes &causes, const std::vector<Factor> &factors,
                                       const std::vector<const VarNode *> &run_trees, FactorOptions o);

void assess_causes(Causes &causes, const std::vector<Factor> &factors,
                   const std::vector<const VarNode *> &run_trees, const std::vector<const Columns *> &columns,
                   FactorOptions o);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_CAUSES_H
