// Which selected factors to break down next (METHOD §6, the paper's
// Algorithm 3, with the automatic rule):
//   - a covariance, a body ("f (body)": only instrumented functions have
//     one, docs/method.md), or a leaf that is no function ("(outside)",
//     "(queue wait)") is explained: there is nothing below it;
//   - a function already broken down is explained when its body holds at
//     least m of its own variance (the code itself varies), otherwise its
//     parts are ranked on their own and it needs nothing more;
//   - any other function is broken down if it has calls in its body (the
//     `probe` callback says why not: no calls, defined outside the tree, or
//     a wait the session's sync packs name: its body is only the waiting);
//   - a call through a pointer or a virtual call (the manifest's `indirect`
//     sites) is broken down by instrumenting the functions the manifest says
//     it may reach (`targets`), once; with none it is explained, saying so.
#ifndef VPROF_ITERATE_DECIDE_H
#define VPROF_ITERATE_DECIDE_H

#include <functional>
#include <string>
#include <vector>

#include "analyzer/pipeline/analyze.h"
#include "iterate/state.h"

namespace vprof::iterate {

struct Suggestion {
  std::string factor;    // the factor's name
  std::string function;  // the function to break down ("" when not a function)
  // What breaking it down instruments: {function}, or for a call through a
  // pointer (or a virtual call) the functions in the tree it may reach.
  std::vector<std::string> functions;
  std::vector<std::string> parents;  // the functions whose call sites reach it (callers_of)
  double contribution = 0;
  bool fragile = false;  // the factor's answer rests on a few intervals (factors.h)
  bool break_down = false;
  std::string reason;
};

// The first `shown` names and how many more ("a, b, c, d, e and 249 more"):
// a call through a pointer may reach hundreds of functions (Redis's
// c->cmd->proc, 254), and a line a person reads names a few.
std::string some_names(const std::vector<std::string> &names, size_t shown = 5);

// What CanBreakDown says of a function with no calls in its body.
inline const char *const kNoCalls = "no calls in its body to break down";

// "" when f can be broken down, else why not.
using CanBreakDown = std::function<std::string(const std::string &f)>;

// The function holding the factor's largest call site ("" when none).
std::string caller_of(const analyzer::Analysis &a, const analyzer::Factor &f);
// Every function whose call site carries a real part of factor f: each site
// with at least a tenth of f's value (and 1% of Var(root)), largest first. A
// function called from two paths (a row lock taken in read_row and in
// write_row) is broken down along both. After those, every other function
// on those sites' paths up to the root, as the tree measured them: a run must
// instrument all of them for its new parts to sit where they were measured.
// The recorded parents alone missed one on PostgreSQL, where a pointer call's
// target (ExecProcNodeFirst) calls another target (ExecModifyTable) through
// the same pointer: both had the pointer's caller as their only parent.
std::vector<std::string> callers_of(const analyzer::Analysis &a, const analyzer::Factor &f);

std::vector<Suggestion> suggest(const analyzer::Analysis &a, const State &s, double m,
                                const CanBreakDown &probe);

}  // namespace vprof::iterate

#endif
