// The refinement loop: instrument -> build -> run -> analyze -> select ->
// decide, until every selected factor is explained (a fixed point) or the
// iteration limit. State and reports persist under the session directory
// after every iteration:
//   SESSION/state.json                the session (state.h)
//   SESSION/iter-N/{instrumented.txt,build.log,run.log (run-K.log: runs > 1),trace/,report.json,report.txt,report.vprof}
//     (instrumented.txt: the iteration's functions, one a line; the progress
//     line names a few)
//   SESSION/final-report.{json,txt,vprof,html}   the merged analysis at the end
//     (the JSON and the HTML page also carry the iterations and decisions)
// (.vprof: the saved profile, analyzer/profile/profile.h, for vprof diff/gate)
// The target tree is restored (byte for byte) when the loop ends, fails, or
// is interrupted.
#ifndef VPROF_ITERATE_SESSION_H
#define VPROF_ITERATE_SESSION_H

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/pipeline/analyze.h"
#include "iterate/config.h"
#include "iterate/decide.h"
#include "iterate/state.h"

namespace vprof::iterate {

struct Hooks {
  std::function<void(const std::string &)> log;  // progress, one line at a time
  // Interactive mode: may change the suggestions' break_down flags; false stops the session.
  // Null: the automatic rule decides.
  std::function<bool(std::vector<Suggestion> &, const analyzer::Analysis &)> decide;
  std::function<bool()> interrupted;  // polled between steps
  // Called after each iteration's run, before its analysis (tests inject
  // faults here: whatever it throws, the tree is restored).
  std::function<void(const Iteration &)> after_run;
};

struct SessionOptions {
  std::string annotations_dir;    // where sync packs are found
  std::string include_dir;        // vprof's headers: never edited
  int max_iterations = 0;         // 0: the config's
  bool fresh = false;             // discard a previous session
};

struct Outcome {
  std::unique_ptr<analyzer::Analysis> analysis;
  State state;
  std::string final_json, final_text, final_html;  // paths
};

Expected<Outcome> run_session(const Config &c, const SessionOptions &o, const Hooks &h);

}  // namespace vprof::iterate

#endif
