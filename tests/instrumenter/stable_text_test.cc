// A file with sync wraps alone is rewritten to the same bytes whatever
// functions are selected: MariaDB's mysql_thread.h, which nearly
// every unit includes, carried the manifest's id (a hash of the whole
// selection) in its preamble, so every iteration of a session changed it and
// recompiled the whole server (13 min on 2 cores) with no compiler-cache hit.
// The files whose probes carry ids register their own ids.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "instrumenter/instrument.h"
#include "test_tree.h"

using vprof::test::slurp;

namespace {

std::string instrument(const vprof::test::TestTree &t, const std::string &fn, std::string *main_text) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = {fn};
  o.sync_packs = {"pthreads"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.all_files = true;
  auto r = vprof::instr::instrument(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  std::string header = slurp(t.path("lock.h"));
  *main_text = slurp(t.path("a.c"));
  EXPECT_TRUE(vprof::instr::restore({t.build()}).ok());
  return header;
}

}  // namespace

TEST(StableText, ASyncOnlyHeaderIsTheSameBytesForEverySelection) {
  vprof::test::TestTree t;
  t.add("lock.h", "#include <pthread.h>\n"
                  "static inline int take(pthread_mutex_t *m) { return pthread_mutex_lock(m); }\n");
  t.add("a.c", "#include \"lock.h\"\npthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n"
               "int leaf(int x) { return x * 2; }\n"
               "int first(int x) { take(&mu); return leaf(x); }\n"
               "int second(int x) { return first(x) + leaf(x); }\n");
  t.compile("a.c", "-std=c11");
  std::string a1, a2;
  const std::string h1 = instrument(t, "first", &a1), h2 = instrument(t, "second", &a2);
  EXPECT_NE(h1.find("vprof_sync_wait_begin"), std::string::npos) << h1;
  EXPECT_EQ(h1, h2) << "the header's text does not depend on the selection";
  EXPECT_EQ(h1.find("vprof_register_manifest"), std::string::npos) << h1;
  // The file with the selected function registers its id (which differs
  // with its selection).
  EXPECT_NE(a1.find("vprof_register_manifest"), std::string::npos);
  EXPECT_NE(a2.find("vprof_register_manifest"), std::string::npos);
  EXPECT_NE(a1, a2);
}

namespace {

struct Instrumented {
  std::string header, main_text;
  nlohmann::json manifest;
};

// Instruments `fns` (keeping the ids of `keep`, a manifest path, if given),
// reads the two files and the manifest, and leaves the tree instrumented:
// as a session's iterations follow one another.
Instrumented instrument_keeping(const vprof::test::TestTree &t, std::vector<std::string> fns,
                                const std::string &keep) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = std::move(fns);
  o.keep_ids_from = keep;
  auto r = vprof::instr::instrument(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  Instrumented i{slurp(t.path("lib.h")), slurp(t.path("a.c")), {}};
  i.manifest = nlohmann::json::parse(slurp(t.build() + "/.vprof/manifest.json"));
  return i;
}

std::string id_of(const nlohmann::json &manifest, const std::string &path) {
  for (const auto &f : manifest["files"])
    if (f["path"] == path) return f["id"];
  return "";
}

}  // namespace

// MariaDB's session selected TABLE::delete_row, defined in table.h.
// Ids were numbered over the whole selection, so a function added in any
// file sorted before table.h renumbered its probes, and the manifest's id
// (a hash of the whole selection) was in its text: 236-303 units rebuilt
// every iteration. With the earlier manifest's ids kept and an id of its own
// per file, a header whose own selection did not change is the same bytes.
TEST(StableText, AHeaderWhoseSelectionDidNotChangeKeepsItsBytes) {
  vprof::test::TestTree t;
  t.add("lib.h", "int leaf(int x);\n"
                 "static inline int helper(int x) { return leaf(x) + 1; }\n");
  t.add("a.c", "#include \"lib.h\"\n"
               "int leaf(int x) { return x * 2; }\n"
               "int first(int x) { return helper(x) + leaf(x); }\n"
               "int second(int x) { return first(x) + helper(x); }\n");
  t.compile("a.c", "-std=c11");
  const std::string manifest = t.build() + "/.vprof/manifest.json", kept = t.root() + "/iter-1.json";
  Instrumented one = instrument_keeping(t, {"helper"}, "");
  std::filesystem::copy_file(manifest, kept);
  // first and second sort before lib.h's helper (a.c < lib.h).
  Instrumented two = instrument_keeping(t, {"helper", "first", "second"}, kept);
  EXPECT_EQ(one.header, two.header) << "the header's own selection did not change";
  EXPECT_NE(one.main_text, two.main_text);
  const std::string h1 = id_of(one.manifest, t.path("lib.h")), h2 = id_of(two.manifest, t.path("lib.h"));
  ASSERT_EQ(h1.size(), 16u) << one.manifest.dump(1);
  EXPECT_EQ(h1, h2);
  EXPECT_NE(two.header.find("vprof_register_manifest(\"" + h2 + "\""), std::string::npos) << two.header;
  EXPECT_NE(two.main_text.find("vprof_register_manifest(\"" + id_of(two.manifest, t.path("a.c")) + "\""),
            std::string::npos);
  EXPECT_NE(one.manifest["id"], two.manifest["id"]);
  // helper kept id 1; first and second are numbered after it.
  std::map<std::string, int> ids;
  for (const auto &f : two.manifest["functions"]) ids[f["name"]] = f["id"];
  EXPECT_EQ(ids["helper"], 1);
  EXPECT_EQ((std::set<int>{ids["first"], ids["second"]}), (std::set<int>{2, 3}));
  // Without the earlier ids, helper is renumbered and the header changes.
  Instrumented fresh = instrument_keeping(t, {"helper", "first", "second"}, "");
  EXPECT_NE(one.header, fresh.header);
  // Dropping first and second, keeping that instrumentation's ids: helper
  // keeps its new number, and the header its bytes.
  std::filesystem::copy_file(manifest, kept, std::filesystem::copy_options::overwrite_existing);
  Instrumented back = instrument_keeping(t, {"helper"}, kept);
  EXPECT_EQ(back.header, fresh.header);
  EXPECT_TRUE(vprof::instr::restore({t.build()}).ok());
  EXPECT_EQ(slurp(t.path("lib.h")), "int leaf(int x);\nstatic inline int helper(int x) { return leaf(x) + 1; }\n");
}

// A manifest to keep ids from that is not one: one error naming it, and
// nothing changed.
TEST(StableText, AnUnreadableManifestToKeepIdsFromIsAnError) {
  vprof::test::TestTree t;
  t.add("a.c", "int leaf(int x) { return x * 2; }\nint first(int x) { return leaf(x); }\n");
  t.compile("a.c", "-std=c11");
  vprof::test::spit(t.root() + "/bad.json", "[1, 2");
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = {"first"};
  o.keep_ids_from = t.root() + "/bad.json";
  auto r = vprof::instr::instrument(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind(t.root() + "/bad.json: not a manifest", 0), 0u) << r.error().message;
  o.keep_ids_from = t.root() + "/missing.json";
  r = vprof::instr::instrument(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot read"), std::string::npos) << r.error().message;
  EXPECT_EQ(slurp(t.path("a.c")), "int leaf(int x) { return x * 2; }\nint first(int x) { return leaf(x); }\n");
}
