// The Poisson bootstrap's inner loop: weighted column sums over all
// resamples at once. Each resample draws interval r w(b, r) ~ Poisson(1)
// times, independently of the others; for large n this has the distribution
// of drawing n intervals with replacement, and a weight is a pure function of
// (seed, b, r), so there is no count vector to scatter into and blocks of
// intervals can be done in any order.
//
//   out[b·cols + c] = Σ_r w(b, r) · x[r·cols + c]     (b < resamples, c < cols)
//
// w(b, r) takes the 16-bit chunk r mod 4 of the splitmix64 output number
// b·⌈rows/4⌉ + ⌊r/4⌋ for `seed`, u, and is #{k < 8 : u >= cut[k]} with
// cut[k] = round(65536·P(Poisson(1) <= k)): each P(w = k) is within 2^-17 of
// Poisson(1)'s, and w <= 8.
//
// Two implementations give the same weights: AVX2 with FMA where the CPU has
// them, and portable scalar code. Their sums can differ in the last bits
// (fused against separate multiply-add); a machine always picks the same one.
// A resample's sums are added in the same order whichever other resamples
// are done beside it, so splitting [0, resamples) into ranges (one per
// worker) gives bit-identical results.
#ifndef VPROF_ANALYZER_FACTORS_RESAMPLE_H
#define VPROF_ANALYZER_FACTORS_RESAMPLE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vprof::analyzer {

enum class Isa { Scalar, Avx2 };

// The fastest implementation this CPU runs.
Isa best_isa();

// x: rows × cols, row-major; out: resamples × cols, row-major, overwritten;
// totals[b] = Σ_r w(b, r), each resample's size (a column of ones would cost
// a whole vector of multiply-adds when cols is a multiple of 4).
// Isa::Avx2 needs cols a multiple of 4 (pad x with zero columns); otherwise
// the scalar code runs.
void poisson_sums(const double *x, size_t rows, size_t cols, size_t resamples, uint64_t seed,
                  double *out, double *totals, Isa isa = best_isa());

// Only resamples [b_begin, b_end): out and totals point at resample b_begin's
// row and total (the rest of the full-size arrays is left alone).
void poisson_sums_range(const double *x, size_t rows, size_t cols, size_t b_begin, size_t b_end,
                        uint64_t seed, double *out, double *totals, Isa isa = best_isa());

// w(b, r) as above, one at a time.
unsigned poisson_weight(uint64_t seed, size_t rows, size_t b, size_t r);

// The same resamples' q-quantile of one column v (rows values), for q in
// [0.5, 1]: out[b] is the nearest-rank q-quantile (stats.h's quantiles) of the
// multiset holding v[r] w(b, r) times, totals[b] = Σ_r w(b, r) of them (as
// poisson_sums gives them); NaN where totals[b] < 1. It walks down from the
// largest values, so a resample costs about (1 − q)·rows weights, not rows:
// the sort is of about the top 2(1 − q)·rows + 64 values (`presorted` if not
// 0: for tests), and of all of them only for a resample whose walk goes
// further.
//
// `weights`, if given, keeps each row's weights across calls: several
// columns' quantiles over the same resamples (seed, rows and resamples as
// its own) walk mostly the same rows, the largest intervals.
class PoissonWeights;
std::vector<double> poisson_quantile(const double *v, size_t rows, double q, size_t resamples,
                                     uint64_t seed, const double *totals, size_t presorted = 0,
                                     PoissonWeights *weights = nullptr);

// w(b, r) of every resample for the rows asked for, each row's made once
// (resamples bytes a row asked for, 4 bytes a row of the run).
class PoissonWeights {
 public:
  PoissonWeights(uint64_t seed, size_t rows, size_t resamples);
  uint64_t seed() const { return seed_; }
  size_t rows() const { return rows_; }
  size_t resamples() const { return resamples_; }
  // Row r's slot, its weights made on the first call.
  uint32_t slot(size_t r);
  // w(b, r) for r's slot, every b (until the next slot() call).
  const uint8_t *row(uint32_t slot) const { return w_.data() + size_t(slot) * resamples_; }

 private:
  uint64_t seed_;
  size_t rows_, resamples_;
  std::vector<uint32_t> slot_;  // per row: its slot + 1, 0 until asked for
  std::vector<uint8_t> w_;      // slot-major
};

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_RESAMPLE_H
