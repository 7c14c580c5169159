#include <gtest/gtest.h>

#include <filesystem>

#include "instrumenter/callgraph.h"
#include "instrumenter/instrument.h"
#include "test_tree.h"

using namespace vprof::instr;

namespace {

CallGraphNode node(const std::string &name, std::set<std::string> callees) {
  CallGraphNode n;
  n.name = name;
  n.callees = std::move(callees);
  return n;
}

TEST(CallGraph, HeightsCollapseRecursionAndIgnoreExternalCallees) {
  std::map<std::string, CallGraphNode> all;
  all["root"] = node("root", {"a", "b", "printf"});
  all["a"] = node("a", {"c"});
  all["b"] = node("b", {"b2"});
  all["b2"] = node("b2", {"b", "c"});  // b <-> b2 is one component
  all["c"] = node("c", {"memcpy"});
  all["unreached"] = node("unreached", {"root"});
  auto g = graph_below(all, "root");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->nodes.size(), 5u);  // unreached is not below root
  EXPECT_EQ(g->nodes.at("c").height, 0);
  EXPECT_EQ(g->nodes.at("a").height, 1);
  EXPECT_EQ(g->nodes.at("b").height, 1);
  EXPECT_EQ(g->nodes.at("b2").height, 1);
  EXPECT_EQ(g->height, 2);
}

TEST(CallGraph, UnknownRootListsCloseMatches) {
  std::map<std::string, CallGraphNode> all;
  all["ns::handle"] = node("ns::handle", {});
  auto g = graph_below(all, "ns::handel");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("ns::handle"), std::string::npos) << g.error().message;
}

TEST(CallGraph, FromATreeAcrossFiles) {
  vprof::test::TestTree t;
  t.add("a.cc", "namespace s { int leaf(int); int mid(int x) { return leaf(x); }\n"
                "int top(int x) { return mid(x) + mid(1); } }\n");
  t.add("b.cc", "namespace s { int leaf(int x) { return x > 0 ? leaf(x - 1) : 0; } }\n");
  t.compile("a.cc", "-std=c++17");
  t.compile("b.cc", "-std=c++17");
  CallGraphOptions o;
  o.build_dir = t.build();
  o.root = "s::top";
  o.jobs = 2;
  auto g = build_callgraph(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->height, 2);
  EXPECT_EQ(g->nodes.at("s::leaf").height, 0);  // self-recursion collapses
  auto j = callgraph_json(*g);
  EXPECT_EQ(j["root"], "s::top");
  EXPECT_EQ(j["functions"][0]["name"], "s::top");
  EXPECT_EQ(j["functions"][0]["callees"], nlohmann::json({"s::mid"}));
}

