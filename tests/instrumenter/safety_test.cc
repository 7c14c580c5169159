// Editing safely: all-or-nothing, restore byte for byte, re-instrumenting,
// symlinks, duplicate compile-db entries, gcc-only flags, unknown names.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "instrumenter/journal.h"
#include "instrumenter/instrument.h"
#include "test_tree.h"

namespace fs = std::filesystem;
using vprof::test::slurp;

namespace {

const char *kGood = "int helper(int x);\nint work(int x) {\n  return helper(x) + 1;\n}\n";
const char *kHelper = "int helper(int x) { return x * 3; }\n";

vprof::instr::InstrumentOptions options(const vprof::test::TestTree &t, std::vector<std::string> fns) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = std::move(fns);
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  return o;
}

TEST(Safety, OneFileThatDoesNotParseChangesNothing) {
  vprof::test::TestTree t;
  t.add("good.c", kGood);
  t.add("helper.c", kHelper);
  t.add("bad.c", "int helper(int x);\nint broken(void) { return helper(1) + ; }\n");
  for (const char *f : {"bad.c", "good.c", "helper.c"}) t.compile(f, "-std=c99");
  auto r = vprof::instr::instrument(options(t, {"work", "helper", "broken"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bad.c"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(":2:"), std::string::npos) << r.error().message;  // the line
  EXPECT_EQ(slurp(t.path("good.c")), kGood);
  EXPECT_EQ(slurp(t.path("helper.c")), kHelper);
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof/state.json"));
}

TEST(Safety, UnknownFunctionIsAnErrorWithCloseMatchesAndChangesNothing) {
  vprof::test::TestTree t;
  t.add("good.c", kGood);
  t.add("helper.c", kHelper);
  t.compile("good.c", "-std=c99");
  t.compile("helper.c", "-std=c99");
  auto r = vprof::instr::instrument(options(t, {"work", "helpr"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("helpr"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("close matches: helper"), std::string::npos) << r.error().message;
  EXPECT_EQ(slurp(t.path("good.c")), kGood);
}

TEST(Safety, ReinstrumentingStartsFromTheOriginalsAndRestoreIsExact) {
  vprof::test::TestTree t;
  t.add("good.c", kGood);
  t.add("helper.c", kHelper);
  t.compile("good.c", "-std=c99");
  t.compile("helper.c", "-std=c99");
  ASSERT_TRUE(vprof::instr::instrument(options(t, {"work"})).ok());
  std::string once = slurp(t.path("good.c"));
  EXPECT_NE(once, kGood);
  // Second run selects a different function: work's probes must be gone.
  auto r = vprof::instr::instrument(options(t, {"helper"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(slurp(t.path("good.c")), kGood);
  EXPECT_NE(slurp(t.path("helper.c")), kHelper);
  // The same selection twice gives the same text (not probes on probes).
  ASSERT_TRUE(vprof::instr::instrument(options(t, {"work"})).ok());
  EXPECT_EQ(slurp(t.path("good.c")), once);
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(slurp(t.path("good.c")), kGood);
  EXPECT_EQ(slurp(t.path("helper.c")), kHelper);
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof/state.json"));
}

TEST(Safety, RestoreRefusesAFileEditedAfterInstrumenting) {
  vprof::test::TestTree t;
  t.add("good.c", kGood);
  t.compile("good.c", "-std=c99");
  ASSERT_TRUE(vprof::instr::instrument(options(t, {"work"})).ok());
  vprof::test::spit(t.path("good.c"), slurp(t.path("good.c")) + "/* user edit */\n");
  auto back = vprof::instr::restore({t.build()});
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("good.c"), std::string::npos);
}

// Bug: `vprof restore -p` with a mistyped directory created DIR/.vprof/originals,
// said "restored 0 files" and exited 0, as if the tree were clean.
TEST(Safety, RestoreOfAMissingBuildDirIsAnError) {
  vprof::test::TestTree t;
  auto back = vprof::instr::restore({t.build() + "/no-such-dir"});
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("no-such-dir: no such build directory"), std::string::npos)
      << back.error().message;
  EXPECT_FALSE(fs::exists(t.build() + "/no-such-dir"));
  // A build directory with no compile db and no journal above it is not a
  // tree vprof knows (it said "restored 0 files").
  auto clean = vprof::instr::restore({t.build()});
  ASSERT_FALSE(clean.ok());
  EXPECT_NE(clean.error().message.find("nothing vprof made is here"), std::string::npos) << clean.error().message;
}

TEST(Safety, DryRunWritesNothing) {
  vprof::test::TestTree t;
  t.add("good.c", kGood);
  t.compile("good.c", "-std=c99");
  auto o = options(t, {"work"});
  o.dry_run = true;
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->changes.size(), 1u);
  EXPECT_EQ(r->changes[0].before, kGood);
  EXPECT_NE(r->changes[0].after, kGood);
  EXPECT_EQ(slurp(t.path("good.c")), kGood);
  // Nor in the build directory: a dry run reads the scan cache (iterate's
  // dry runs learn the whole tree from it) but makes, prunes and writes no
  // entry.
  EXPECT_FALSE(fs::exists(t.build() + "/.vprof-cache")) << "a dry run made the scan cache";
  ASSERT_TRUE(vprof::instr::instrument(options(t, {"work"})).ok());
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  auto listing = [&] {
    std::vector<std::string> out;
    for (const auto &e : fs::recursive_directory_iterator(t.build() + "/.vprof-cache")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto kept = listing();
  EXPECT_GT(kept.size(), 1u);
  o.sync_packs = {"pthreads"};  // other settings: their own directory, which a dry run does not make
  ASSERT_TRUE(vprof::instr::instrument(o).ok());
  EXPECT_EQ(listing(), kept);
  size_t dirs = 0;
  for (const auto &e : fs::directory_iterator(t.build() + "/.vprof-cache/scan")) dirs += e.is_directory();
  EXPECT_EQ(dirs, 1u) << "a dry run of other settings made a directory";
}

TEST(Safety, SymlinksDuplicatesAndGccOnlyFlags) {
  vprof::test::TestTree t;
  t.add("real/good.c", kGood);
  fs::create_symlink(t.path("real/good.c"), t.path("link.c"));
  // The same file three times: through the symlink, directly, and again with
  // gcc-only flags clang rejects.
  t.compile("link.c", "-std=c99 -fno-tree-vrp -Wimplicit-fallthrough=3 -fexcess-precision=standard");
  t.compile("real/good.c", "-std=c99 -fPIC");
  t.compile("real/good.c", "-std=c99 -Werror");
  auto r = vprof::instr::instrument(options(t, {"work"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->files_in_db, 1u);
  EXPECT_EQ(r->duplicates_dropped, 2u);
  EXPECT_TRUE(fs::is_symlink(t.path("link.c")));  // the target was edited, not the link
  EXPECT_NE(slurp(t.path("real/good.c")), kGood);
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  EXPECT_EQ(slurp(t.path("real/good.c")), kGood);
}

TEST(Safety, ManifestNamesEveryIdWithItsPlace) {
  vprof::test::TestTree t;
  t.add("good.c", kGood);
  t.compile("good.c", "-std=c99");
  auto r = vprof::instr::instrument(options(t, {"work"}));
  ASSERT_TRUE(r.ok());
  auto m = nlohmann::json::parse(slurp(r->manifest_path));
  ASSERT_EQ(m["functions"].size(), 1u);
  EXPECT_EQ(m["functions"][0]["name"], "work");
  EXPECT_EQ(m["functions"][0]["line"], 2);
  ASSERT_EQ(m["call_sites"].size(), 1u);
  EXPECT_EQ(m["call_sites"][0]["callee"], "helper");
  EXPECT_EQ(m["call_sites"][0]["callee_text"], "helper(x)");
  EXPECT_EQ(m["call_sites"][0]["line"], 3);
  EXPECT_EQ(m["call_sites"][0]["column"], 10);
  EXPECT_EQ(m["call_sites"][0]["function_id"], 1);
}

}  // namespace

namespace {

TEST(Safety, MacrosAreWrappedWholeNamedOrSkippedWithACount) {
  vprof::test::TestTree t;
  t.add("m.c",
        "int helper(int x);\n"
        "#define CALL(x) helper(x)\n"
        "#define PLUS1(x) (helper(x) + 1)\n"
        "int work(int x) {\n"
        "  return CALL(x) + PLUS1(x);\n"
        "}\n");
  t.compile("m.c", "-std=c11");
  auto r = vprof::instr::instrument(options(t, {"work"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->call_sites, 1u);
  EXPECT_EQ(r->skipped_macro_sites, 1u);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("m.c:5"), std::string::npos) << r->notes[0];
  auto m = nlohmann::json::parse(slurp(r->manifest_path));
  ASSERT_EQ(m["call_sites"].size(), 1u);
  EXPECT_EQ(m["call_sites"][0]["macro"], "CALL");
  EXPECT_EQ(m["call_sites"][0]["callee"], "helper");
  EXPECT_EQ(m["call_sites"][0]["callee_text"], "CALL(x)");
}

}  // namespace

namespace {

TEST(Safety, SyncPacksAloneWrapTheWholeTree) {
  vprof::test::TestTree t;
  const char *text =
      "typedef struct { int x; } pthread_mutex_t;\n"
      "int pthread_mutex_unlock(pthread_mutex_t *m);\n"
      "void leave(pthread_mutex_t *m) { pthread_mutex_unlock(m); }\n";
  t.add("a.c", text);
  t.add("b.c", text);
  t.compile("a.c", "-std=c99");
  t.compile("b.c", "-std=c99");
  auto o = options(t, {});
  o.sync_packs = {"pthreads"};
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->files_parsed, 2u);
  EXPECT_EQ(r->sync_sites, 2u);
  EXPECT_EQ(r->functions, 0u);
}

}  // namespace

namespace {

// Bug found on PostgreSQL: bear's "file" is absolute but the argument is
// relative; the input was passed twice and clang refused ("expected exactly
// one compiler job").
TEST(Safety, BearEntriesWithARelativeInputArgument) {
  vprof::test::TestTree t;
  t.add("good.c", kGood);
  t.compile_bear_style("good.c", "-std=c99 -O2");
  auto r = vprof::instr::instrument(options(t, {"work"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->functions, 1u);
}

}  // namespace
