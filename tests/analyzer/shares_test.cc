// Covariance shares (docs/method.md, "The variance tree"):
// share(X) = Cov(X, L)/Var(L). They add up over any tiling, a function over its
// call sites is the sum of them, and factors are ranked by share × specificity.
#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "tests/analyzer/test_util.h"
#include "tests/analyzer/trace_builder.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

const Factor *by_name(const Analysis &a, const std::string &n) {
  for (const auto &f : a.factors)
    if (f.name == n) return &f;
  return nullptr;
}

// R(1) reads then writes one hot row: the wait W (heavy, 100-5000 ns) lands in
// the read's lock_row (site 1) or in the write's (site 2), never both; each
// site also does 10 ns of its own work. A constant 3 ns body, and S(3) through
// site 3 with a small independent time.
struct LockTrace {
  trace::Trace trace;
  std::vector<double> s1, s2, s3, l;
};

LockTrace lock_trace(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> wait(100, 5000), small(0, 20), coin(0, 1);
  LockTrace out;
  TraceBuilder tb;
  for (int i = 0; i < n; ++i) {
    int64_t w = wait(rng), a = 10, b = 10;
    (coin(rng) ? a : b) += w;
    int64_t c = small(rng), t = int64_t(i) * 100000;
    auto &th = tb.thread(1);
    th.begin(t, i + 1).enter(t, 1).call(t + 1, t + 1 + a, 1, 2);
    int64_t u = t + 1 + a;
    th.call(u + 1, u + 1 + b, 2, 2);
    u += 1 + b;
    th.call(u + 1, u + 1 + c, 3, 3);
    u += 1 + c;
    th.exit(u, 1).end(u, i + 1);
    out.s1.push_back(double(a));
    out.s2.push_back(double(b));
    out.s3.push_back(double(c));
    out.l.push_back(double(3 + a + b + c));
  }
  out.trace = tb.build();
  return out;
}

Names lock_names() {
  return make_names({{1, "R"}, {2, "lock_row"}, {3, "S"}},
                    {{1, 1, "lock_row", 10}, {2, 1, "lock_row", 20}, {3, 1, "S", 30}});
}

double cov(const std::vector<double> &x, const std::vector<double> &y) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= double(x.size());
  my /= double(y.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (x[i] - mx) * (y[i] - my);
  return s / double(x.size() - 1);
}

TEST(Shares, AntiCorrelatedCallSitesReadAsTheirSum) {
  LockTrace t = lock_trace(2000, 5);
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t.trace, lock_names(), opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const double var_l = cov(t.l, t.l);
  const double share1 = cov(t.s1, t.l) / var_l, share2 = cov(t.s2, t.l) / var_l;
  // The paper's terms: each site's variance exceeds half of Var(L) and their
  // covariance is strongly negative, the numbers users found unreadable.
  const VarNode *n1 = find_label(a->tree, "lock_row (t.cc:10)");
  const VarNode *n2 = find_label(a->tree, "lock_row (t.cc:20)");
  ASSERT_TRUE(n1 && n2);
  EXPECT_GT(n1->contribution + n2->contribution, 1.5);
  EXPECT_NEAR(*n1->share, share1, 1e-9);
  EXPECT_NEAR(*n2->share, share2, 1e-9);
  const Factor *f = by_name(*a, "lock_row");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->share, share1 + share2, 1e-9);
  EXPECT_NEAR(f->share, cov([&] {
                auto s = t.s1;
                for (size_t i = 0; i < s.size(); ++i) s[i] += t.s2[i];
                return s;
              }(), t.l) / var_l, 1e-9);
  EXPECT_GT(f->share, 0.9);
  EXPECT_LE(f->share, 1.0 + 1e-12);
  EXPECT_EQ(f->rank, 1);
  // No factor reads above 100%, and none is a covariance.
  for (const auto &g : a->factors) {
    EXPECT_FALSE(g.covariance) << g.name;
    EXPECT_LE(g.share, 1.0 + 1e-12) << g.name;
  }
  // Shares of the root's parts tile Var(L): they add up to 1.
  EXPECT_NEAR(children_share(a->tree), 1.0, 1e-9);
}

TEST(Shares, PaperModeKeepsTheTermsAndCovarianceFactors) {
  LockTrace t = lock_trace(500, 6);
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  opt.factors.paper = true;
  opt.factors.k = 10;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t.trace, lock_names(), opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *f = by_name(*a, "lock_row");
  const Factor *c = by_name(*a, "cov(lock_row, lock_row)");
  ASSERT_TRUE(f && c);
  EXPECT_GT(f->contribution, 1.0);
  EXPECT_LT(c->contribution, -0.5);
  // Every var and 2cov term below R once: they tile Var(R) = Var(L). Terms
  // under 0.01% of Var(L) are no factors: each node sums them into one
  // "other pairs" term, which is counted here instead.
  double sum = 0, folded = 0;
  for (const auto &g : a->factors) sum += g.name == "R" ? 0.0 : g.contribution;
  std::function<void(const VarNode &)> others = [&](const VarNode &n) {
    for (const VarNode &ch : n.children) {
      if (ch.kind == VarNode::Kind::Cov && ch.factor.empty()) {
        EXPECT_EQ(ch.label.rfind("cov(the other ", 0), 0u) << ch.label;
        folded += ch.contribution;
      }
      others(ch);
    }
  };
  others(a->tree);
  EXPECT_LT(std::abs(folded), 1e-3);
  EXPECT_NEAR(sum + folded, 1.0, 1e-9);
}

