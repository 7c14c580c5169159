// The recorder's own pauses (trace format v5, RECORDER records): the time the
// runtime spent on the program's thread making its file or switching its ring
// is a (recorder) leaf under the node the thread was in, as (preempted) is,
// and no function's factor carries it. Every number is worked out above its
// test.
#include <gtest/gtest.h>

#include <functional>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace vprof::testing {
namespace {

using analyzer::StackTrie;
constexpr auto Fn = FrameKind::Function;
constexpr auto Pre = FrameKind::Preempted;
constexpr auto Rec = FrameKind::Recorder;

TEST(Recorder, APauseInAFileIsItsOwnLeafAndAPreemptionInsideItIsNotCountedTwice) {
  // F(1) over [110, 400); the ring switched at F's entry, a pause of 40 ns
  // from its time: [110, 150). Preempted over [120, 130) (inside the pause:
  // the recorder's already) and [200, 250), both drained at the end (500).
  // F 290 - 40 - 50 = 200, F > (recorder) 40, F > (preempted) 50, outside
  // [100, 110) and [400, 500): 110.
  std::string dir = fresh_dir("vprof-recorder", "read");
  SynthThread t(dir, 1, 11);
  t.interval_begin(100, 7);
  t.fn_enter(110, 1);
  t.raw((uint64_t{110} << VPROF_TS_SHIFT) | VPROF_K_RECORDER, 40);
  t.fn_exit(400, 1);
  for (auto [out, in] : {std::pair<uint64_t, uint64_t>{120, 130}, {200, 250}}) {
    t.raw((uint64_t{500} << VPROF_TS_SHIFT) | VPROF_K_PREEMPTED, out);
    t.raw(in, 0);
  }
  t.interval_end(500, 7);
  t.close();
  auto tr = trace::read_trace_dir(dir);
  ASSERT_TRUE(tr.ok());
  EXPECT_EQ(tr->count(trace::Severity::Error), 0u);
  EXPECT_EQ(tr->count(trace::Severity::Warning), 0u);
  const trace::Event *rec = nullptr;
  for (const auto &e : tr->threads.at(0).events)
    if (e.kind == trace::Kind::Recorder) rec = &e;
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->ts, 110);
  EXPECT_EQ(rec->release_ts, 110);
  EXPECT_EQ(rec->arg, 150u);
  auto tl = analyzer::compute_critical_paths(*tr);
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 1}})), 200);
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 1}, {Rec, 0}})), 40);
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{Fn, 1}, {Pre, 0}})), 50);
  EXPECT_EQ(leaf_ns(tl.paths, 0, StackTrie::kRoot), 110);
  EXPECT_EQ(tl.paths.counters.tiling_violations, 0u);
}

TEST(Recorder, APreemptionDrainedAfterAPauseGoesInItsPlaceBeforeIt) {
  // F(1) over [5, 35); the recorder paused it over [20, 30); a preemption
  // over [8, 14), drained at the end (40), lies before the pause in time.
  // F 30 - 10 - 6 = 14, F > (recorder) 10, F > (preempted) 6, outside 10.
  TraceBuilder tb;
  auto &t = tb.thread(1).begin(0, 9).enter(5, 1).recorder(20, 30).exit(35, 1);
  t.preempted(40, 8, 14);
  t.end(40, 9);
  auto tl = analyzer::compute_critical_paths(tb.build());
  const auto &cp = tl.paths;
  ASSERT_EQ(cp.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}})), 14);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Rec, 0}})), 10);
  EXPECT_EQ(leaf_ns(cp, 0, node_of(tl.trie, {{Fn, 1}, {Pre, 0}})), 6);
  EXPECT_EQ(leaf_ns(cp, 0, StackTrie::kRoot), 10);
  EXPECT_EQ(cp.counters.tiling_violations, 0u);
}

TEST(Recorder, AFunctionsFactorDoesNotCarryTheRecordersPauses) {
  // F(1) runs 30 ns of its own in every interval, G(2) 5 + i % 2 ns; the
  // recorder pauses F for 0, 200, 0, 400, ... ns on top (a ring switch in
  // every other interval). F's factor, less its (recorder) leaf, is
  // constant: share 0. The tree shows the pauses as (recorder).
  using namespace vprof::analyzer;
  TraceBuilder tb;
  for (int i = 0; i < 8; ++i) {
    int64_t t = i * 10000, p = (i % 2) * 100 * (i + 1);
    auto &th = tb.thread(1).begin(t, i + 1).enter(t + 5, 1);
    if (p) th.recorder(t + 10, t + 10 + p);
    th.exit(t + 35 + p, 1).enter(t + 35 + p, 2).exit(t + 40 + p + i % 2, 2)
        .end(t + 40 + p + i % 2, i + 1);
  }
  AnalyzeOptions opt;
  opt.factors.d = 0.0;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), Names{}, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *f = nullptr;
  for (const auto &x : a->factors) {
    EXPECT_NE(x.name, "fn#1 (body)") << "beside only (recorder) it is fn#1 itself";
    EXPECT_EQ(x.name.find("recorder"), std::string::npos) << "(recorder) is no factor";
    if (x.name == "fn#1") f = &x;
  }
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->share, 0.0, 1e-12);
  const VarNode *rec = nullptr;
  std::function<void(const VarNode &)> find = [&](const VarNode &n) {
    if (n.label == "(recorder)") rec = &n;
    for (const VarNode &c : n.children) find(c);
  };
  find(a->tree);
  ASSERT_NE(rec, nullptr) << "the tree shows the pauses";
  EXPECT_GT(rec->share.value_or(0.0), 0.9);
}

}  // namespace
}  // namespace vprof::testing
