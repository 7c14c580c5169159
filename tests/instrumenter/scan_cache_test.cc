// The scan cache (instrumenter/scan_cache.h): a unit is parsed
// again only when a file it read changed, or a function it defines was
// selected or let go; what a cached scan wraps is byte for byte what a parse
// wraps.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "instrumenter/instrument.h"
#include "test_tree.h"

using vprof::test::slurp;
using vprof::test::spit;

namespace {

struct Scan {
  size_t parsed = 0, from_cache = 0;
  std::map<std::string, std::string> texts;  // every source as instrumented
  nlohmann::json sync_sites;
};

Scan instrument(const vprof::test::TestTree &t, bool cache = true,
               std::vector<std::string> packs = {"pthreads"}) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = {"target"};
  o.sync_packs = std::move(packs);
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.all_files = true;
  o.scan_cache = cache;
  auto r = vprof::instr::instrument(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  Scan run;
  if (!r.ok()) return run;
  run.parsed = r->files_parsed;
  run.from_cache = r->files_from_cache;
  for (const char *f : {"lock.h", "a.c", "b.c", "c.c"}) run.texts[f] = slurp(t.path(f));
  run.sync_sites = nlohmann::json::parse(slurp(r->manifest_path)).at("sync_sites");
  EXPECT_TRUE(vprof::instr::restore({t.build()}).ok());
  return run;
}

void make_tree(vprof::test::TestTree &t) {
  t.add("lock.h",
        "#include <pthread.h>\n"
        "extern pthread_mutex_t mu;\n"
        "static inline void take(void) { pthread_mutex_lock(&mu); }\n");
  t.add("a.c", "#include \"lock.h\"\npthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\nvoid work(void) { take(); }\n");
  t.add("b.c", "#include \"lock.h\"\nint target(int x) { take(); return x + 1; }\n");
  t.add("c.c", "#include <pthread.h>\nextern pthread_mutex_t mu;\nvoid drop(void) { pthread_mutex_unlock(&mu); }\n");
  for (const char *f : {"a.c", "b.c", "c.c"}) t.compile(f, "-std=c11");
}

}  // namespace

TEST(ScanCache, AnUnchangedUnitIsNotParsedAgainAndWrapsTheSame) {
  vprof::test::TestTree t;
  make_tree(t);
  const std::string pristine_c = slurp(t.path("c.c"));
  Scan first = instrument(t);
  EXPECT_EQ(first.parsed, 3u);
  EXPECT_EQ(first.from_cache, 0u);
  EXPECT_NE(first.texts["c.c"], pristine_c) << "c.c's unlock is wrapped";
  EXPECT_EQ(first.sync_sites.size(), 2u) << first.sync_sites.dump(2);

  // Nothing changed: every scan comes from the cache, b.c's (which defines
  // `target`, and its sites) too.
  Scan second = instrument(t);
  EXPECT_EQ(second.parsed, 3u);
  EXPECT_EQ(second.from_cache, 3u);
  EXPECT_EQ(second.texts, first.texts);
  EXPECT_EQ(second.sync_sites, first.sync_sites);

  Scan uncached = instrument(t, false);
  EXPECT_EQ(uncached.from_cache, 0u);
  EXPECT_EQ(uncached.texts, first.texts);
}

TEST(ScanCache, AChangeInAnyFileAUnitReadParsesItAgain) {
  vprof::test::TestTree t;
  make_tree(t);
  instrument(t);
  // A new lock in the header a.c and b.c include (c.c does not): they are
  // parsed again, c.c still comes from the cache, and the new call is wrapped.
  t.add("lock.h",
        "#include <pthread.h>\n"
        "extern pthread_mutex_t mu;\n"
        "static inline void take(void) { pthread_mutex_lock(&mu); }\n"
        "static inline void give(void) { pthread_mutex_unlock(&mu); }\n");
  Scan after_header = instrument(t);
  EXPECT_EQ(after_header.from_cache, 1u);
  EXPECT_NE(after_header.texts["lock.h"].find("vprof_sync_release"), std::string::npos)
      << after_header.texts["lock.h"];
  EXPECT_EQ(after_header.sync_sites.size(), 3u);

  // A new call in c.c itself: parsed again, wrapped.
  t.add("c.c",
        "#include <pthread.h>\nextern pthread_mutex_t mu;\n"
        "void drop(void) { pthread_mutex_unlock(&mu); }\n"
        "void again(void) { pthread_mutex_lock(&mu); }\n");
  Scan after_source = instrument(t);
  EXPECT_EQ(after_source.from_cache, 2u) << "a.c and b.c";
  EXPECT_EQ(after_source.sync_sites.size(), 4u);
  EXPECT_EQ(after_source.texts, instrument(t, false).texts);
}

