// A build ahead's bodies written twice (edit_plan.cc, two_versions).
// Between windows a body runs its original copy while the thread does not
// record, so that it costs one test there, except a body with a static
// local (both copies would run in one process), the root and a caller of
// the interval API (their frames are needed from their entry). The program
// runs under windowed recording; its output is the original's, and every
// counted interval holds its root's frame whole, its two leaf calls beneath.
// And the probes of the instrumented copy test no dormant bit (VPROF_LIVE):
// that copy runs only when its function is on.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "analyzer/names/names.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "instrumenter/instrument.h"
#include "test_tree.h"

namespace fs = std::filesystem;
using vprof::test::shell;
using vprof::test::slurp;

namespace {

// serve() begins and ends each interval around root(), which calls leaf()
// twice; tally() counts the leaves' calls in a static local.
const char *kProgram =
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "#include <vprof/vprof.h>\n"
    "static volatile unsigned long sink;\n"
    "static void spin(int n) { int k; for (k = 0; k < n; ++k) sink += k; }\n"
    "int tally(void) { static int calls; return ++calls; }\n"
    "int leaf(int i) { spin(4000 + (i % 5) * 2000); return tally(); }\n"
    "int root(int i) { return leaf(i) + leaf(i + 1); }\n"
    "void serve(uint64_t id) { vprof_interval_begin(id); root((int)id); vprof_interval_end(id); }\n"
    "int main(void) {\n"
    "  uint64_t i;\n"
    "  for (i = 1; i <= 4000; ++i) serve(i);\n"
    "  printf(\"%d\\n\", tally());\n"
    "  return 0;\n"
    "}\n";

}  // namespace

