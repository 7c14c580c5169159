// Build once (iterate/prebuild.h) on hand-made call graphs and manifests.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "iterate/prebuild.h"

using namespace vprof::iterate;

namespace {

// A call graph as a dry run would tell it; a function it does not list is
// not buildable (no definition in the tree, a library's).
struct Graph {
  std::map<std::string, Reach> nodes;
  std::vector<std::vector<std::string>> asked;
  ReachOf reach() {
    return [this](const std::vector<std::string> &fs) {
      asked.push_back(fs);
      std::map<std::string, Reach> out;
      for (const auto &f : fs)
        if (auto it = nodes.find(f); it != nodes.end()) out[f] = it->second;
      return out;
    };
  }
};

Graph tree() {
  Graph g;
  g.nodes["root"] = {true, {"a", "b", "memcpy"}};
  g.nodes["a"] = {true, {"a1", "a2"}};
  g.nodes["b"] = {true, {"b1", "root"}};  // recursion back to the root
  g.nodes["a1"] = {true, {"deep"}};
  g.nodes["a2"] = {false, {}};  // a leaf: its call is timed at its site
  g.nodes["b1"] = {true, {}};
  g.nodes["deep"] = {true, {}};
  return g;
}

}  // namespace

TEST(Prebuild, WidenTakesWhatTheSetReachesNearestFirstToTheDepth) {
  Graph g = tree();
  EXPECT_EQ(widen({"root"}, {}, 1, 100, g.reach()), (std::vector<std::string>{"root", "a", "b"}));
  EXPECT_EQ(widen({"root"}, {}, 2, 100, g.reach()), (std::vector<std::string>{"root", "a", "b", "a1", "b1"}));
  EXPECT_EQ(widen({"root"}, {}, 3, 100, g.reach()),
            (std::vector<std::string>{"root", "a", "b", "a1", "b1", "deep"}));
  EXPECT_EQ(widen({"root"}, {}, 0, 100, g.reach()), (std::vector<std::string>{"root"}));
}

TEST(Prebuild, WidenKeepsTheSetWhateverTheBudgetAndTheLastBuildAsItAllows) {
  Graph g = tree();
  // The budget cuts what is added ahead and what is kept, never the set.
  EXPECT_EQ(widen({"root", "x"}, {"old"}, 3, 2, g.reach()), (std::vector<std::string>{"root", "x"}));
  EXPECT_EQ(widen({"root"}, {}, 3, 4, g.reach()), (std::vector<std::string>{"root", "a", "b", "a1"}));
  EXPECT_EQ(widen({"root"}, {"old"}, 1, 100, g.reach()), (std::vector<std::string>{"root", "a", "b", "old"}));
  // Not added twice.
  EXPECT_EQ(widen({"root"}, {"a", "root"}, 1, 100, g.reach()), (std::vector<std::string>{"root", "a", "b"}));
}

// On PostgreSQL the first build's 400 functions were the root's nearest, and
// the session's path went deeper: each later level left the build, and with
// the last build kept whole no budget was left to look ahead of it. The way
// ahead starts where the set is new.
TEST(Prebuild, WidenLooksAheadOfTheFunctionsTheLastBuildDidNotHoldFirst) {
  Graph g = tree();
  EXPECT_EQ(widen({"root", "a", "a1"}, {"root", "a", "b"}, 2, 4, g.reach()),
            (std::vector<std::string>{"root", "a", "a1", "deep"}));
  EXPECT_EQ(widen({"root", "a", "a1"}, {"root", "a", "b"}, 2, 100, g.reach()),
            (std::vector<std::string>{"root", "a", "a1", "deep", "b", "b1"}));
}