TEST(ScanCache, ADamagedEntryIsAMissNotAnError) {
  vprof::test::TestTree t;
  make_tree(t);
  Scan first = instrument(t);
  const std::string dir = t.build() + "/.vprof-cache/scan";
  size_t entries = 0;
  for (const auto &e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    spit(e.path().string(), "{\"format\": 1, \"files_read\": [[");
    ++entries;
  }
  EXPECT_EQ(entries, 3u);
  Scan second = instrument(t);
  EXPECT_EQ(second.from_cache, 0u);
  EXPECT_EQ(second.texts, first.texts);
  EXPECT_EQ(instrument(t).from_cache, 3u) << "the entries were written again";
}

// Other settings (packs, a rebuilt vprof) make another directory of entries;
// only the three most recently used are kept.
TEST(ScanCache, OnlyTheLatestThreeSettingsAreKept) {
  vprof::test::TestTree t;
  make_tree(t);
  const std::vector<std::vector<std::string>> settings = {
      {"pthreads"}, {"pthreads", "c11threads"}, {"c11threads", "pthreads"}, {"pthreads", "stdcxx"}};
  for (const auto &packs : settings) instrument(t, true, packs);
  size_t dirs = 0;
  for (const auto &e : std::filesystem::directory_iterator(t.build() + "/.vprof-cache/scan")) dirs += e.is_directory();
  EXPECT_EQ(dirs, 3u);
  EXPECT_EQ(instrument(t, true, {"pthreads", "stdcxx"}).from_cache, 3u) << "the latest kept";
  EXPECT_EQ(instrument(t, true, {"pthreads"}).from_cache, 0u) << "the oldest gone";
}