// The whole tree's graph (an iterate session's build ahead): every function
// the tree defines, below the root or not, with the files that define each
// name: two programs' own helpers of one name are two files.
TEST(CallGraph, TheWholeTreeNamesEveryFileThatDefinesAName) {
  vprof::test::TestTree t;
  t.add("server.c", "static int helper(int x) { return x + 1; }\nint serve(int x) { return helper(x); }\n");
  t.add("tool.c", "static int helper(int x) { return x - 1; }\nint tool(int x) { return helper(x); }\n");
  t.compile("server.c", "-std=c99");
  t.compile("tool.c", "-std=c99");
  CallGraphOptions o;
  o.build_dir = t.build();
  o.whole_tree = true;
  auto g = build_callgraph(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_TRUE(g->nodes.count("serve") && g->nodes.count("tool") && g->nodes.count("helper"));
  EXPECT_EQ(g->nodes.at("helper").files.size(), 2u);
  EXPECT_EQ(g->nodes.at("serve").files.size(), 1u);
  EXPECT_EQ(g->nodes.at("serve").callees, (std::set<std::string>{"helper"}));
}

// A function a header defines is a header's, whatever the header's name
// (InnoDB's .inl and .ic too): a build ahead keeps it once built
// (iterate/prebuild.h). One the unit's own file defines is not.
TEST(CallGraph, AFunctionAHeaderDefinesIsMarkedAHeaders) {
  vprof::test::TestTree t;
  t.add("row0mysql.inl", "static inline int inl_fn(int x) { return x * 2; }\n");
  t.add("server.h", "static inline int h_fn(int x) { return x + 2; }\n");
  t.add("server.c", "#include \"row0mysql.inl\"\n#include \"server.h\"\nint serve(int x) { return h_fn(inl_fn(x)); }\n");
  t.compile("server.c", "-std=c99");
  CallGraphOptions o;
  o.build_dir = t.build();
  o.whole_tree = true;
  auto g = build_callgraph(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_TRUE(g->nodes.count("serve") && g->nodes.count("h_fn") && g->nodes.count("inl_fn"));
  EXPECT_TRUE(g->nodes.at("h_fn").header);
  EXPECT_TRUE(g->nodes.at("inl_fn").header);
  EXPECT_FALSE(g->nodes.at("serve").header);
}

// What a build ahead weighs (iterate/prebuild.h): a body's size, and what
// its loops call. Loops of every kind count, a call in a loop's condition
// too; a call through a pointer in a loop is said as such.
TEST(CallGraph, EachFunctionHasItsSizeAndWhatItsLoopsCall) {
  vprof::test::TestTree t;
  t.add("k.c",
        "static unsigned rd(const unsigned char *p) { return p[0] | p[1] << 8; }\n"
        "static int more(int i) { return i < 4; }\n"
        "unsigned sum(const unsigned char *p, int n) {\n"
        "  unsigned s = rd(p);\n"
        "  for (int i = 0; i < n; i += 2) s += rd(p + i);\n"
        "  int j = 0; while (more(j)) ++j;\n"
        "  return s + j;\n"
        "}\n"
        "void each(void (*f)(int), int n) { do f(n); while (--n > 0); }\n"
        "int fsync(int);\n"
        "int sync_log(int fd) { return fsync(fd) + more(fd); }\n");
  t.compile("k.c", "-std=c99");
  CallGraphOptions o;
  o.build_dir = t.build();
  o.whole_tree = true;
  auto g = build_callgraph(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  const CallGraphNode &rd = g->nodes.at("rd"), &sum = g->nodes.at("sum"), &each = g->nodes.at("each");
  EXPECT_GT(rd.size, 5u);
  EXPECT_LT(rd.size, 24u) << "a one-line function is tiny at the default";
  EXPECT_GT(sum.size, 2 * rd.size);
  EXPECT_TRUE(rd.loop_callees.empty());
  EXPECT_EQ(sum.loop_callees, (std::set<std::string>{"more", "rd"}));
  EXPECT_EQ(sum.callees, (std::set<std::string>{"more", "rd"}));
  EXPECT_FALSE(sum.loops_call_pointers);
  EXPECT_TRUE(each.loops_call_pointers);
  EXPECT_TRUE(each.loop_callees.empty());
  // Callees whose body the unit cannot see: fsync's; more's is in the unit.
  EXPECT_EQ(g->nodes.at("sync_log").opaque_callees, (std::set<std::string>{"fsync"}));
  EXPECT_TRUE(sum.opaque_callees.empty());
}

// What a pointer or virtual call may reach (a build ahead follows it,
// iterate/session.cc, reach_of): the tree's functions whose address its code
// takes as the call's type, in another file too, or cast to it (PostgreSQL's
// (ExecScanAccessMtd) IndexNext); a method's overriders. Not edges for
// heights.
TEST(CallGraph, PointerCallsReachTheFunctionsTakenAsTheirType) {
  vprof::test::TestTree t;
  t.add("exec.c",
        "typedef struct Node Node;\n"
        "typedef int (*ExecMtd)(Node *);\n"
        "struct Node { ExecMtd exec; };\n"
        "int exec_scan(Node *n);\n"
        "int exec_join(Node *n);\n"
        "int exec_proc(Node *n) { return n->exec(n); }\n"
        "int apply(long (*f)(long), long x) { return (int)f(x); }\n"
        "void init(Node *n, int join) { n->exec = join ? exec_join : exec_scan; }\n");
  t.add("nodes.c",
        "typedef struct Node Node;\n"
        "int exec_scan(Node *n) { return n != 0; }\n"
        "struct Other { int x; };\n"
        "static int index_next(struct Other *o) { return o->x; }\n"
        "typedef int (*AccessMtd)(Node *);\n"
        "AccessMtd access(void) { return (AccessMtd)index_next; }\n"
        "int exec_join(Node *n) { return n == 0; }\n"
        "int not_taken(Node *n) { return 2; }\n");
  t.add("v.cc",
        "struct Base { virtual int run(int x) { return x; } virtual ~Base() = default; };\n"
        "struct Fast : Base { int run(int x) override { return x + 1; } };\n"
        "struct Slow : Fast { int run(int x) override { return x + 2; } };\n"
        "int drive(Base &b) { return b.run(1); }\n"
        "int drive_fast(Fast &f) { return f.run(2); }\n");
  t.compile("exec.c", "-std=c99");
  t.compile("nodes.c", "-std=c99");
  t.compile("v.cc", "-std=c++17");
  CallGraphOptions o;
  o.build_dir = t.build();
  o.whole_tree = true;
  auto g = build_callgraph(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->nodes.at("exec_proc").pointer_callees,
            (std::set<std::string>{"exec_join", "exec_scan", "index_next"}));
  EXPECT_TRUE(g->nodes.at("exec_proc").callees.empty());
  EXPECT_TRUE(g->nodes.at("apply").pointer_callees.empty()) << "no function of its type is taken";
  EXPECT_EQ(g->nodes.at("drive").pointer_callees, (std::set<std::string>{"Base::run", "Fast::run", "Slow::run"}));
  EXPECT_EQ(g->nodes.at("drive_fast").pointer_callees, (std::set<std::string>{"Fast::run", "Slow::run"}));
  CallGraph whole = *g;
  auto below = graph_below(whole.nodes, "exec_proc");
  ASSERT_TRUE(below.ok()) << below.error().message;
  EXPECT_EQ(below->height, 0) << "pointer callees are no edges for heights";
  EXPECT_EQ(callgraph_json(*g)["functions"].size(), g->nodes.size());
}

// Every field of every node, for comparing two graphs whole.
std::string everything(const CallGraph &g) {
  auto list = [](const std::set<std::string> &xs) {
    std::string s;
    for (const auto &x : xs) s += x + ",";
    return s;
  };
  std::string out;
  for (const auto &[name, n] : g.nodes)
    out += name + " " + n.name + " " + n.file + ":" + std::to_string(n.line) + " h" + std::to_string(n.header) +
           " s" + std::to_string(n.size) + " files " + list(n.files) + " calls " + list(n.callees) + " loops " +
           list(n.loop_callees) + (n.loops_call_pointers ? " lp" : "") + " opaque " + list(n.opaque_callees) +
           " types " + list(n.pointer_types) + " virtual " + list(n.virtual_methods) + " reach " +
           list(n.pointer_callees) + "\n";
  return out;
}

CallGraph whole_graph(const vprof::test::TestTree &t, bool cache) {
  CallGraphOptions o;
  o.build_dir = t.build();
  o.whole_tree = true;
  o.cache = cache;
  o.jobs = 2;
  auto g = build_callgraph(o);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? *g : CallGraph{};
}

// A session reads the whole tree's graph at every start (468 s on MariaDB):
// a unit none of whose files changed is read from the cache, and the graph
// is the one a parse of every unit makes, pointer targets, headers and all.
// A change in a header parses again exactly the units that include it; a
// damaged entry is a miss; a tree vprof rewrote is read as it was fetched.
TEST(CallGraph, TheCacheGivesTheGraphAParseGivesAndAChangedFileIsParsedAgain) {
  vprof::test::TestTree t;
  t.add("node.h",
        "typedef struct Node Node;\n"
        "typedef int (*ExecMtd)(Node *);\n"
        "struct Node { ExecMtd exec; int n; };\n"
        "static inline int exec_node(Node *n) { return n->exec(n); }\n");
  t.add("exec.c",
        "#include \"node.h\"\n"
        "int exec_scan(Node *n);\n"
        "int exec_proc(Node *n) { int s = 0; for (int i = 0; i < n->n; ++i) s += exec_node(n); return s; }\n"
        "void init(Node *n) { n->exec = exec_scan; }\n");
  t.add("scan.c", "#include \"node.h\"\nint exec_scan(Node *n) { return n->n; }\n");
  t.add("v.cc",
        "struct Base { virtual int run(int x) { return x; } virtual ~Base() = default; };\n"
        "struct Fast : Base { int run(int x) override { return x + 1; } };\n"
        "int drive(Base &b) { return b.run(1); }\n");
  t.compile("exec.c", "-std=c99");
  t.compile("scan.c", "-std=c99");
  t.compile("v.cc", "-std=c++17");
  const std::string dir = t.build() + "/.vprof-cache/callgraph";

  const CallGraph parsed = whole_graph(t, false);
  EXPECT_FALSE(std::filesystem::exists(dir)) << "--no-cache writes nothing";
  ASSERT_TRUE(parsed.nodes.count("exec_node") && parsed.nodes.count("drive"));
  EXPECT_TRUE(parsed.nodes.at("exec_node").header);
  EXPECT_EQ(parsed.nodes.at("exec_node").pointer_callees, (std::set<std::string>{"exec_scan"}));
  EXPECT_EQ(parsed.nodes.at("drive").pointer_callees, (std::set<std::string>{"Base::run", "Fast::run"}));

  const CallGraph first = whole_graph(t, true);
  EXPECT_EQ(first.files_from_cache, 0u);
  EXPECT_EQ(everything(first), everything(parsed));
  const CallGraph second = whole_graph(t, true);
  EXPECT_EQ(second.files_parsed, 3u);
  EXPECT_EQ(second.files_from_cache, 3u);
  EXPECT_EQ(everything(second), everything(parsed));

  // The header's function calls another: exec.c and scan.c are parsed again.
  t.add("node.h",
        "typedef struct Node Node;\n"
        "typedef int (*ExecMtd)(Node *);\n"
        "struct Node { ExecMtd exec; int n; };\n"
        "int exec_scan(Node *n);\n"
        "static inline int exec_node(Node *n) { return n->exec == exec_scan ? exec_scan(n) : n->exec(n); }\n");
  const CallGraph changed = whole_graph(t, true);
  EXPECT_EQ(changed.files_from_cache, 1u) << "v.cc";
  EXPECT_EQ(changed.nodes.at("exec_node").callees, (std::set<std::string>{"exec_scan"}));
  EXPECT_EQ(everything(changed), everything(whole_graph(t, false)));

  size_t entries = 0;
  for (const auto &e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      vprof::test::spit(e.path().string(), "{\"files_read\": [[");
      ++entries;
    }
  EXPECT_EQ(entries, 3u);
  const CallGraph damaged = whole_graph(t, true);
  EXPECT_EQ(damaged.files_from_cache, 0u);
  EXPECT_EQ(everything(damaged), everything(changed));

  // Instrumented, every file counts by its original: all from the cache.
  vprof::instr::InstrumentOptions io;
  io.build_dir = t.build();
  io.functions = {"exec_proc", "exec_node", "drive"};
  auto r = vprof::instr::instrument(io);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(vprof::test::slurp(t.path("node.h")).find("vprof"), std::string::npos);
  const CallGraph instrumented = whole_graph(t, true);
  EXPECT_EQ(instrumented.files_from_cache, 3u);
  EXPECT_EQ(everything(instrumented), everything(changed));
  EXPECT_TRUE(vprof::instr::restore({t.build()}).ok());
}

// A cache directory another user could write in steers what vprof reads and
// where it writes: a link there (planted, or made by the tree's owner for
// root's run) is neither read nor written through, and the graph is parsed.
TEST(CallGraph, ACacheDirectoryThatIsALinkIsNeitherReadNorWritten) {
  vprof::test::TestTree t;
  t.add("a.c", "int leaf(int x) { return x; }\nint top(int x) { return leaf(x) + 1; }\n");
  t.compile("a.c", "-std=c99");
  const std::string elsewhere = t.build() + "/elsewhere";
  std::filesystem::create_directories(elsewhere);
  std::filesystem::create_directories(t.build() + "/.vprof-cache");
  std::filesystem::create_directory_symlink(elsewhere, t.build() + "/.vprof-cache/callgraph");
  for (int i = 0; i < 2; ++i) {
    const CallGraph g = whole_graph(t, true);
    EXPECT_EQ(g.files_from_cache, 0u);
    EXPECT_EQ(g.nodes.at("top").callees, (std::set<std::string>{"leaf"}));
  }
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere)) << "nothing written through the link";
}

}  // namespace