// PostgreSQL at scale 16: the budget went to CommitTransaction's thirty
// AtEOXact_ calls, and the next level, below parse_analyze_fixedparams (a
// leaf of the set the last build held), left the build at every level. The
// set's leaves take turns, each its next callee, the largest body first.
TEST(Prebuild, WidenGivesEachLeafOfTheSetItsTurnLargestCalleeFirst) {
  Graph g;
  g.nodes["root"] = {true, {"commit", "parse"}, 50};
  g.nodes["commit"] = {true, {"c1", "c2", "c3", "c4", "c5"}, 80};
  for (const char *c : {"c1", "c2", "c3", "c4", "c5"}) g.nodes[c] = {true, {"x"}, 10};
  g.nodes["parse"] = {true, {"p_small", "p_big"}, 60};
  g.nodes["p_small"] = {true, {"x"}, 5};
  g.nodes["p_big"] = {true, {"x"}, 100};
  EXPECT_EQ(widen({"root", "commit", "parse"}, {"root", "parse"}, 2, 6, g.reach()),
            (std::vector<std::string>{"root", "commit", "parse", "c1", "p_big", "c2"}));
  EXPECT_EQ(widen({"root", "commit", "parse"}, {"root", "parse"}, 1, 100, g.reach()),
            (std::vector<std::string>{"root", "commit", "parse", "c1", "p_big", "c2", "p_small", "c3", "c4", "c5"}));
}

// On MariaDB a level that added Protocol::send_ok to a build of 60 ahead
// took the places of functions the first build held in sql_class.h, and
// the header's new bytes recompiled every unit of the server (23 min). The
// last build's functions in headers are kept first; the way ahead takes
// what is left of the budget, then the rest of the last build.
TEST(Prebuild, WidenKeepsTheLastBuildsFunctionsInHeadersFirst) {
  Graph g = tree();
  g.nodes["in_h"] = {true, {}, 10, true};
  g.nodes["in_h2"] = {true, {}, 10, true};
  g.nodes["in_cc"] = {true, {}, 10, false};
  // Budget 4: the set, both header functions, then one way ahead; the
  // source file's function goes.
  EXPECT_EQ(widen({"root"}, {"in_cc", "in_h2", "in_h"}, 2, 4, g.reach()),
            (std::vector<std::string>{"root", "in_h2", "in_h", "a"}));
  // With room, the way ahead, then the rest of the last build.
  EXPECT_EQ(widen({"root"}, {"in_cc", "in_h"}, 1, 100, g.reach()),
            (std::vector<std::string>{"root", "in_h", "a", "b", "in_cc"}));
  // Without a last build, as before.
  EXPECT_EQ(widen({"root"}, {}, 1, 100, g.reach()), (std::vector<std::string>{"root", "a", "b"}));
}

// The way ahead after the first build: on MariaDB, header functions new to
// the build (sql_string.h's Binary_string::q_append, structs.h's
// Discrete_intervals_list::empty) joined ahead at iteration 4, and 321 units
// compiled again for a level that named none of them. After the first build
// only the set brings in a header's function; the first build, which
// compiles everything, takes them ahead as any other.
TEST(Prebuild, AfterTheFirstBuildNoHeaderFunctionJoinsAheadButTheSetsOwn) {
  Graph g = tree();
  g.nodes["a"].header = true;  // root's callee, in a header
  g.nodes["b1"].header = true;
  EXPECT_EQ(widen({"root"}, {}, 2, 100, g.reach()), (std::vector<std::string>{"root", "a", "b", "a1", "b1"}));
  // With a last build, a and b1 stay out of the way ahead, and so does
  // what only they reach (a1 below a).
  EXPECT_EQ(widen({"root"}, {"root"}, 2, 100, g.reach()), (std::vector<std::string>{"root", "b"}));
  // A header function of the last build is kept; one the set names is in.
  EXPECT_EQ(widen({"root"}, {"root", "a"}, 2, 100, g.reach()), (std::vector<std::string>{"root", "a", "b"}));
  EXPECT_EQ(widen({"root", "b1"}, {"root"}, 2, 100, g.reach()), (std::vector<std::string>{"root", "b1", "b"}));
}

