// `vprof gate --history DIR` (docs/gate.md, "Against a history"): the
// history directory a CI keeps (each main run's saved profile,
// DIR/run-NNNNNN.vprof, oldest first, at most --history-keep of them), a
// head's runs judged against its last runs, and its change points.
#ifndef VPROF_SRC_GATE_HISTORY_H
#define VPROF_SRC_GATE_HISTORY_H

#include <string>
#include <vector>

#include "analyzer/diff/history.h"
#include "common/expected.h"

namespace vprof::cli {

struct HistoryCliOptions {
  std::string dir;
  std::vector<std::string> head;  // the new build's runs (profiles or trace directories)
  analyzer::HistoryOptions stats;
  size_t keep = 60;     // runs the history keeps; older ones are removed when recording
  bool record = false;  // add the head's runs to the history after judging them
  bool changes = false; // list the history's change points (no head needed)
  std::string json, junit, markdown, name, root;
  unsigned threads = 1;
};

// The whole command: prints the verdict (or the change points) and returns
// the exit code (0 pass, 1 regression, 2 bad input).
int run_history(const HistoryCliOptions &o);

// One JUnit test case (outcome "pass", "failure", "error", "skipped") in
// path; nothing when path is "" (cmd_gate.cc).
Status write_junit(const std::string &path, const std::string &name, const char *outcome,
                   const std::string &message, const std::string &details);

}  // namespace vprof::cli

#endif  // VPROF_SRC_GATE_HISTORY_H
