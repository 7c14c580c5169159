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

// w(b, r) as above, one at a time: for tests.
unsigned poisson_weight(uint64_t seed, size_t rows, size_t b, size_t r);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_FACTORS_RESAMPLE_H