// More than one level a run: on PostgreSQL building ahead alternated a
// build and a run on it, as each run broke down one level. The level below
// the functions a run breaks down first, where the build holds it, is
// turned on in the same run, each callee once, under its first caller.
TEST(Prebuild, TheNextLevelIsWhatTheBuildHoldsBelowTheFreshFunctions) {
  Graph g;
  g.nodes["root"] = {true, {"commit", "parse"}, 50};
  g.nodes["commit"] = {true, {"c_small", "c_big", "shared", "memcpy"}, 80};
  g.nodes["parse"] = {true, {"shared", "p1", "root"}, 60};
  g.nodes["c_small"] = {true, {}, 5};
  g.nodes["c_big"] = {true, {}, 90};
  g.nodes["shared"] = {true, {}, 30};
  g.nodes["p1"] = {true, {}, 30};
  const std::vector<std::string> built{"root", "commit", "parse", "c_small", "c_big", "shared"};
  auto names = [](const std::vector<NextLevel> &l) {
    std::vector<std::string> out;
    for (const auto &x : l) out.push_back(x.function + "<" + x.parent);
    return out;
  };
  // p1 is not built (a rebuild would be needed), memcpy is not the tree's,
  // root is in the set already; shared is one callee, under commit.
  EXPECT_EQ(names(next_level({"commit", "parse"}, {"root", "commit", "parse"}, built, g.reach())),
            (std::vector<std::string>{"c_big<commit", "shared<commit", "c_small<commit"}));
  EXPECT_EQ(names(next_level({"parse"}, {"root", "commit", "parse"}, built, g.reach())),
            (std::vector<std::string>{"shared<parse"}));
  // Nothing fresh, nothing below; what the set has is not turned on twice.
  EXPECT_TRUE(next_level({}, {"root"}, built, g.reach()).empty());
  EXPECT_EQ(names(next_level({"commit"}, {"root", "commit", "c_big"}, built, g.reach())),
            (std::vector<std::string>{"shared<commit", "c_small<commit"}));
}

TEST(Prebuild, ARunTurnsOnItsSetsFunctionsAndTheirSitesOnly) {
  const nlohmann::json built = {
      {"schema_version", 2},
      {"id", "0123456789abcdef"},
      {"files", {{{"id", "f1"}, {"path", "/t/a.c"}}, {{"id", "f2"}, {"path", "/t/b.c"}}}},
      {"functions",
       {{{"id", 1}, {"name", "root"}, {"file", "/t/a.c"}, {"line", 1}},
        {{"id", 2}, {"name", "ns::f"}, {"file", "/t/a.c"}, {"line", 5}},
        {{"id", 3}, {"name", "ns::f"}, {"file", "/t/b.c"}, {"line", 9}},
        {{"id", 4}, {"name", "g"}, {"file", "/t/b.c"}, {"line", 20}}}},
      {"call_sites",
       {{{"id", 1}, {"function_id", 1}, {"callee", "ns::f"}},
        {{"id", 2}, {"function_id", 2}, {"callee", "g"}},
        {{"id", 3}, {"function_id", 3}, {"callee", "g"}},
        {{"id", 4}, {"function_id", 4}, {"callee", "memcpy"}}}},
      {"sync_sites", nlohmann::json::array()}};
  RunProbes r = run_probes(built, {"root", "b.c:ns::f"});
  EXPECT_TRUE(r.missing.empty());
  EXPECT_EQ(r.dormant, (std::vector<std::string>{"f 2", "f 4", "s 2", "s 4"}));
  EXPECT_EQ(r.largest_dormant, 4u);
  ASSERT_EQ(r.manifest["functions"].size(), 2u);
  EXPECT_EQ(r.manifest["functions"][1]["id"], 3);
  ASSERT_EQ(r.manifest["call_sites"].size(), 2u);
  EXPECT_EQ(r.manifest["call_sites"][0]["id"], 1);
  EXPECT_EQ(r.manifest["call_sites"][1]["id"], 3);
  // The files and the manifest's id stay: the program registered them.
  EXPECT_EQ(r.manifest["files"], built["files"]);
  EXPECT_EQ(r.manifest["id"], built["id"]);
  // Every overload of a name; a name the build does not hold is missing.
  r = run_probes(built, {"ns::f", "h"});
  EXPECT_EQ(r.dormant, (std::vector<std::string>{"f 1", "f 4", "s 1", "s 4"}));
  EXPECT_EQ(r.missing, (std::vector<std::string>{"h"}));
}

