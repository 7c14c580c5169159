// The scan cache (instrumenter/scan_cache.h, issue 29): with the sync packs
// everywhere, a unit that names no selected function is parsed again only
// when a file it read changed; what a cached scan wraps is byte for byte what
// a parse wraps.
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

  // a.c and c.c name no selected function: their scans come from the cache;
  // b.c defines `target` and is parsed.
  Scan second = instrument(t);
  EXPECT_EQ(second.parsed, 3u);
  EXPECT_EQ(second.from_cache, 2u);
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
  // A new lock in the header a.c includes (c.c does not): a.c is parsed
  // again, c.c still comes from the cache, and the new call is wrapped.
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
  EXPECT_EQ(after_source.from_cache, 1u) << "a.c only";
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
  EXPECT_EQ(entries, 2u);
  Scan second = instrument(t);
  EXPECT_EQ(second.from_cache, 0u);
  EXPECT_EQ(second.texts, first.texts);
  EXPECT_EQ(instrument(t).from_cache, 2u) << "the entries were written again";
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
  EXPECT_EQ(instrument(t, true, {"pthreads", "stdcxx"}).from_cache, 2u) << "the latest kept";
  EXPECT_EQ(instrument(t, true, {"pthreads"}).from_cache, 0u) << "the oldest gone";
}
