// Recursion end to end: `vprof iterate --auto --root step` on C targets whose
// planted cause sits inside recursion (reentrant.c, one shape each):
//   reenter   an uninstrumented callee (`interp`) re-enters the root in 2 of
//             300 intervals: the session must break down interp's call site
//             (its own time is "interp (uninstrumented part)", not "step
//             (body)") and end on the planted function;
//   callback  the same re-entry through a function pointer;
//   dispatch  the root reaches interp only through a function pointer: the
//             session breaks the pointer call down by instrumenting what it
//             may reach (the manifest's targets);
//   mutual    parse_expr and parse_term call each other 1 to 3 deep;
//   relay     (PostgreSQL's ExecProcNodeFirst) a pointer call's
//             target calls through a second pointer to another target, which
//             holds the path to the planted function two calls further down.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "analyzer/factors/factors.h"
#include "iterate/answer.h"
#include "iterate/config.h"
#include "iterate/decide.h"
#include "iterate/session.h"
#include "tests/iterate/planted_target.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace vprof::iterate;

namespace {

using vprof::testing::slurp;

struct Shape {
  const char *name;
  int seed;
  const char *first_broken_down;  // by iteration 1
  const char *planted_caller;     // the function holding the planted call site
};

void PrintTo(const Shape &s, std::ostream *os) { *os << s.name << "_" << s.seed; }

Config make_target(const Shape &shape) {
  const int seed = shape.seed;
  fs::path dir = vprof::testing::fresh_dir("vprof-it", std::string("reentrant-") + shape.name + "-" +
                                                           std::to_string(seed));
  fs::copy_file(REENTRANT_SOURCE, dir / "reentrant.c");
  return vprof::testing::make_target_project(dir, "C", "reentrant", "reentrant.c", "m", "step",
                                              std::to_string(seed) + " " + shape.name);
}

using vprof::testing::session_options;
using vprof::testing::top_factor;

}  // namespace

class Reentrant : public ::testing::TestWithParam<Shape> {};

TEST_P(Reentrant, AutoBreaksDownTheRecursionAndEndsOnThePlantedCause) {
  const Shape &shape = GetParam();
  Config c = make_target(shape);
  std::string before = slurp(c.dir + "/reentrant.c");
  auto out = run_session(c, session_options(), Hooks{});
  ASSERT_TRUE(out.ok()) << out.error().message;
  const State &s = out->state;
  EXPECT_EQ(s.stop_reason, "fixed point: every selected factor is explained");
  // Iteration 1 broke down what the root calls (interp's site with its own
  // time, the pointer call by what it reaches, the parser); it did not stop on
  // the root's body.
  EXPECT_TRUE(s.is_broken_down(shape.first_broken_down));
  for (const Decision &d : s.decisions)
    EXPECT_NE(d.factor, "step (body)") << "iteration " << d.iteration << ": " << d.reason;
  bool broke_down_in_1 = std::any_of(s.decisions.begin(), s.decisions.end(), [](auto &d) {
    return d.iteration == 1 && d.decision == "break down";
  });
  EXPECT_TRUE(broke_down_in_1);
  std::string log;  // the session's decisions, printed with any failure below
  for (const Decision &d : s.decisions)
    log += "\n  iteration " + std::to_string(d.iteration) + ": " + d.factor + ": " + d.decision + " (" +
           d.reason + ")";
  SCOPED_TRACE("decisions:" + log);
  const auto *first = top_factor(*out);
  ASSERT_NE(first, nullptr);
  ASSERT_FALSE(first->functions.empty());
  EXPECT_EQ(first->functions[0], "injected_delay") << first->name;
  EXPECT_EQ(caller_of(*out->analysis, *first), shape.planted_caller) << "the planted call site carries it";
  // Most of the code's part of Var(latency): 0.99-1.00 of Var(latency) on
  // an idle machine, 0.41 once under CI's ctest -j2; preemption is the
  // machine's, not the code's (factors.h).
  EXPECT_GT(first->share, 0.5 * (1 - vprof::analyzer::preempted_share(out->analysis->tree)))
      << answer_line(*out->analysis);
  EXPECT_EQ(slurp(c.dir + "/reentrant.c"), before) << "restored byte for byte";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Reentrant,
    ::testing::Values(Shape{"reenter", 1, "interp", "interp"}, Shape{"reenter", 2, "interp", "interp"},
                      Shape{"callback", 1, "interp", "interp"}, Shape{"dispatch", 1, "interp", "interp"},
                      Shape{"mutual", 1, "parse_expr", "parse_term"},
                      Shape{"relay", 1, "relay_first", "work"}),
    [](const ::testing::TestParamInfo<Shape> &i) {
      return std::string(i.param.name) + "_" + std::to_string(i.param.seed);
    });
