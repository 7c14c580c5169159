// The Poisson bootstrap's kernel (analyzer/factors/resample.h): its weights
// follow Poisson(1), its sums are the weighted sums those weights define, and
// the AVX2 code agrees with the portable code.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/factors/resample.h"
#include "analyzer/tree/stats.h"

namespace vprof::testing {
namespace {

using namespace analyzer;

std::vector<double> random_rows(size_t rows, size_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0, 100);
  std::vector<double> x(rows * cols);
  for (double &v : x) v = d(rng);
  return x;
}

// Σ_r w(b, r)·x[r][c] in the plain order, from the one-at-a-time weights;
// `totals` gets Σ_r w(b, r).
std::vector<double> naive(const std::vector<double> &x, size_t rows, size_t cols, size_t B,
                          uint64_t seed, std::vector<double> *totals = nullptr) {
  std::vector<double> out(B * cols, 0.0);
  if (totals) totals->assign(B, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t b = 0; b < B; ++b) {
      double w = poisson_weight(seed, rows, b, r);
      if (totals) (*totals)[b] += w;
      for (size_t c = 0; c < cols; ++c) out[b * cols + c] += w * x[r * cols + c];
    }
  return out;
}

TEST(Resample, WeightsArePoissonOne) {
  // 200 resamples × 5000 rows = 10^6 weights against P(k) = e^-1 / k!: each
  // frequency within 5 standard errors (a fixed seed: the same draw every run).
  const size_t rows = 5000, B = 200;
  std::vector<double> count(10, 0.0);
  double sum = 0, sq = 0;
  for (size_t b = 0; b < B; ++b)
    for (size_t r = 0; r < rows; ++r) {
      unsigned w = poisson_weight(20161104, rows, b, r);
      ASSERT_LE(w, 8u);
      count[w] += 1;
      sum += w;
      sq += double(w) * w;
    }
  const double n = double(rows * B);
  double p = std::exp(-1.0);
  for (unsigned k = 0; k < 6; ++k) {
    double se = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(count[k], n * p, 5 * se) << "k=" << k;
    p /= double(k + 1);
  }
  double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.005);
  EXPECT_NEAR(var, 1.0, 0.01);
}

TEST(Resample, SumsAreTheWeightedSums) {
  // Shapes around the block (128 rows) and vector (4 columns, 2 resamples)
  // boundaries: the scalar code adds in the naive order exactly; the AVX2
  // code, with fused multiply-adds, to rounding.
  struct Shape { size_t rows, cols, B; };
  for (Shape s : {Shape{1, 4, 1}, Shape{3, 8, 3}, Shape{127, 12, 7}, Shape{129, 16, 2},
                  Shape{300, 20, 5}, Shape{1000, 36, 11}}) {
    SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.cols << " B=" << s.B);
    auto x = random_rows(s.rows, s.cols, s.rows);
    std::vector<double> want_totals;
    auto want = naive(x, s.rows, s.cols, s.B, 99, &want_totals);
    std::vector<double> got(s.B * s.cols, -1.0), totals(s.B, -1.0);
    poisson_sums(x.data(), s.rows, s.cols, s.B, 99, got.data(), totals.data(), Isa::Scalar);
    EXPECT_EQ(got, want);
    EXPECT_EQ(totals, want_totals);
    if (best_isa() != Isa::Avx2) continue;
    std::fill(got.begin(), got.end(), -1.0);
    std::fill(totals.begin(), totals.end(), -1.0);
    poisson_sums(x.data(), s.rows, s.cols, s.B, 99, got.data(), totals.data(), Isa::Avx2);
    EXPECT_EQ(totals, want_totals);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-9 * (1 + std::abs(want[i]))) << i;
  }
}

