// Build once (docs/iterate.md): an iteration's build holds the probes of
// more functions than its run records: its set, and what the set's calls may
// reach a few calls deep. Each run turns on only its own set's probes (the
// rest are dormant: probes.h, VPROF_DORMANT), so a later level whose
// functions the build holds costs a run, not a rebuild.
#ifndef VPROF_ITERATE_PREBUILD_H
#define VPROF_ITERATE_PREBUILD_H

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "instrumenter/callgraph.h"

namespace vprof::iterate {

// What a build ahead leaves out although a level may reach it, because its
// probes would cost runs that leave them dormant more than a rebuild costs
// the one session that reaches it (docs/iterate.md, "What a build holds"):
// - a tiny function: a body of fewer than `min_size` statements and
//   expressions, clang's count (config.h's prebuild_min_size: a line or
//   two, an accessor), that calls nothing whose body is outside the tree
//   (a wrapper of fsync or write is where time goes): inlined into its
//   callers' loops, its enter and exit run at every turn, and a level that
//   breaks it down finds its one or two calls;
// - a kernel: a function whose loops call nothing but the tree's tiny
//   functions (a checksum over a buffer, a loop of accessors): its sites'
//   probes run at every turn of a loop whose turn costs a few instructions.
// - an assignment operator (`operator=`, every overload of the name): the
//   program calls it at each assignment of its class's values, wherever
//   they are, not only below the set, and it is usually a few stores the
//   compiler inlines; dormant, its test and the call of its instrumented
//   copy keep it from being inlined everywhere (LevelDB's
//   Status::operator=, 0.87% of db_bench's instructions, two thirds of
//   what its first build cost dormant: docs/performance.md, "Build once").
//   Its calls are timed at their sites in the set's functions.
// XRay's instruction threshold is the precedent. Says which, or nothing
// when it is built.
bool assignment_operator(const std::string &name);  // `operator=` itself, not ==, <=, +=, ...
std::string left_out_ahead(const instr::CallGraphNode &n, const std::map<std::string, instr::CallGraphNode> &graph,
                           unsigned min_size);

// What a dry run says of a function, for widening a build: whether it can be
// instrumented with calls to time, and what its calls may reach.
struct Reach {
  bool buildable = false;
  std::set<std::string> calls;
  unsigned size = 0;  // the body's size (CallGraphNode::size): a larger callee is asked first
  // Defined in a header (CallGraphNode::header): its probes joining or
  // leaving a build rewrite the header, and every unit that includes it is
  // compiled again (MariaDB's sql_class.h: all 664 units of mariadbd).
  bool header = false;
};
using ReachOf = std::function<std::map<std::string, Reach>(const std::vector<std::string> &)>;

// The functions to build for `want`: want itself (never cut), then breadth
// first what its calls reach, `depth` calls deep, each a function `reach`
// says can be built. The way ahead starts at want's leaves (its functions
// that call none of want's: where the next levels come from), those `before`
// (the last build's) did not hold first, then the rest of want. At each
// depth the functions it starts from take turns, each its next callee,
// largest body first (then by name), so that one of them with thirty callees
// does not spend the budget of the others. Then before's functions, so that
// their files keep their bytes. All until `budget` functions in all; one
// tree gives one set. Before's functions that a header defines come first,
// right after want: a function the way ahead took the place of cost its
// header's includers a compile each. With a last build, no function a
// header defines joins the way ahead (only want brings one in): its probes
// would rewrite the header as well.
std::vector<std::string> widen(const std::vector<std::string> &want, const std::vector<std::string> &before,
                               int depth, size_t budget, const ReachOf &reach);

// More than one level a run (docs/iterate.md, "More than one level a run"):
// the level below `fresh` (the functions a run breaks down for the first
// time) that `built` (the build's functions) holds and `set` (the run's)
// does not, to turn on in the same run: each callee once, with the first
// function of `fresh` that calls it, at each fresh function's calls largest
// body first (then by name). `reach` gives what fresh's calls reach.
struct NextLevel {
  std::string function, parent;
};
std::vector<NextLevel> next_level(const std::vector<std::string> &fresh, const std::vector<std::string> &set,
                                  const std::vector<std::string> &built, const ReachOf &reach);

// A run of a build: the build's manifest cut to `set`'s functions and their
// call sites (what the run records, so the analysis reads it as a build of
// `set` alone), and the probes the run leaves dormant, "f ID" and "s ID"
// lines. `missing`: names of `set` that match no function of the build (the
// run then needs a build of its own).
struct RunProbes {
  nlohmann::json manifest;
  std::vector<std::string> dormant;
  uint64_t largest_dormant = 0;  // the largest id of `dormant` (the runtime's bits stop at VPROF_DORMANT_IDS)
  std::vector<std::string> missing;
};
RunProbes run_probes(const nlohmann::json &built, const std::vector<std::string> &set);

}  // namespace vprof::iterate

#endif
