// PREEMPTED records (trace format v2) through the reader: the stretch is
// kept aside on the record's event and the thread's clock never moves back
// to it; a damaged stretch (inverted, or after its own record) changes nothing.
#include <gtest/gtest.h>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/read/trace_reader.h"
#include "tests/analyzer/test_util.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace vprof::testing {
namespace {

using trace::Kind;

void preempted(SynthThread &t, uint64_t drained, uint64_t out, uint64_t in) {
  t.raw((drained << VPROF_TS_SHIFT) | VPROF_K_PREEMPTED, out);
  t.raw(in, 0);  // extension slot: no kind byte of its own
}

TEST(PreemptedRead, TheStretchIsDecodedBesideTheThreadsClock) {
  std::string dir = fresh_dir("vprof-preempted", "read");
  SynthThread t(dir, 1, 11);
  t.interval_begin(100, 7);
  t.fn_enter(110, 1);
  t.fn_exit(400, 1);
  preempted(t, 500, 150, 200);   // drained at the interval's end
  preempted(t, 500, 300, 250);   // inverted: damage, kept as nothing
  t.interval_end(500, 7);
  t.close();
  auto tr = trace::read_trace_dir(dir);
  ASSERT_TRUE(tr.ok());
  EXPECT_EQ(tr->count(trace::Severity::Error), 0u);
  EXPECT_EQ(tr->count(trace::Severity::Warning), 0u) << "no clamp: the stretch is in the past";
  const auto &ev = tr->threads.at(0).events;
  std::vector<const trace::Event *> pre;
  for (const auto &e : ev)
    if (e.kind == Kind::Preempted) pre.push_back(&e);
  ASSERT_EQ(pre.size(), 2u);
  EXPECT_EQ(pre[0]->ts, 500);
  EXPECT_EQ(pre[0]->release_ts, 150);
  EXPECT_EQ(pre[0]->arg, 200u);
  EXPECT_EQ(pre[1]->release_ts, int64_t(pre[1]->arg)) << "the inverted one is empty";
  // Walked: F(1) over [110, 400) less [150, 200) preempted; outside 10 + 100.
  auto tl = analyzer::compute_critical_paths(*tr);
  ASSERT_EQ(tl.paths.rows.size(), 1u);
  EXPECT_EQ(leaf_ns(tl.paths, 0, node_of(tl.trie, {{FrameKind::Function, 1}})), 240);
  EXPECT_EQ(leaf_ns(tl.paths, 0,
                    node_of(tl.trie, {{FrameKind::Function, 1}, {FrameKind::Preempted, 0}})),
            50);
  EXPECT_EQ(leaf_ns(tl.paths, 0, analyzer::StackTrie::kRoot), 110);
}

}  // namespace
}  // namespace vprof::testing
