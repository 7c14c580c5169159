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

// src/a.c with a lock, and a source the build generates, in the build
// directory, with a lock of its own: the compile db's common root is above src/.
std::string add_a_and_a_generated_source(vprof::test::TestTree &t) {
  t.add("a.c", "#include <pthread.h>\nextern pthread_mutex_t mu;\n"
               "int target(int x) { pthread_mutex_lock(&mu); return x + 1; }\n");
  t.compile("a.c", "-std=c11");
  const std::string gen = t.build() + "/gen.c";
  spit(gen, "#include <pthread.h>\npthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n"
            "void generated(void) { pthread_mutex_lock(&mu); }\n");
  t.add_raw_entry({{"directory", t.build()}, {"file", gen}, {"command", "cc -std=c11 -c gen.c -o gen.o"}});
  return gen;
}

TEST(SourceRoot, ARelativeRootEditsOnlyBelowIt) {
  vprof::test::TestTree t;
  const std::string gen = add_a_and_a_generated_source(t);
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

// The same tree restored as a user would after the session: `vprof restore -p
// build`, no --source-root. The compile db's common root is above src/ (it
// lists the generated file), and the journal is below it, in src/.vprof:
// restore looked only at and above the common root, found nothing, and left
// MariaDB's 59 rewritten files instrumented.
TEST(SourceRoot, RestoreFromTheBuildDirFindsAJournalBelowTheCompileDbsRoot) {
  vprof::test::TestTree t;
  add_a_and_a_generated_source(t);
  const std::string a_before = slurp(t.path("a.c"));

  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.source_root = t.src();
  o.functions = {"target"};
  o.sync_packs = {"pthreads"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.all_files = true;
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(slurp(t.path("a.c")), a_before);

  vprof::instr::RestoreOptions ro;
  ro.build_dir = t.build();
  auto back = vprof::instr::restore(ro);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_FALSE(back->found_nothing);
  EXPECT_EQ(back->files_restored, 1u);
  EXPECT_EQ(slurp(t.path("a.c")), a_before);
  EXPECT_FALSE(std::filesystem::exists(t.src() + "/.vprof"));
}

// Two journals below the compile db's root (two trees of one compile db
// instrumented from two build directories; here the second is a copy of the
// first): which one is meant is the user's to say, and nothing is touched.
TEST(SourceRoot, TwoJournalsBelowTheRootAreNamedNotGuessed) {
  vprof::test::TestTree t;
  t.add("one/a.c", "int target(int x) { return x + 1; }\n");
  t.add("two/b.c", "int other(int x) { return x + 2; }\n");
  t.compile("one/a.c", "-std=c11");
  t.compile("two/b.c", "-std=c11");
  const std::string a_before = slurp(t.path("one/a.c"));
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.source_root = t.src() + "/one";
  o.functions = {"target"};
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(slurp(t.path("one/a.c")), a_before);
  std::filesystem::copy(t.src() + "/one/.vprof", t.src() + "/two/.vprof", std::filesystem::copy_options::recursive);
  std::filesystem::remove(t.src() + "/two/.vprof/lock");

  vprof::instr::RestoreOptions ro;
  ro.build_dir = t.build();
  auto back = vprof::instr::restore(ro);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find(t.src() + "/one/.vprof"), std::string::npos) << back.error().message;
  EXPECT_NE(back.error().message.find(t.src() + "/two/.vprof"), std::string::npos) << back.error().message;
  EXPECT_NE(back.error().message.find("--source-root"), std::string::npos) << back.error().message;
  EXPECT_NE(slurp(t.path("one/a.c")), a_before) << "nothing restored on a guess";

  ro.source_root = t.src() + "/one";
  auto ok = vprof::instr::restore(ro);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(slurp(t.path("one/a.c")), a_before);
}