namespace {

vprof::instr::CallGraphNode node(unsigned size, std::set<std::string> loop_callees = {}, bool pointers = false,
                                 std::set<std::string> opaque = {}) {
  vprof::instr::CallGraphNode n;
  n.size = size;
  n.opaque_callees = std::move(opaque);
  n.loop_callees = std::move(loop_callees);
  n.loops_call_pointers = pointers;
  return n;
}

}  // namespace

// LevelDB's db_bench with every probe of its first build dormant cost 13.2%
// more instructions than the plain build, most of it in ReadUint32LE's
// enter and exit, inlined into crc32c::Extend's loop, and in one-line
// accessors (WriteBatchInternal::Count) that the probes kept from being
// inlined. Tiny functions and the kernels that loop over them are left out;
// a small wrapper of a call outside the tree is not tiny (minidb's
// Log::fsync, 23, left out, cost the demo a second build).
TEST(Prebuild, ABuildAheadLeavesOutTinyFunctionsAndLoopsOverThem) {
  std::map<std::string, vprof::instr::CallGraphNode> g;
  g["read_le"] = node(8);                                    // return a | b << 8 ...
  g["extend"] = node(708, {"read_le"});                      // crc32c::Extend: loops of read_le
  g["make_room"] = node(240, {"num_files", "wait"});         // a retry loop that waits
  g["num_files"] = node(20);
  g["write_all"] = node(60, {"write"});                      // a loop around a syscall, outside the tree
  g["iterate"] = node(179, {"get_slice"}, true);             // a loop calling a handler through a pointer
  g["get_slice"] = node(12);
  g["log_fsync"] = node(23, {}, false, {"fsync", "inject_delay"});  // minidb's Log::fsync: the demo's answer
  g["inject_delay"] = node(40);
  g["count"] = node(13, {}, false, {"inject_delay"});              // its one call defined in another file
  EXPECT_EQ(left_out_ahead(g["read_le"], g, 24), "tiny");
  EXPECT_EQ(left_out_ahead(g["num_files"], g, 24), "tiny");
  EXPECT_EQ(left_out_ahead(g["extend"], g, 24), "a kernel");
  EXPECT_EQ(left_out_ahead(g["make_room"], g, 24), "") << "wait is outside the tree: real work";
  EXPECT_EQ(left_out_ahead(g["write_all"], g, 24), "");
  EXPECT_EQ(left_out_ahead(g["iterate"], g, 24), "") << "a call through a pointer may be anything";
  EXPECT_EQ(left_out_ahead(g["log_fsync"], g, 24), "") << "small, but fsync's body is outside the tree";
  EXPECT_EQ(left_out_ahead(g["count"], g, 24), "tiny");
  // prebuild_min_size 0: every size is built ahead, and nothing is a kernel.
  for (const auto &[name, n] : g) EXPECT_EQ(left_out_ahead(n, g, 0), "") << name;
}

// LevelDB's Status::operator= (the copy, 36, calls Status::CopyState; the
// move swaps a pointer) cost db_bench 0.87% of its instructions dormant,
// two thirds of its first build's dormant cost: called at every assignment
// of a Status in the program, it was no longer inlined. Assignment operators
// are left out whatever their size; other operators are not.
TEST(Prebuild, ABuildAheadLeavesOutAssignmentOperators) {
  std::map<std::string, vprof::instr::CallGraphNode> g;
  g["leveldb::Status::operator="] = node(36, {"leveldb::Status::CopyState"});
  g["leveldb::Status::CopyState"] = node(37, {}, false, {"memcpy"});
  for (const char *other : {"leveldb::Slice::operator==", "Item::operator<=", "String::operator+=", "Cmp::operator()",
                            "operator==", "Status::operator_equals"})
    g[other] = node(60, {"leveldb::Status::CopyState"});
  for (auto &[name, n] : g) n.name = name;
  EXPECT_EQ(left_out_ahead(g["leveldb::Status::operator="], g, 24), "an assignment operator");
  EXPECT_EQ(left_out_ahead(g["leveldb::Status::operator="], g, 0), "an assignment operator");
  EXPECT_TRUE(vprof::iterate::assignment_operator("operator="));
  for (const auto &[name, n] : g)
    if (name != "leveldb::Status::operator=") EXPECT_EQ(left_out_ahead(n, g, 24), "") << name;
}