TEST(Shares, BootstrapWidthOfAShareMatchesTheDeltaMethod) {
  // share = Cov(B, L)/Var(L); its influence function is
  // ((b−b̄)(l−l̄) − C − s·((l−l̄)² − V)) / V, standard error sqrt(Σ IF²)/n. The
  // bootstrap's 95% interval should be about 2·1.96 of that wide (fixed seed).
  LockTrace t = lock_trace(2000, 7);
  const size_t n = t.l.size();
  // The factor lock_row is the sum over both sites: b = s1 + s2.
  std::vector<double> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = t.s1[i] + t.s2[i];
  double ml = 0, mb = 0;
  for (size_t i = 0; i < n; ++i) ml += t.l[i] / double(n), mb += b[i] / double(n);
  double v = 0, c = 0;
  for (size_t i = 0; i < n; ++i) {
    v += (t.l[i] - ml) * (t.l[i] - ml) / double(n);
    c += (b[i] - mb) * (t.l[i] - ml) / double(n);
  }
  const double sb = c / v;
  double if2 = 0;
  for (size_t i = 0; i < n; ++i) {
    double f = ((b[i] - mb) * (t.l[i] - ml) - c - sb * ((t.l[i] - ml) * (t.l[i] - ml) - v)) / v;
    if2 += f * f;
  }
  const double seb = std::sqrt(if2) / double(n);
  AnalyzeOptions opt;
  opt.factors.bootstrap = 200;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(t.trace, lock_names(), opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *f = by_name(*a, "lock_row");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->ci95.has_value());
  EXPECT_NEAR(f->share, sb, 1e-9);
  double width = f->ci95->second - f->ci95->first;
  EXPECT_GT(width, 0.75 * 2 * 1.96 * seb) << "se " << seb;
  EXPECT_LT(width, 1.3 * 2 * 1.96 * seb) << "se " << seb;
  EXPECT_LT(f->ci95->first, sb);
  EXPECT_GT(f->ci95->second, sb);
}


TEST(Shares, NestedFactorsAreSelectedOnceSoTheListAddsUpToAtMostTheWhole) {
  // R(1) calls A(2) (site 1), A calls B(3) (site 2) and does nothing else;
  // R then calls C(4) (site 3). B = all of A's variation; C smaller and
  // independent. B ranks first (deepest); A contains B (same share) and is
  // not listed again; C is. The selected shares are disjoint parts of Var(L).
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> ub(0, 2000), uc(0, 300);
  TraceBuilder tb;
  for (int i = 0; i < 500; ++i) {
    int64_t t = int64_t(i) * 10000, b = ub(rng), c = uc(rng);
    auto &th = tb.thread(1);
    th.begin(t, i + 1).enter(t, 1).site(t + 1, 1).enter(t + 1, 2).call(t + 1, t + 1 + b, 2, 3);
    int64_t e = t + 1 + b;
    th.exit(e, 2).site_end(e, 1).call(e, e + c, 3, 4).exit(e + c, 1).end(e + c, i + 1);
  }
  Names names = make_names({{1, "R"}, {2, "A"}, {3, "B"}, {4, "C"}},
                           {{1, 1, "A", 10}, {2, 2, "B", 20}, {3, 1, "C", 30}});
  AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  opt.factors.d = 0.01;
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  runs.push_back(analyze_run(tb.build(), names, opt, 0).value());
  auto a = combine(std::move(runs), opt);
  const Factor *fa = by_name(*a, "A"), *fb = by_name(*a, "B"), *fc = by_name(*a, "C");
  ASSERT_TRUE(fa && fb && fc);
  EXPECT_EQ(fb->rank, 1);
  EXPECT_EQ(fa->rank, 0);
  EXPECT_EQ(fa->nested_with, "B");
  EXPECT_GT(fc->rank, 0);
  double sum = 0;
  for (const auto &f : a->factors)
    if (f.rank > 0) sum += f.share;
  EXPECT_LE(sum, 1.0 + 1e-9);
  // The paper's ranking keeps Algorithm 1: A is listed beside B.
  opt.factors.paper = true;
  std::vector<std::unique_ptr<RunAnalysis>> again;
  again.push_back(analyze_run(tb.build(), names, opt, 0).value());
  auto p = combine(std::move(again), opt);
  EXPECT_GT(by_name(*p, "A")->rank, 0);
}

}  // namespace
}  // namespace vprof::testing