TEST(WindowSwitch, BodiesRunTheirOriginalBetweenWindowsButTheRootsAndStatics) {
  vprof::test::TestTree tree;
  tree.add("w.c", kProgram);
  tree.compile("w.c", std::string("-std=c99 -I") + VPROF_INCLUDE_DIR);
  vprof::instr::InstrumentOptions o;
  o.build_dir = tree.build();
  o.functions = {"tally", "leaf", "root", "serve"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.dormant = true;
  o.root = "root";
  o.excluded_dirs = {VPROF_INCLUDE_DIR};
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string text = slurp(tree.path("w.c"));
  // Which test each body's entry makes, by its id in the manifest.
  const nlohmann::json m = nlohmann::json::parse(slurp(r->manifest_path));
  for (const auto &f : m.at("functions")) {
    const std::string name = f.at("name").get<std::string>();
    const uint64_t id = f.at("id").get<uint64_t>();
    const bool plain = text.find("if (vprof_fn_runs_plain(" + std::to_string(id) + "))") != std::string::npos,
               dormant = text.find("if (vprof_fn_is_dormant(" + std::to_string(id) + "))") != std::string::npos;
    EXPECT_EQ(plain, name == "leaf") << name << "\n" << text;
    EXPECT_EQ(dormant, name != "leaf") << name << "\n" << text;
  }
  std::string log;
  ASSERT_EQ(shell("cd " + tree.src() + " && " TEST_CC " -std=c99 -O1 -Wall -isystem " VPROF_INCLUDE_DIR
                  " w.c -o inst -L" VPROF_LIB_DIR " -Wl,-rpath," VPROF_LIB_DIR " -lvprof",
                  &log),
            0)
      << log << "\n" << text;
  // Windows of 1 ms over 25% of the time (one each 4 ms) over 4 000
  // intervals of 10-30 us: 10 or more windows where 2 ms ones opened only
  // twice in some runs beside another test.
  const std::string trace = tree.root() + "/trace";
  fs::create_directories(trace);
  std::string out;
  ASSERT_EQ(shell("VPROF_SAMPLE=25 VPROF_SAMPLE_WINDOW_MS=1 VPROF_SAMPLE_CAP_MS=5000 VPROF_TRACE_DIR=" + trace + " " +
                      tree.src() + "/inst",
                  &out),
            0)
      << out;
  EXPECT_EQ(out, "8001\n") << "one static, whichever copy ran";

  auto t = vprof::trace::read_trace_dir(trace);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto names = vprof::analyzer::load_manifest(r->manifest_path);
  ASSERT_TRUE(names.ok()) << names.error().message;
  vprof::analyzer::AnalyzeOptions ao;
  ao.factors.bootstrap = 0;
  ao.root = "root";
  auto a = vprof::analyzer::analyze_run(*t, *names, ao, 0);
  ASSERT_TRUE(a.ok()) << a.error().message;
  const auto &run = **a;
  ASSERT_TRUE(run.merge_stats.sampling.sampled);
  EXPECT_GE(run.merge_stats.sampling.windows, 3u);
  const size_t counted = run.paths.rows.size();
  EXPECT_GT(counted, 0u);
  EXPECT_LT(counted, 4000u) << "windows";
  EXPECT_EQ(counted + vprof::analyzer::intervals_left_out(run), 4000u);
  EXPECT_EQ(run.merge.exits_without_enter, 0u);
  EXPECT_EQ(run.merge.window_frames_lost, 0u);
  EXPECT_EQ(run.merge.window_pops_unmatched, 0u);
  // Each counted interval: root's frame, and leaf's two calls beneath it.
  const uint32_t root_id = names->function_id("root"), leaf_id = names->function_id("leaf");
  size_t whole = 0;
  for (size_t row = 0; row < counted; ++row) {
    bool in_root = false;
    std::set<uint32_t> leaf_sites;
    for (const auto *c = run.paths.row_begin(row); c != run.paths.row_end(row); ++c)
      for (uint32_t n = c->node; n != 0; n = run.trie[n].parent) {
        const auto &node = run.trie[n];
        using vprof::analyzer::FrameKind;
        // A callee's frame reads as the site that called it (folded).
        in_root |= (node.kind == FrameKind::Function && node.id == root_id) ||
                   (node.kind == FrameKind::Site && node.callee_fn == root_id);
        if (node.kind == FrameKind::Site && node.callee_fn == leaf_id) leaf_sites.insert(node.id);
      }
    whole += in_root && leaf_sites.size() == 2;
  }
  EXPECT_EQ(whole, counted) << "intervals whose root and both leaf calls were recorded";
  // Each counted interval's leaves ran their instrumented copy.
  size_t leaf_enters = 0;
  for (const auto &th : t->threads)
    for (const auto &e : th.events) leaf_enters += e.kind == vprof::trace::Kind::FuncEnter && e.arg == leaf_id;
  EXPECT_GE(leaf_enters, 2 * counted);
  EXPECT_LT(leaf_enters, 2u * 4000u);
}

// The instrumented copy's call site records when its function is on, though
// the dormant list names the site; a body written once (a label) tests the
// site's own bit.
TEST(WindowSwitch, TheInstrumentedCopysProbesTestNoDormantBit) {
  vprof::test::TestTree tree;
  tree.add("l.c",
           "#include <stdio.h>\n"
           "int leaf(int i) { return i * 2; }\n"
           "int twice(int i) { return leaf(i) + 1; }\n"
           "int once(int i) { if (i < 0) goto out; i = leaf(i); out: return i; }\n"
           "int main(void) { int s = 0, i; for (i = 0; i < 10; ++i) s += twice(i) + once(i); printf(\"%d\\n\", s); "
           "return 0; }\n");
  tree.compile("l.c", "-std=c99");
  vprof::instr::InstrumentOptions o;
  o.build_dir = tree.build();
  o.functions = {"twice", "once"};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.dormant = true;
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string text = slurp(tree.path("l.c"));
  const nlohmann::json m = nlohmann::json::parse(slurp(r->manifest_path));
  std::map<std::string, uint64_t> fn;
  for (const auto &f : m.at("functions")) fn[f.at("name").get<std::string>()] = f.at("id").get<uint64_t>();
  std::map<uint64_t, std::string> site_of;  // site id -> its function
  std::string dormant;
  for (const auto &c : m.at("call_sites")) {
    const uint64_t id = c.at("id").get<uint64_t>(), in = c.at("function_id").get<uint64_t>();
    site_of[id] = in == fn["twice"] ? "twice" : "once";
    dormant += "s " + std::to_string(id) + "\n";
  }
  ASSERT_EQ(site_of.size(), 2u) << text;
  EXPECT_NE(text.find("VPROF_LIVE(" + std::to_string(fn["twice"]) + ")"), std::string::npos) << text;
  EXPECT_EQ(text.find("VPROF_LIVE(" + std::to_string(fn["once"]) + ")"), std::string::npos) << text;
  std::string log;
  ASSERT_EQ(shell("cd " + tree.src() + " && " TEST_CC " -std=c99 -O2 -Wall -isystem " VPROF_INCLUDE_DIR
                  " l.c -o inst -L" VPROF_LIB_DIR " -Wl,-rpath," VPROF_LIB_DIR " -lvprof",
                  &log),
            0)
      << log << "\n" << text;
  std::ofstream(tree.root() + "/dormant.txt") << dormant;
  const std::string trace = tree.root() + "/trace";
  fs::create_directories(trace);
  std::string out;
  ASSERT_EQ(shell("VPROF_DORMANT=" + tree.root() + "/dormant.txt VPROF_TRACE_DIR=" + trace + " " + tree.src() + "/inst",
                  &out),
            0)
      << out;
  EXPECT_EQ(out, "190\n");
  auto t = vprof::trace::read_trace_dir(trace);
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::map<std::string, uint64_t> calls, enters;
  for (const auto &th : t->threads)
    for (const auto &e : th.events) {
      if (e.kind == vprof::trace::Kind::SiteEnd) calls[site_of[e.arg]] += std::max<uint64_t>(1, e.type_label);
      if (e.kind == vprof::trace::Kind::FuncEnter) ++enters[e.arg == fn["twice"] ? "twice" : "once"];
    }
  EXPECT_EQ(enters["twice"], 10u);
  EXPECT_EQ(enters["once"], 10u);
  EXPECT_EQ(calls["twice"], 10u) << "on with its function";
  EXPECT_EQ(calls["once"], 0u) << "its own bit";
}
