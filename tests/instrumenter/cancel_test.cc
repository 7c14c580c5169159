// A session stopped (Ctrl-C, SIGTERM) while `instrument` parses the whole
// tree stops before the next unit, with nothing written: on MariaDB the parse
// took 4 minutes and the session only looked at its stop flag after it.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "instrumenter/instrument.h"
#include "test_tree.h"

using vprof::test::slurp;

TEST(Cancel, ACancelledInstrumentStopsBeforeTheNextUnitAndWritesNothing) {
  vprof::test::TestTree t;
  for (int i = 0; i < 6; ++i) {
    const std::string f = "u" + std::to_string(i) + ".c";
    t.add(f, "#include <pthread.h>\nextern pthread_mutex_t mu;\nvoid f" + std::to_string(i) +
                 "(void) { pthread_mutex_lock(&mu); }\n");
    t.compile(f, "-std=c11");
  }
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.sync_packs = {"pthreads"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.jobs = 1;
  std::atomic<int> asked{0};
  o.cancelled = [&] { return ++asked > 2; };  // stop once two units were parsed
  const std::string before = slurp(t.path("u0.c"));
  auto r = vprof::instr::instrument(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "interrupted");
  EXPECT_EQ(asked.load(), 3) << "no unit is parsed after the stop";
  EXPECT_EQ(slurp(t.path("u0.c")), before);
  EXPECT_FALSE(std::filesystem::exists(t.src() + "/.vprof/state.json"));
}
