// Which selected factors to break down next (docs/method.md, "Iterative
// refinement", the paper's Algorithm 3, with the automatic rule):
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
//     it may reach (`targets`), once; with none it is unreached, saying so;
//   - a cause (causes.h) whose Held parts carry d of Var(root) is broken
//     down as a function factor is, unless a factor's decision took it:
//     `iterate` follows the holder below a wait the sync packs explain;
//   - a function vprof cannot instrument (a macro writes its body, as APR
//     writes Apache's hook dispatchers, or it is outside the tree) is broken
//     down through what it reaches: the tree's functions its body calls or
//     may reach through pointers; with none of those it is unreached.
#ifndef VPROF_ITERATE_DECIDE_H
#define VPROF_ITERATE_DECIDE_H

#include <functional>
#include <string>
#include <vector>

#include "analyzer/pipeline/analyze.h"
#include "instrumenter/names.h"
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
  // Not broken down, and not explained either: vprof cannot instrument it
  // nor anything it reaches (a macro's body with no way through, a
  // library's function). The session says so; a dead end is no explanation.
  bool unreached = false;
  bool holder = false;  // a cause's place (decide.cc): later runs keep `keep` instrumented
  // With holder: the cause's place, the holder's caller and the functions
  // down to the waits it held up, which every later run instruments (a
  // function broken down already is run again, once, when the latest run
  // left some of them out).
  std::vector<std::string> keep;
  std::string place;  // the cause's function ("" for a body): what is broken down below it is kept too
  // A wait a shipped sync pack names that the session does not wrap: the
  // pack, which the next run wraps (with `parents` instrumented again), so
  // that the wait's time goes to who held what it waited for.
  std::string sync_pack;
  std::string reason;
};

// "break down", "unreached" or "explained": the decision's word in state.json,
// the reports and the progress lines.
const char *decision_word(const Suggestion &g);

using instr::some_names;  // instrumenter/names.h

// What CanBreakDown says of a function with no calls in its body.
inline const char *const kNoCalls = "no calls in its body to break down";
inline const char *const kNoDefinition = "no definition in the tree (a library's or the system's code)";

// What a dry run says of breaking f down.
struct Probe {
  Probe(std::string w = "") : why_not(std::move(w)) {}  // NOLINT: a reason converts
  std::string why_not;  // "" when f can be broken down
  // f cannot be instrumented (why_not says why: a macro's body, outside the
  // tree, no definition): true, with the functions of the tree its body
  // calls or may reach through pointers, the way below it.
  bool opaque = false;
  std::vector<std::string> reaches;
  // f is a wait (an acquire) of this shipped sync pack, which the session
  // does not wrap: wrapping it is the way below f.
  std::string sync_pack;
};
using CanBreakDown = std::function<Probe(const std::string &f)>;

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
// The same for a cause (causes.h): the functions holding its parts' call
// sites (a Held part's: the holder's call), then those on the paths of its
// own parts up to the root.
std::vector<std::string> cause_callers(const analyzer::Analysis &a, const analyzer::Factor &c);
// The functions a cause must be measured with: its Held parts' holders'
// callers and the functions on the tree's paths down to the waits it held up.
std::vector<std::string> cause_chain(const analyzer::Analysis &a, const analyzer::Factor &c);

// Asks about many functions at once (a pointer call's targets: MariaDB's
// log_sys.writer() listed six whose names macros paste, each a parse of the
// 974 units alone), so that one dry run answers for all; probe() then
// returns what it learned.
using ProbeMany = std::function<void(const std::vector<std::string> &fs)>;

std::vector<Suggestion> suggest(const analyzer::Analysis &a, const State &s, double m,
                                const CanBreakDown &probe, const ProbeMany &probe_many = {});

}  // namespace vprof::iterate

#endif
