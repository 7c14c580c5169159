// What a call site's node holds when the site's wrapper outlasts the call:
// the scope form (a class prvalue kept out of a closure, `s = f()`) ends with
// the full expression, so the caller's code after the call runs inside it.
// The manifest says so (to_full_expression); a function entered there, after
// the callee returned, is the caller's call, not a second callee of the site.
#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

// run(1) calls append(2) at site 6 for a[i] ns; the result is then assigned
// by assign(3), b[i] ns, before the site's end; 1 ns of run's own before the
// site and after it.
std::unique_ptr<RunAnalysis> assigned_result(bool to_full_expression) {
  const int64_t a[] = {10, 30, 20, 40}, b[] = {5, 5, 9, 1};
  TraceBuilder tb;
  for (int i = 0; i < 4; ++i) {
    const int64_t t = i * 1000, ret = t + 1 + a[i], end = ret + b[i];
    tb.thread(1).begin(t, i + 1).enter(t, 1).site(t + 1, 6).enter(t + 1, 2).exit(ret, 2).enter(ret, 3)
        .exit(end, 3).site_end(end, 6).exit(end + 1, 1).end(end + 1, i + 1);
  }
  Names names = make_names({{1, "run"}, {2, "append"}, {3, "assign"}}, {{6, 1, "append", 60}});
  names.sites[6].to_full_expression = to_full_expression;
  names.schema_version = 2;
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  return analyze_run(tb.build(), names, opt, 0).value();
}

TEST(CallSite, AFunctionEnteredAfterAScopeFormCallReturnedIsTheCallersCall) {
  auto r = assigned_result(true);
  EXPECT_EQ(r->merge.callee_mismatches, 0u);
  // The site is append's call alone: a = {10,30,20,40}, mean 25, Var 500/3.
  const VarNode *site = find_label(r->tree, "append (t.cc:60)");
  ASSERT_NE(site, nullptr);
  EXPECT_NEAR(site->value_ns2, 500.0 / 3, 1e-9);
  EXPECT_EQ(find_label(*site, "assign"), nullptr);
  // assign is run's: b = {5,5,9,1}, mean 5, Var (0+0+16+16)/3.
  const VarNode *assign = find_label(r->tree, "assign");
  ASSERT_NE(assign, nullptr);
  EXPECT_NEAR(assign->value_ns2, 32.0 / 3, 1e-9);
}

// Without the manifest's word the same records are what they were: a named
// call that entered a second function, which its callee cannot have done.
TEST(CallSite, WithoutTheManifestsWordASecondFunctionInANamedCallIsAMismatch) {
  auto r = assigned_result(false);
  EXPECT_GT(r->merge.callee_mismatches, 0u);
}

}  // namespace
}  // namespace vprof::testing
