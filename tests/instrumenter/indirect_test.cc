// Calls through pointers and virtual calls (issue 13): the manifest marks them
// `indirect` and lists the functions in the tree each may reach, so that
// `iterate` can break such a call down. Targets of a pointer call: functions
// of its type whose address the tree takes; of a virtual call: the method's
// definitions and its overriders.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "instrumenter/instrument.h"
#include "test_tree.h"

using vprof::test::slurp;

namespace {

nlohmann::json instrument(const vprof::test::TestTree &t, std::vector<std::string> fns) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = std::move(fns);
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.all_files = true;  // as iterate does: every file's address-taking is seen
  auto r = vprof::instr::instrument(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r.ok()) return {};
  nlohmann::json m = nlohmann::json::parse(slurp(r->manifest_path));
  EXPECT_TRUE(vprof::instr::restore({t.build()}).ok());
  return m;
}

const nlohmann::json *site(const nlohmann::json &m, const std::string &callee_text) {
  for (const auto &s : m.at("call_sites"))
    if (s.at("callee_text") == callee_text) return &s;
  return nullptr;
}

// The pointer or virtual call `callee_text` is marked indirect and may reach
// `targets` (sorted).
void expect_targets(const nlohmann::json &m, const std::string &callee_text, const nlohmann::json &targets) {
  const nlohmann::json *p = site(m, callee_text);
  ASSERT_NE(p, nullptr) << m.dump(2);
  EXPECT_EQ(p->value("indirect", false), true);
  EXPECT_EQ(p->at("targets"), targets);
}

}  // namespace

// Issue 14, PostgreSQL: ExecScan's access method is passed with a cast,
// (ExecScanAccessMtd) IndexNext, as IndexNext takes an IndexScanState *. A
// function cast to the call's pointer type is one of its targets; one cast
// to another type is not.
TEST(Indirect, Issue14_AFunctionCastToThePointersTypeIsATarget) {
  vprof::test::TestTree t;
  t.add("scan.c",
        "typedef struct ScanState { int n; } ScanState;\n"
        "typedef struct IndexScanState { ScanState ss; int key; } IndexScanState;\n"
        "typedef int (*AccessMtd)(ScanState *);\n"
        "typedef long (*OtherMtd)(long);\n"
        "int ExecScan(ScanState *node, AccessMtd accessMtd) { return (*accessMtd)(node); }\n"
        "static int IndexNext(IndexScanState *node) { return node->key; }\n"
        "static int SeqNext(ScanState *node) { return node->n; }\n"
        "static int BitmapNext(IndexScanState *node) { return node->key + 1; }\n"
        "static int Unrelated(IndexScanState *node) { return node->key + 2; }\n"
        "int ExecIndexScan(IndexScanState *node) {\n"
        "  return ExecScan(&node->ss, (AccessMtd) IndexNext) + ExecScan(&node->ss, SeqNext) +\n"
        "         ExecScan(&node->ss, (AccessMtd) &BitmapNext) + (int)((OtherMtd) Unrelated)(1);\n"
        "}\n");
  t.compile("scan.c", "-std=c99");
  nlohmann::json m = instrument(t, {"ExecScan"});
  expect_targets(m, "(*accessMtd)(node)", {"BitmapNext", "IndexNext", "SeqNext"});
}

TEST(Indirect, Case13_PointerCallListsTheFunctionsOfItsTypeWhoseAddressIsTaken) {
  vprof::test::TestTree t;
  // The table is in another file than the call; `twice` has the type but its
  // address is never taken; `other` is address-taken with another type; `scan`
  // is only called directly.
  t.add("exec.c",
        "typedef long (*node_fn)(long);\n"
        "extern node_fn table[3];\n"
        "long scan(long x);\n"
        "long run(int op, long x) {\n"
        "  node_fn f = table[op];\n"
        "  return f(x) + (*table[0])(x) + scan(x);\n"
        "}\n");
  t.add("nodes.c",
        "typedef long (*node_fn)(long);\n"
        "long scan(long x) { return x + 1; }\n"
        "long join(long x) { return x * 2; }\n"
        "long sort_node(long x) { return x - 1; }\n"
        "long twice(long x) { return 2 * x; }\n"
        "static int other(int y) { return y; }\n"
        "int (*keep)(int) = other;\n"
        "long call_scan(void) { return scan(1) + twice(2); }\n"
        "node_fn table[3] = {join, &sort_node, scan};\n");
  t.compile("exec.c", "-std=c99");
  t.compile("nodes.c", "-std=c99");
  nlohmann::json m = instrument(t, {"run"});
  expect_targets(m, "f(x)", {"join", "scan", "sort_node"});
  expect_targets(m, "(*table[0])(x)", {"join", "scan", "sort_node"});
  const nlohmann::json *d = site(m, "scan(x)");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->contains("indirect")) << "a direct call names its callee";
  EXPECT_EQ(m.at("schema_version"), 2);
}

