// Calls through pointers and virtual calls: the manifest marks them
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

// PostgreSQL: ExecScan's access method is passed with a cast,
// (ExecScanAccessMtd) IndexNext, as IndexNext takes an IndexScanState *. A
// function cast to the call's pointer type is one of its targets; one cast
// to another type is not.
TEST(Indirect, AFunctionCastToThePointersTypeIsATarget) {
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

TEST(Indirect, PointerCallListsTheFunctionsOfItsTypeWhoseAddressIsTaken) {
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

TEST(Indirect, VirtualCallListsTheMethodAndItsOverriders) {
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

// MariaDB: InnoDB's page latch is sux_lock<ssux>, whose s_lock()
// calls lock.rd_lock() on its ssux member. In the template's own code clang
// names no callee, and the site read as a call through a pointer that may
// reach nothing: "lock.rd_lock" carried 20-26% of a session's variance,
// unreached. Such a call may reach the tree's functions of the name it
// calls, in any class (which instantiations a unit has depends on the unit,
// and which units are parsed on the scan cache: the name does not). With
// one of them instrumented too, the tree compiles and runs.
TEST(Indirect, ADependentCallInATemplateMayReachTheTreesFunctionsOfItsName) {
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
TEST(Indirect, DependentCallsOfFunctionTemplatesMayReachTheFunctionsOfTheirName) {
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

// MariaDB: os_file_sync_posix calls `func`, a local set to
// fdatasync, and log_write_up_to calls log_sys.writer(), a field set to
// log_writer or log_writer_resizing. By type they listed five and nine
// functions (my_md5_context_size among them). A call through a variable or a
// field of the tree reaches what the tree stores there, when that is only
// named functions (whether the tree defines them or not: fdatasync is the
// system's), and the site says where they were stored.
TEST(Indirect, ACallThroughAVariableOrFieldReachesWhatTheTreeStoresThere) {
  vprof::test::TestTree t;
  t.add("log.h",
        "struct log_t { long (*writer)(); int lsn = 0; };\n"
        "extern log_t log_sys;\n"
        "long log_writer();\n"
        "long log_writer_resizing();\n");
  t.add("log.cc",
        "#include \"log.h\"\n"
        "int fdatasync(int fd);\n"
        "log_t log_sys;\n"
        "long log_writer() { return 1; }\n"
        "long log_writer_resizing() { return 2; }\n"
        "long context_size() { return 3; }\n"
        "long (*size_fn)() = context_size;\n"
        "static int other(int fd) { return fd; }\n"
        "int (*keep)(int) = other;\n"
        "int sync_posix(int file) {\n"
        "  auto func = fdatasync;\n"
        "  return func(file);\n"
        "}\n"
        "long write_up_to() { return log_sys.writer(); }\n");
  t.add("resize.cc",
        "#include \"log.h\"\n"
        "void log_resize(bool busy) { log_sys.writer = busy ? &log_writer_resizing : log_writer; }\n"
        "void log_close() { log_sys.writer = nullptr; }\n"
        "struct hooks { long (*before)(); long (*after)(); };\n"
        "hooks h{log_writer, log_writer};\n"
        "void set(long (*&slot)()) { slot = nullptr; }\n"
        "long run_hooks() { set(h.after); return h.before() + h.after(); }\n");
  t.compile("log.cc", "-std=c++17");
  t.compile("resize.cc", "-std=c++17");
  nlohmann::json m = instrument(t, {"sync_posix", "write_up_to", "run_hooks"});
  // A holder bound to a reference may be written through it: its type's.
  expect_targets(m, "h.before()", {"log_writer"});
  expect_targets(m, "h.after()", {"context_size", "log_writer", "log_writer_resizing"});
  expect_targets(m, "func(file)", {"fdatasync"});
  expect_targets(m, "log_sys.writer()", {"log_writer", "log_writer_resizing"});
  EXPECT_EQ(site(m, "log_sys.writer()")->value("stored_in", ""), "field:log_t::writer");
  EXPECT_EQ(site(m, "func(file)")->value("stored_in", "").rfind("var:", 0), 0u);
}

// C's tables of operations (Apache's, PostgreSQL's): an aggregate's
// initializers, designated or in order, are stores too. A holder that is
// also given another pointer (a parameter), or whose address is taken, may
// hold anything of its type: its targets stay its type's.
TEST(Indirect, AnAggregatesInitializersAreStoresAndAnUnknownValueFallsBackToTheType) {
  vprof::test::TestTree t;
  t.add("ops.c",
        "struct ops { int (*read)(int); int (*write)(int); int (*flush)(int); };\n"
        "static int my_read(int x) { return x; }\n"
        "static int my_write(int x) { return x + 1; }\n"
        "static int my_flush(int x) { return x + 2; }\n"
        "static int spare(int x) { return x + 3; }\n"
        "static struct ops file_ops = { .write = my_write, .read = my_read };\n"
        "static struct ops pipe_ops = { my_read, 0, my_flush };\n"
        "int (*keep)(int) = spare;\n"
        "void set_write(struct ops *o, int (*w)(int)) { o->write = w; }\n"
        "void set_flush(int (**where)(int)) { *where = spare; }\n"
        "int use(struct ops *o, int x) {\n"
        "  set_flush(&pipe_ops.flush);\n"
        "  return o->read(x) + (*o->write)(x) + o->flush(x) + file_ops.read(x);\n"
        "}\n");
  t.compile("ops.c", "-std=c99");
  nlohmann::json m = instrument(t, {"use"});
  expect_targets(m, "o->read(x)", {"my_read"});
  expect_targets(m, "file_ops.read(x)", {"my_read"});
  expect_targets(m, "(*o->write)(x)", {"my_flush", "my_read", "my_write", "spare"});
  expect_targets(m, "o->flush(x)", {"my_flush", "my_read", "my_write", "spare"});
  EXPECT_FALSE(site(m, "(*o->write)(x)")->contains("stored_in"));
}