TEST(Resample, RangesOfResamplesGiveTheSameBits) {
  // Workers split the resamples into ranges (factors.cc); each range's sums
  // must equal, bit for bit, the same resamples done all at once, with either
  // code and with ranges that do and do not start on the AVX2 group of 4.
  const size_t rows = 300, cols = 12, B = 11;
  auto x = random_rows(rows, cols, 3);
  for (Isa isa : {Isa::Scalar, best_isa()}) {
    std::vector<double> all(B * cols), totals(B);
    poisson_sums(x.data(), rows, cols, B, 42, all.data(), totals.data(), isa);
    for (size_t cut : {size_t{1}, size_t{4}, size_t{6}, size_t{8}}) {
      SCOPED_TRACE(::testing::Message() << "isa " << int(isa) << " cut " << cut);
      std::vector<double> parts(B * cols, -1.0), pt(B, -1.0);
      poisson_sums_range(x.data(), rows, cols, 0, cut, 42, parts.data(), pt.data(), isa);
      poisson_sums_range(x.data(), rows, cols, cut, B, 42, parts.data() + cut * cols,
                         pt.data() + cut, isa);
      EXPECT_EQ(parts, all);
      EXPECT_EQ(pt, totals);
    }
  }
}

TEST(Resample, ColumnsNotAMultipleOfFourTakeTheScalarCode) {
  auto x = random_rows(50, 5, 3);
  std::vector<double> a(3 * 5), b(3 * 5), ta(3), tb(3);
  poisson_sums(x.data(), 50, 5, 3, 7, a.data(), ta.data(), Isa::Avx2);
  poisson_sums(x.data(), 50, 5, 3, 7, b.data(), tb.data(), Isa::Scalar);
  EXPECT_EQ(ta, tb);
  EXPECT_EQ(a, b);
  EXPECT_EQ(b, naive(x, 50, 5, 3, 7));
}

TEST(Resample, ResamplesDiffer) {
  // A column of ones sums to N_b = Σ_r w(b, r), the total: about rows ±
  // sqrt(rows), and not the same for every resample.
  const size_t rows = 10000, B = 64;
  std::vector<double> ones(rows * 4, 1.0), out(B * 4), totals(B);
  poisson_sums(ones.data(), rows, 4, B, 5, out.data(), totals.data());
  for (size_t b = 0; b < B; ++b) EXPECT_EQ(totals[b], out[b * 4]);
  double mean = 0, sq = 0;
  for (size_t b = 0; b < B; ++b) {
    mean += out[b * 4] / B;
    sq += out[b * 4] * out[b * 4] / B;
  }
  double sd = std::sqrt(sq - mean * mean);
  EXPECT_NEAR(mean, double(rows), 4 * std::sqrt(double(rows) / B));
  EXPECT_GT(sd, 0.6 * std::sqrt(double(rows)));
  EXPECT_LT(sd, 1.4 * std::sqrt(double(rows)));
}

TEST(Resample, QuantilesAreThoseOfTheResampledMultiset) {
  // poisson_quantile against the plain way: each resample written out (row r
  // w(b, r) times) and its nearest-rank quantile taken by stats.h's
  // quantiles. Values rounded to tens, so many tie. presorted = 1 makes every
  // walk go past the first sort (the fallback that sorts the rest). Every
  // other call shares one PoissonWeights with the calls before it (other
  // columns, other quantiles), as the factors' "if fixed" p99s do.
  for (size_t rows : {1, 7, 100, 3000}) {
    const size_t B = 24;
    PoissonWeights shared(9, rows, B);
    int call = 0;
    for (double q : {0.5, 0.9, 0.99, 0.999, 1.0})
      for (size_t presorted : {0, 1}) {
        auto x = random_rows(rows, 1, rows);
        for (double &v : x) v = std::round(v / 10) * 10;
        std::vector<double> ones(rows * 4, 1.0), out(B * 4), totals(B);
        poisson_sums(ones.data(), rows, 4, B, 9, out.data(), totals.data());
        const std::vector<double> got =
            poisson_quantile(x.data(), rows, q, B, 9, totals.data(), presorted, call++ % 2 ? &shared : nullptr);
        ASSERT_EQ(got.size(), B);
        for (size_t b = 0; b < B; ++b) {
          std::vector<double> multiset;
          for (size_t r = 0; r < rows; ++r)
            multiset.insert(multiset.end(), poisson_weight(9, rows, b, r), x[r]);
          if (multiset.empty()) {
            EXPECT_TRUE(std::isnan(got[b]));
            continue;
          }
          EXPECT_EQ(got[b], quantiles(multiset, {q})[0]) << "rows " << rows << " q " << q << " b " << b;
        }
      }
  }
}

}  // namespace
}  // namespace vprof::testing
