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
