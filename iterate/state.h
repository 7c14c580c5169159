// What a refinement session has done so far, persisted after every iteration
// (SESSION_DIR/state.json) so a stopped session resumes where it stopped.
#ifndef VPROF_ITERATE_STATE_H
#define VPROF_ITERATE_STATE_H

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "common/expected.h"

namespace vprof::iterate {

struct BrokenDown {
  std::string function;
  // The functions whose call sites lead here (none for the root): every
  // caller through which a real part of its variance came, so that each of
  // those paths is broken down, not only the largest.
  std::vector<std::string> parents;
  int iteration = 0;   // the iteration that first instrumented it
  // Broken down as a cause's place (decide.h): every later run instruments it
  // too, for the waits it held up are measured again in each run, and their
  // Held parts name the holder only as deep as that run instruments it.
  bool holder = false;
  // The place of such a cause itself: what was broken down below it (its
  // parents lead here) is kept instrumented too.
  bool cause_place = false;
  // Turned on as the level below a function its run broke down first (more
  // than one level a run, prebuild.h's next_level), not by a decision: where
  // a part of it ran inside an uninstrumented call, that call is broken down
  // first (decide.cc's gap rule).
  bool ahead = false;
};

struct Decision {
  int iteration = 0;
  std::string factor;
  std::string decision;  // "break down" | "explained" | "unreached" (decide.h)
  std::string reason;
  // What the factor was ranked by (share or contribution) when decided, and
  // whether it was fragile; absent from sessions saved before they were kept.
  std::optional<double> value;
  bool fragile = false;
};

// Where an iteration is, saved with it: a resumed session goes on from there.
// The steps between (instrument, build, run) are one: a stop in any of them
// leaves the tree restored, and the iteration is run again from its plan.
enum class Phase {
  Planned,  // its functions chosen; not run, or stopped or failed in its run (`failed` says which step)
  Ran,      // its run complete and readable: analyzed, its factors not decided yet
  Decided,  // its factors decided (the next iteration's functions chosen)
};
const char *phase_name(Phase p);  // "planned", "ran", "decided": as saved

struct Iteration {
  int number = 0;
  std::vector<std::string> instrumented;  // functions instrumented for this run
  std::string trace_dir;                  // absolute
  Phase phase = Phase::Planned;
  // The step that failed when this iteration last ran ("instrument", "build",
  // "run"; "" when none did, or it was stopped): what a resumed session says.
  std::string failed;
  // Its build, for the session's closing line (how many builds, and why):
  // the files the instrumenter rewrote, the build's wall time (-1: not built
  // by this session, as a state saved before these were kept).
  int files_changed = -1;
  double build_seconds = -1;
  // Build once (docs/iterate.md): the functions its build held beyond its own
  // set (empty when it built only its set, or did not build), and the
  // iteration whose build its run used when that is an earlier one (0: its
  // own): its probes outside its set were dormant.
  std::vector<std::string> prebuilt;
  int ran_on_build_of = 0;
  // The iteration whose set it ran again (config `again`), 0: none.
  int again_of = 0;
  bool analyzed() const { return phase != Phase::Planned; }  // its trace is one of the session's runs
  bool decided() const { return phase == Phase::Decided; }
};

struct State {
  std::vector<BrokenDown> broken_down;
  std::vector<Iteration> iterations;
  std::vector<Decision> decisions;
  std::vector<std::string> pending;  // to break down in the next iteration
  int again = 0;  // the iteration whose set the next one runs again (0: none)
  // Shipped sync packs the session wraps since a wait one of them names was
  // a factor (decide.h), besides the config's own.
  std::vector<std::string> sync_packs_added;
  bool done = false;
  std::string stop_reason;

  bool is_broken_down(const std::string &f) const;
  // f and its ancestors along the parent links (all of them).
  std::vector<std::string> chain(const std::string &f) const;
};

// The session's builds in one line, and why each was needed ("" when no
// iteration recorded its build): "Builds: 10 in 14 min 3 s: iteration 1, the
// first (6 files rewritten, 41 s); 9 as functions joined or left the set (the
// longest: iteration 9, 254 joined, 1 left, 34 files rewritten, 3 min 5 s)."
std::string builds_summary(const State &s);

Expected<State> load_state(const std::string &path);  // a missing file is a fresh state
// What the session's final reports add to the analysis (docs/iterate.md):
// `session` {dir, done, stop_reason} and `iterations`, one entry per
// iteration {iteration, run (its index in the report's runs, null if not
// analyzed), instrumented, trace_dir, decisions: [{factor, decision, reason,
// value, fragile}]}, so the HTML page can show the refinement path.
nlohmann::json report_json(const State &s, const std::string &session_dir);
Status save_state(const State &s, const std::string &path);  // atomic: write then rename

}  // namespace vprof::iterate

#endif
