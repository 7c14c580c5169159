// A file with sync wraps alone is rewritten to the same bytes whatever
// functions are selected (issue 29): MariaDB's mysql_thread.h, which nearly
// every unit includes, carried the manifest's id (a hash of the whole
// selection) in its preamble, so every iteration of a session changed it and
// recompiled the whole server (13 min on 2 cores) with no compiler-cache hit.
// The files whose probes carry ids still register the manifest.
#include <gtest/gtest.h>

#include <string>

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

TEST(StableText, Issue29_ASyncOnlyHeaderIsTheSameBytesForEverySelection) {
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
  // The file with the selected function registers the manifest (its id
  // differs with the selection).
  EXPECT_NE(a1.find("vprof_register_manifest"), std::string::npos);
  EXPECT_NE(a2.find("vprof_register_manifest"), std::string::npos);
  EXPECT_NE(a1, a2);
}
