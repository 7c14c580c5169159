// A header that C and C++ units both include, with a lock whose value is used
// (MariaDB's include/mysql/psi/mysql_thread.h: `return pthread_mutex_lock(&m)`
// in a static inline function, included by mysys's C files and the server's
// C++ ones). The C form of a wrapped value (__auto_type) is not C++, the C++
// one (a template) is not C: instrument refused the tree ("included from both
// C and C++ translation units"). The header now gets one text both take, and
// both units compile against it and run, recording their waits.
#include <gtest/gtest.h>

#include <string>

#include "instrumenter/instrument.h"
#include "test_tree.h"

using vprof::test::shell;
using vprof::test::slurp;

// Beside lock.h: a.c, a C unit that takes and gives the lock, and b.cc, a C++
// one whose main() is `main_body`; both in the compile db.
void add_units(vprof::test::TestTree &t, const std::string &main_body) {
  t.add("a.c", "#include \"lock.h\"\npthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n"
               "int c_side(void) { int r = take(&mu); give(&mu); return r; }\n");
  t.add("b.cc", "#include \"lock.h\"\nextern \"C\" pthread_mutex_t mu;\nextern \"C\" int c_side(void);\n"
                "int main() { " + main_body + " }\n");
  t.compile("a.c", "-std=c11");
  t.compile("b.cc", "-std=c++17");
}

// lock.h with a function `take` that calls, and both units using it: the
// program exits with 7.
void add_take_tree(vprof::test::TestTree &t) {
  t.add("lock.h",
        "#include <pthread.h>\n"
        "static inline int zero(void) { return 0; }\n"
        "static inline int take(pthread_mutex_t *m) { int z = zero(); return pthread_mutex_lock(m) + z; }\n"
        "static inline void give(pthread_mutex_t *m) { pthread_mutex_unlock(m); }\n");
  add_units(t, "int r = take(&mu); give(&mu); return r + c_side() + 7;");
}

// The tree instrumented with the pthreads pack (and `functions`; `dormant`:
// as a build ahead is).
auto instrument_pthreads(vprof::test::TestTree &t,
                         std::vector<std::string> functions = {}, bool dormant = false) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.dormant = dormant;
  o.functions = std::move(functions);
  o.sync_packs = {"pthreads"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  return vprof::instr::instrument(o);
}

// a.c and b.cc of t, instrumented, compiled by gcc/g++ and by clang/clang++,
// linked and run: each program exits with `code`.
void compile_in_both_and_run(vprof::test::TestTree &t, int code) {
  const std::string inc = std::string(" -I") + VPROF_INCLUDE_DIR + " -I" + t.src();
  const std::string lib = std::string(" -L") + VPROF_LIB_DIR + " -Wl,-rpath," + VPROF_LIB_DIR + " -lvprof -pthread";
  for (const auto &[cc, cxx] : {std::pair<std::string, std::string>{TEST_GCC, TEST_GXX}, {TEST_CC, TEST_CXX}}) {
    std::string out;
    ASSERT_EQ(shell(cc + " -std=c11 -c" + inc + " " + t.path("a.c") + " -o " + t.root() + "/a.o", &out), 0)
        << cc << ": " << out;
    ASSERT_EQ(shell(cxx + " -std=c++17 -c" + inc + " " + t.path("b.cc") + " -o " + t.root() + "/b.o", &out), 0)
        << cxx << ": " << out;
    ASSERT_EQ(shell(cxx + " " + t.root() + "/a.o " + t.root() + "/b.o" + lib + " -o " + t.root() + "/prog", &out), 0)
        << out;
    EXPECT_EQ(shell(t.root() + "/prog", &out), code) << cc << ": " << out;
  }
}

TEST(MixedLang, AValueWrappedInAHeaderOfCAndCxxUnitsCompilesInBoth) {
  vprof::test::TestTree t;
  t.add("lock.h",
        "#include <pthread.h>\n"
        "static inline int take(pthread_mutex_t *m) { return pthread_mutex_lock(m); }\n"
        "static inline int try_take(pthread_mutex_t *m) { return pthread_mutex_trylock(m); }\n"
        "static inline void give(pthread_mutex_t *m) { pthread_mutex_unlock(m); }\n");
  add_units(t, "int r = take(&mu) + try_take(&mu); give(&mu); return r + c_side();");
  auto r = instrument_pthreads(t);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string h = slurp(t.path("lock.h"));
  EXPECT_NE(h.find("__typeof__(pthread_mutex_lock(m))"), std::string::npos) << h;
  EXPECT_NE(h.find("__typeof__(pthread_mutex_trylock(m))"), std::string::npos) << h;
  // Both compilers of each language take it; the program runs (its trylock
  // on a held lock fails: EBUSY, 16).
  compile_in_both_and_run(t, 16);
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
}

// A function of such a header instrumented, with a call in it whose value is
// used (MariaDB's inline_mysql_cond_wait, in mysql_thread.h, carried 78.7% of
// a session's variance and was unreached: "included from both C and C++
// translation units, which need different probe code"). The function probe
// is C's cleanup variable in both languages; the call, a statement expression
// with __typeof__ of its text. Both units compile with both compilers and run.
TEST(MixedLang, AFunctionOfAHeaderOfCAndCxxUnitsIsInstrumented) {
  vprof::test::TestTree t;
  add_take_tree(t);
  auto r = instrument_pthreads(t, {"take"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->functions, 1u);
  EXPECT_EQ(r->call_sites, 2u) << "zero() and pthread_mutex_lock()";
  const std::string h = slurp(t.path("lock.h"));
  EXPECT_NE(h.find("cleanup(vprof_fn_cleanup)"), std::string::npos) << h;
  EXPECT_EQ(h.find("FnScope"), std::string::npos) << h;
  EXPECT_NE(h.find("__typeof__(zero())"), std::string::npos) << h;
  compile_in_both_and_run(t, 7);
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
}

// A build ahead writes the body twice; in a header C units include too, the
// instrumented copy stays inline (a lambda out of line is C++'s alone), or
// the C unit would not compile.
TEST(MixedLang, ABodyWrittenTwiceInAHeaderOfCAndCxxUnitsIsNotOutlined) {
  vprof::test::TestTree t;
  add_take_tree(t);
  auto r = instrument_pthreads(t, {"take"}, /*dormant=*/true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string h = slurp(t.path("lock.h"));
  EXPECT_NE(h.find("if (vprof_fn_runs_plain("), std::string::npos) << h;
  EXPECT_EQ(h.find("() VPROF_OUTLINED_"), std::string::npos) << h;
  compile_in_both_and_run(t, 7);
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
}