TEST(Indirect, Case13_VirtualCallListsTheMethodAndItsOverriders) {
  vprof::test::TestTree t;
  t.add("plan.cc",
        "struct Node { virtual ~Node() {} virtual long exec(long x) = 0; };\n"
        "struct Scan : Node { long exec(long x) override { return x + 1; } };\n"
        "struct Join : Node { long exec(long x) override { return x * 2; } };\n"
        "struct HashJoin : Join { long exec(long x) override { return x * 3; } };\n"
        "long drive(Node *n) { return n->exec(1); }\n");
  t.compile("plan.cc", "-std=c++17");
  nlohmann::json m = instrument(t, {"drive"});
  expect_targets(m, "n->exec(1)", {"HashJoin::exec", "Join::exec", "Node::exec", "Scan::exec"});
}

// Issue 29, MariaDB: InnoDB's page latch is sux_lock<ssux>, whose s_lock()
// calls lock.rd_lock() on its ssux member. In the template's own code clang
// names no callee, and the site read as a call through a pointer that may
// reach nothing: "lock.rd_lock" carried 20-26% of a session's variance,
// unreached. Such a call may reach the tree's functions of the name it
// calls, in any class (which instantiations a unit has depends on the unit,
// and which units are parsed on the scan cache: the name does not). With
// one of them instrumented too, the tree compiles and runs.
TEST(Indirect, Issue29_ADependentCallInATemplateMayReachTheTreesFunctionsOfItsName) {
  vprof::test::TestTree t;
  t.add("latch.cc",
        "template <bool spin> struct ssux_lock_impl {\n"
        "  int word = 0;\n"
        "  void rd_wait() { word += spin ? 2 : 1; }\n"
        "  void rd_lock() { if (word) rd_wait(); ++word; }\n"
        "};\n"
        "struct srw_lock { int w = 0; void rd_lock() { ++w; } };\n"
        "struct other { int rd_locked() { return 0; } };\n"
        "template <typename ssux> class sux_lock {\n"
        "  ssux lock;\n"
        " public:\n"
        "  int s_lock() { lock.rd_lock(); return lock.word; }\n"
        "};\n"
        "int main() { sux_lock<ssux_lock_impl<true>> b; b.s_lock(); return b.s_lock() == 4 ? 0 : 1; }\n");
  t.compile("latch.cc", "-std=c++17");
  nlohmann::json m = instrument(t, {"sux_lock::s_lock"});
  expect_targets(m, "lock.rd_lock()", {"srw_lock::rd_lock", "ssux_lock_impl::rd_lock"});
  EXPECT_EQ(site(m, "lock.rd_lock()")->value("dependent_name", ""), "rd_lock");

  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = {"sux_lock::s_lock", "ssux_lock_impl::rd_lock"};
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::string out;
  ASSERT_EQ(vprof::test::shell(std::string(TEST_CXX) + " -std=c++17 -I" + VPROF_INCLUDE_DIR + " " +
                                   t.path("latch.cc") + " -L" + VPROF_LIB_DIR + " -Wl,-rpath," + VPROF_LIB_DIR +
                                   " -lvprof -pthread -o " + t.root() + "/latch",
                               &out),
            0)
      << out << slurp(t.path("latch.cc"));
  EXPECT_EQ(vprof::test::shell(t.root() + "/latch", &out), 0) << out;
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
}

// The same for a function template's call of a dependent argument's member,
// and for a free function found when the argument's type is known (f(l)):
// whether a unit instantiates the template or not.
TEST(Indirect, Issue29_DependentCallsOfFunctionTemplatesMayReachTheFunctionsOfTheirName) {
  vprof::test::TestTree t;
  t.add("guard.h",
        "struct Mutex { int n = 0; void acquire() { ++n; } };\n"
        "namespace spin { struct Spin { int n = 0; void acquire() { n += 2; } }; int release(Spin &s); }\n"
        "int release(Mutex &m);\n"
        "template <class L> int take(L &l) { l.acquire(); return release(l); }\n"
        "template <class L> int never(L &l) { l.acquire(); return 0; }\n");
  t.add("a.cc", "#include \"guard.h\"\nint release(Mutex &m) { return m.n; }\nint a() { Mutex m; return take(m); }\n");
  t.add("b.cc", "#include \"guard.h\"\nint spin::release(Spin &s) { return s.n; }\n");
  t.compile("a.cc", "-std=c++17");
  t.compile("b.cc", "-std=c++17");
  nlohmann::json m = instrument(t, {"take", "never"});
  ASSERT_EQ(m.at("call_sites").size(), 3u) << m.dump(2);
  for (const auto &s : m.at("call_sites")) {
    EXPECT_EQ(s.value("indirect", false), true) << s.dump();
    if (s.at("callee_text") == "l.acquire()")
      EXPECT_EQ(s.at("targets"), nlohmann::json({"Mutex::acquire", "spin::Spin::acquire"})) << s.dump();
    else
      EXPECT_EQ(s.at("targets"), nlohmann::json({"release", "spin::release"})) << s.dump();
  }
}
