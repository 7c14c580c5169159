// suggest() on hand-made analyses: what iterate decides for each selected
// factor (METHOD §6), here the case found by the mutual-recursion shape under
// load: a broken-down function outranks its own parts, which are then not
// listed (nested factors are listed once), and the session stopped on
// "already broken down: its parts are ranked on their own" with no part
// ranked at all.
#include <gtest/gtest.h>

#include "iterate/decide.h"

using namespace vprof;

namespace {

analyzer::Factor factor(const std::string &name, const std::string &fn, double share, int rank,
                        const std::string &nested_with = "") {
  analyzer::Factor f;
  f.name = name;
  f.functions = {fn};
  f.share = f.contribution = share;
  f.rank = rank;
  f.nested_with = nested_with;
  return f;
}

}  // namespace

TEST(Decide, Case13_ABrokenDownFunctionThatOutranksItsPartsHasItsFirstPartDecided) {
  analyzer::Analysis a;
  a.factors.push_back(factor("parse_expr", "parse_expr", 0.998, 1));
  a.factors.push_back(factor("parse_expr (body)", "parse_expr", 0.01, 0, "parse_expr"));
  a.factors.push_back(factor("(preempted)", "(preempted)", 0.2, 0, "parse_expr"));
  a.factors.push_back(factor("parse_term (uninstrumented part)", "parse_term", 0.679, 0, "parse_expr"));
  a.factors.push_back(factor("busy", "busy", 0.05, 0, "parse_expr"));
  iterate::State s;
  s.broken_down.push_back({"parse_expr", {"step"}, 2});
  auto out = iterate::suggest(a, s, 0.5, [](const std::string &f) {
    return f == "parse_term" ? std::string() : std::string("no calls in its body to break down");
  });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].factor, "parse_expr");
  EXPECT_FALSE(out[0].break_down);
  EXPECT_EQ(out[1].factor, "parse_term (uninstrumented part)");
  EXPECT_TRUE(out[1].break_down);
  EXPECT_EQ(out[1].functions, std::vector<std::string>{"parse_term"});
  EXPECT_NE(out[1].reason.find("a part of parse_expr"), std::string::npos) << out[1].reason;

  // Its body holding at least m: explained, and nothing more to decide.
  a.factors[1].contribution = 0.9;
  out = iterate::suggest(a, s, 0.5, [](const std::string &) { return std::string(); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].reason.find("its body holds"), std::string::npos) << out[0].reason;
}