namespace {

struct Outcome {
  bool ok = false;
  std::string error;
  size_t parsed = 0, from_cache = 0;
  std::vector<std::string> functions, undefined;
  std::map<std::string, std::string> texts;
};

// An instrument of `functions` with the pthreads pack and the cache, keeping
// the ids of the one before (as every iterate session does).
Outcome instrument_of(const vprof::test::TestTree &t, std::vector<std::string> functions, bool all_files,
                      bool dry_run, const std::vector<std::string> &files) {
  const std::string kept = t.build() + "/kept-manifest.json";
  vprof::instr::InstrumentOptions o;
  if (std::filesystem::exists(kept)) o.keep_ids_from = kept;
  o.build_dir = t.build();
  o.functions = std::move(functions);
  o.sync_packs = {"pthreads"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.all_files = all_files;
  o.dry_run = dry_run;
  auto r = vprof::instr::instrument(o);
  Outcome run;
  if (!r.ok()) {
    run.error = r.error().message;
    return run;
  }
  run.ok = true;
  run.parsed = r->files_parsed;
  run.from_cache = r->files_from_cache;
  run.undefined = r->undefined_patterns;
  for (const auto &f : files) run.texts[f] = slurp(t.path(f));
  if (!dry_run) {
    const std::string text = slurp(r->manifest_path);
    spit(kept, text);
    const auto manifest = nlohmann::json::parse(text);
    for (const auto &f : manifest.at("functions")) run.functions.push_back(f.at("name"));
    EXPECT_TRUE(vprof::instr::restore({t.build()}).ok());
  }
  return run;
}

}  // namespace

// MariaDB session 5, iteration 19: every one of the server's 664
// units was rebuilt for two functions of two InnoDB files, because
// mysql_thread.h changed. psi_noop.c defines HAVE_PSI_INTERFACE and so sees
// inline_mysql_cond_wait (a header's function, selected since iteration 8)
// with a psi_cond_wait call no server unit compiles. Its scan, stored before
// iteration 8, was taken as it was until a selected name appeared in its text
// (start_table_lock_wait_noop, for lock_wait), and the header changed then. A
// stored scan now holds only for the patterns it was made with that name a
// function the unit shows: the header is wrapped as every unit shows it from
// the iteration that selects it, and keeps its bytes after.
TEST(ScanCache, AHeadersFunctionIsWrappedAsEveryUnitShowsItFromTheFirstTime) {
  vprof::test::TestTree t;
  t.add("wait.h",
        "int spin(int *p);\n"
        "void trace_hook(int *p);\n"
        "static inline int await_it(int *p) {\n"
        "#ifdef TRACE_WAITS\n"
        "  trace_hook(p);\n"
        "#endif\n"
        "  return spin(p);\n"
        "}\n");
  t.add("a.c", "#include \"wait.h\"\nint spin(int *p) { return *p; }\nint target(int *p) { return await_it(p); }\n");
  t.add("d.c", "#define TRACE_WAITS\n#include \"wait.h\"\nvoid trace_hook(int *p) { (void)p; }\nint start_rwlock_wait;\n");
  t.add("e.c", "int lock_wait(int x) { return x > 0 ? lock_wait(x - 1) : 0; }\n");
  for (const char *f : {"a.c", "d.c", "e.c"}) t.compile(f, "-std=c11");
  const std::vector<std::string> files = {"wait.h"};
  ASSERT_TRUE(instrument_of(t, {"target"}, true, false, files).ok);  // d.c's scan is kept
  Outcome second = instrument_of(t, {"target", "await_it"}, true, false, files);
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_EQ(second.from_cache, 1u) << "e.c; a.c and d.c show await_it";
  const std::string &h = second.texts["wait.h"];
  const size_t hook = h.find("trace_hook(p)");
  ASSERT_NE(hook, std::string::npos);
  EXPECT_NE(h.rfind("vprof_site_begin", hook), std::string::npos) << "d.c's view is wrapped too:\n" << h;
  EXPECT_GT(h.rfind("vprof_site_begin", hook), h.rfind("#ifdef", hook)) << h;
  Outcome third = instrument_of(t, {"target", "await_it", "lock_wait"}, true, false, files);
  ASSERT_TRUE(third.ok) << third.error;
  EXPECT_EQ(third.from_cache, 2u) << "a.c and d.c; e.c defines lock_wait";
  EXPECT_EQ(third.texts["wait.h"], second.texts["wait.h"]) << "a header its includers are not rebuilt for";
  // Without --all-files, the units parsed first are those whose text names a
  // selected function as an identifier does: e.c, not d.c.
  Outcome dry = instrument_of(t, {"lock_wait"}, false, true, files);
  ASSERT_TRUE(dry.ok) << dry.error;
  EXPECT_EQ(dry.parsed, 1u);
}

// A name a macro pastes (MariaDB's my_sha224_context_size, APR's
// ap_run_handler) is in no unit's text. A dry run looking for it parsed the
// whole tree (974 units, ~5 min on MariaDB) each time; the units whose stored
// scan holds for the selection now come from the cache, and the one that
// defines the name is parsed. With --all-files, a scan of that unit stored
// before hid the definition: the instrument failed with "no definition".
TEST(ScanCache, ANameAMacroPastesIsLookedForInTheCachedScansFirst) {
  vprof::test::TestTree t;
  make_tree(t);
  t.add("m.c", "#define SIZE_OF(n) n##_size\nint SIZE_OF(my_sha)(int x) { return x + 1; }\n");
  t.compile("m.c", "-std=c11");
  const std::vector<std::string> files = {"m.c"};
  Outcome first = instrument_of(t, {"target"}, true, false, files);
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.from_cache, 0u);

  Outcome dry = instrument_of(t, {"my_sha_size"}, false, true, files);
  ASSERT_TRUE(dry.ok) << dry.error;
  EXPECT_TRUE(dry.undefined.empty()) << dry.undefined.front();
  EXPECT_EQ(dry.parsed, 4u);
  EXPECT_EQ(dry.from_cache, 3u) << "a.c, b.c and c.c; m.c defines the name and is parsed. b.c's scan was "
                                   "stored with target selected, which this selection does not name";

  Outcome all = instrument_of(t, {"target", "my_sha_size"}, true, false, files);
  ASSERT_TRUE(all.ok) << all.error;
  EXPECT_EQ(all.functions, (std::vector<std::string>{"target", "my_sha_size"}));
  EXPECT_EQ(all.from_cache, 3u) << "a.c, b.c and c.c";
}
