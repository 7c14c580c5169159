// `instrument --source-root DIR` (and a session's `source_root`): only files
// below DIR are edited, the journal is DIR/.vprof, and DIR may be relative to
// the working directory. Found on MariaDB, whose compile db lists sources the
// build generates: `--source-root src` left the tree's own files "outside the
// source tree" (a relative root compared with real paths).
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "instrumenter/instrument.h"
#include "test_tree.h"

using vprof::test::slurp;
using vprof::test::spit;

TEST(SourceRoot, Issue29_ARelativeRootEditsOnlyBelowIt) {
  vprof::test::TestTree t;
  t.add("a.c", "#include <pthread.h>\nextern pthread_mutex_t mu;\n"
               "int target(int x) { pthread_mutex_lock(&mu); return x + 1; }\n");
  t.compile("a.c", "-std=c11");
  // A source the build generates, in the build directory, with a lock of its own.
  const std::string gen = t.build() + "/gen.c";
  spit(gen, "#include <pthread.h>\npthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n"
            "void generated(void) { pthread_mutex_lock(&mu); }\n");
  t.add_raw_entry({{"directory", t.build()}, {"file", gen}, {"command", "cc -std=c11 -c gen.c -o gen.o"}});
  const std::string a_before = slurp(t.path("a.c")), gen_before = slurp(gen);

  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(t.root());
  vprof::instr::InstrumentOptions o;
  o.build_dir = "build";
  o.source_root = "src";
  o.functions = {"target"};
  o.sync_packs = {"pthreads"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.all_files = true;
  auto r = vprof::instr::instrument(o);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->functions, 1u);
  EXPECT_NE(slurp(t.path("a.c")), a_before);
  EXPECT_EQ(slurp(gen), gen_before) << "the generated file is outside the source root";
  EXPECT_TRUE(std::filesystem::exists(t.src() + "/.vprof/state.json"));
  EXPECT_FALSE(std::filesystem::exists(t.root() + "/.vprof"));

  std::filesystem::current_path(t.root());
  vprof::instr::RestoreOptions ro;
  ro.build_dir = "build";
  ro.source_root = "src";
  auto back = vprof::instr::restore(ro);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(slurp(t.path("a.c")), a_before);
  EXPECT_FALSE(std::filesystem::exists(t.src() + "/.vprof"));
}
