#include "analyzer/factors/resample.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VPROF_HAVE_AVX2_PATH 1
#include <immintrin.h>
#endif

namespace vprof::analyzer {
namespace {

constexpr size_t kBlock = 128;  // rows per block: a multiple of 16
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64's output number i (0-based) for a seed: a pure function of both.
inline uint64_t splitmix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * kGolden;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Cuts {
  uint16_t cut[8];
  Cuts() {
    double p = std::exp(-1.0), cdf = 0;
    for (int k = 0; k < 8; ++k) {
      cdf += p;
      p /= double(k + 1);
      cut[k] = uint16_t(std::min(65535.0, std::round(cdf * 65536.0)));
    }
  }
};
const Cuts &cuts() {
  static const Cuts c;
  return c;
}

inline unsigned weight_of(uint16_t u, const Cuts &c) {
  unsigned w = 0;
  for (uint16_t k : c.cut) w += u >= k;
  return w;
}

// The random words resample b needs for rows [r0, r0 + len): r0 % 4 == 0.
void words_for(uint64_t seed, size_t rows, size_t b, size_t r0, size_t len, uint64_t *out) {
  const uint64_t first = uint64_t(b) * ((rows + 3) / 4) + r0 / 4;
  for (size_t i = 0; i < (len + 3) / 4; ++i) out[i] = splitmix(seed, first + i);
}

// Resamples [b0, b1); out and totals start at b0's.
void sums_scalar(const double *x, size_t rows, size_t cols, size_t b0, size_t b1, uint64_t seed,
                 double *out, double *totals) {
  const Cuts &c = cuts();
  std::fill(out, out + (b1 - b0) * cols, 0.0);
  std::fill(totals, totals + (b1 - b0), 0.0);
  uint64_t words[kBlock / 4];
  double w[kBlock];
  for (size_t r0 = 0; r0 < rows; r0 += kBlock) {
    const size_t len = std::min(kBlock, rows - r0);
    for (size_t b = b0; b < b1; ++b) {
      words_for(seed, rows, b, r0, len, words);
      for (size_t r = 0; r < len; ++r) {
        w[r] = weight_of(uint16_t(words[r / 4] >> (16 * (r % 4))), c);
        totals[b - b0] += w[r];
      }
      double *o = out + (b - b0) * cols;
      for (size_t r = 0; r < len; ++r) {
        const double *xr = x + (r0 + r) * cols;
        for (size_t k = 0; k < cols; ++k) o[k] += w[r] * xr[k];
      }
    }
  }
}

#ifdef VPROF_HAVE_AVX2_PATH

// Weights for 16·n rows from 4·n words: 16-bit lanes compared with each
// cut-off (u >= cut  <=>  u > cut - 1; unsigned via the sign flip). Returns
// their sum (lanes that are 0 give weight 0: the caller zeroes unused ones).
__attribute__((target("avx2,fma"))) unsigned weights_avx2(const uint64_t *words, size_t n16,
                                                           const Cuts &c, double *w) {
  const __m256i flip = _mm256_set1_epi16(int16_t(0x8000));
  __m256i cut[8];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) cut[k] = _mm256_set1_epi16(int16_t((c.cut[k] - 1) ^ 0x8000));
  __m256i total = _mm256_setzero_si256();  // per lane at most 8 per row
  for (size_t i = 0; i < n16; ++i) {
    __m256i u = _mm256_xor_si256(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(words + 4 * i)), flip);
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) acc = _mm256_sub_epi16(acc, _mm256_cmpgt_epi16(u, cut[k]));
    total = _mm256_add_epi16(total, acc);
    __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(acc));
    __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(acc, 1));
    double *o = w + 16 * i;
    _mm256_storeu_pd(o, _mm256_cvtepi32_pd(_mm256_castsi256_si128(lo)));
    _mm256_storeu_pd(o + 4, _mm256_cvtepi32_pd(_mm256_extracti128_si256(lo, 1)));
    _mm256_storeu_pd(o + 8, _mm256_cvtepi32_pd(_mm256_castsi256_si128(hi)));
    _mm256_storeu_pd(o + 12, _mm256_cvtepi32_pd(_mm256_extracti128_si256(hi, 1)));
  }
  alignas(32) uint16_t lanes[16];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), total);
  unsigned sum = 0;
  for (uint16_t l : lanes) sum += l;
  return sum;
}

// NB resamples' sums over 4·V columns: NB·V independent accumulators, so the
// multiply-adds overlap instead of waiting on each other's latency.
// (The loops over b and v are unrolled by hand-placed pragmas: at -O2 the
// compiler would otherwise keep acc in memory, one store per multiply-add.)
template <int NB, int V>
__attribute__((target("avx2,fma"))) void accumulate(const double *x, size_t stride,
                                                    const double *const *w, size_t len,
                                                    double *const *out) {
  __m256d acc[NB][V];
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[b][v] = _mm256_loadu_pd(out[b] + 4 * v);
  for (size_t r = 0; r < len; ++r) {
    const double *xr = x + r * stride;
    __m256d xv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) xv[v] = _mm256_loadu_pd(xr + 4 * v);
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      __m256d wv = _mm256_broadcast_sd(w[b] + r);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[b][v] = _mm256_fmadd_pd(wv, xv[v], acc[b][v]);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) _mm256_storeu_pd(out[b] + 4 * v, acc[b][v]);
}

template <int NB>
__attribute__((target("avx2,fma"))) void accumulate_cols(const double *x, size_t cols,
                                                         const double *const *w, size_t len,
                                                         double *const *out) {
  for (size_t c0 = 0; c0 < cols; c0 += 16) {
    const double *xc = x + c0;
    double *o[NB];
    for (int b = 0; b < NB; ++b) o[b] = out[b] + c0;
    switch (std::min<size_t>(4, (cols - c0) / 4)) {
      case 1: accumulate<NB, 1>(xc, cols, w, len, o); break;
      case 2: accumulate<NB, 2>(xc, cols, w, len, o); break;
      case 3: accumulate<NB, 3>(xc, cols, w, len, o); break;
      default: accumulate<NB, 4>(xc, cols, w, len, o); break;
    }
  }
}

__attribute__((target("avx2,fma"))) void sums_avx2(const double *x, size_t rows, size_t cols,
                                                   size_t b0, size_t b1, uint64_t seed,
                                                   double *out, double *totals) {
  // Four resamples per pass over a block when their accumulators fit the 16
  // vector registers (4 × up to 3), so each x load serves four; else two.
  const size_t group = cols <= 12 ? 4 : 2;
  const Cuts &c = cuts();
  std::fill(out, out + (b1 - b0) * cols, 0.0);
  std::fill(totals, totals + (b1 - b0), 0.0);
  alignas(32) uint64_t words[4][kBlock / 4];
  alignas(32) double w[4][kBlock];
  const double *wp[4] = {w[0], w[1], w[2], w[3]};
  for (size_t r0 = 0; r0 < rows; r0 += kBlock) {
    const size_t len = std::min(kBlock, rows - r0);
    const double *xb = x + r0 * cols;
    for (size_t b = b0; b < b1; b += group) {
      const size_t nb = std::min(group, b1 - b);
      double *op[4];
      for (size_t j = 0; j < nb; ++j) {
        words_for(seed, rows, b + j, r0, len, words[j]);
        const size_t n16 = (len + 15) / 16, used = (len + 3) / 4;
        // Rows past the block's end: u = 0, weight 0 (not drawn, not counted).
        if (len % 4) words[j][used - 1] &= (uint64_t{1} << (16 * (len % 4))) - 1;
        std::fill(words[j] + used, words[j] + 4 * n16, uint64_t{0});
        totals[b + j - b0] += weights_avx2(words[j], n16, c, w[j]);
        op[j] = out + (b + j - b0) * cols;
      }
      switch (nb) {
        case 4: accumulate_cols<4>(xb, cols, wp, len, op); break;
        case 3: accumulate_cols<3>(xb, cols, wp, len, op); break;
        case 2: accumulate_cols<2>(xb, cols, wp, len, op); break;
        default: accumulate_cols<1>(xb, cols, wp, len, op); break;
      }
    }
  }
}

#endif  // VPROF_HAVE_AVX2_PATH

}  // namespace

Isa best_isa() {
#ifdef VPROF_HAVE_AVX2_PATH
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2 ? Isa::Avx2 : Isa::Scalar;
#else
  return Isa::Scalar;
#endif
}

void poisson_sums_range(const double *x, size_t rows, size_t cols, size_t b_begin, size_t b_end,
                        uint64_t seed, double *out, double *totals, Isa isa) {
  if (b_end <= b_begin) return;
#ifdef VPROF_HAVE_AVX2_PATH
  if (isa == Isa::Avx2 && cols % 4 == 0)
    return sums_avx2(x, rows, cols, b_begin, b_end, seed, out, totals);
#else
  (void)isa;
#endif
  sums_scalar(x, rows, cols, b_begin, b_end, seed, out, totals);
}

void poisson_sums(const double *x, size_t rows, size_t cols, size_t resamples, uint64_t seed,
                  double *out, double *totals, Isa isa) {
  poisson_sums_range(x, rows, cols, 0, resamples, seed, out, totals, isa);
}

namespace {

// weight_of(u) for every u: one load where eight comparisons were.
const std::array<uint8_t, 65536> &weight_table() {
  static const std::array<uint8_t, 65536> t = [] {
    std::array<uint8_t, 65536> a{};
    for (size_t u = 0; u < a.size(); ++u) a[u] = uint8_t(weight_of(uint16_t(u), cuts()));
    return a;
  }();
  return t;
}

// w(b, r) for resample b's first word `first` (b·⌈rows/4⌉), from weight_table().
inline unsigned weight_at(const std::array<uint8_t, 65536> &table, uint64_t seed, uint64_t first, size_t r) {
  return table[uint16_t(splitmix(seed, first + r / 4) >> (16 * (r % 4)))];
}

}  // namespace

unsigned poisson_weight(uint64_t seed, size_t rows, size_t b, size_t r) {
  return weight_at(weight_table(), seed, uint64_t(b) * ((rows + 3) / 4), r);
}

PoissonWeights::PoissonWeights(uint64_t seed, size_t rows, size_t resamples)
    : seed_(seed), rows_(rows), resamples_(resamples) {}

uint32_t PoissonWeights::slot(size_t r) {
  if (slot_.empty()) slot_.assign(rows_, 0);
  if (slot_[r]) return slot_[r] - 1;
  const std::array<uint8_t, 65536> &table = weight_table();
  const size_t words = (rows_ + 3) / 4, at = w_.size();
  w_.resize(at + resamples_);
  for (size_t b = 0; b < resamples_; ++b) w_[at + b] = uint8_t(weight_at(table, seed_, uint64_t(b) * words, r));
  slot_[r] = uint32_t(at / resamples_) + 1;
  return slot_[r] - 1;
}

std::vector<double> poisson_quantile(const double *v, size_t rows, double q, size_t resamples,
                                     uint64_t seed, const double *totals, size_t presorted,
                                     PoissonWeights *weights) {
  std::vector<double> out(resamples, std::nan(""));
  if (rows == 0) return out;
  std::optional<PoissonWeights> own;
  if (!weights || weights->seed() != seed || weights->rows() != rows || weights->resamples() != resamples)
    weights = &own.emplace(seed, rows, resamples);
  // Rows by value, largest first (ties by row, so the order is one order),
  // from the top `want` or so on: the rows at or above a threshold, the
  // want/step-th largest of every step-th value (a selection over a sample:
  // the values are contiguous, a selection of the rows would chase them).
  // The rest are sorted only when a walk needs them.
  auto larger = [&](size_t a, size_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); };
  const size_t want = std::min(rows, presorted ? presorted : 2 * size_t(std::ceil((1 - q) * double(rows))) + 64);
  const size_t step = std::max<size_t>(1, std::min<size_t>(8, rows / (4 * want)));
  std::vector<double> sample;
  sample.reserve(rows / step + 1);
  for (size_t r = 0; r < rows; r += step) sample.push_back(v[r]);
  const size_t j = std::min(sample.size(), (want + step - 1) / step) - 1;
  std::nth_element(sample.begin(), sample.begin() + ptrdiff_t(j), sample.end(), std::greater<>());
  const double threshold = sample[j];
  std::vector<size_t> order;
  order.reserve(rows);
  for (size_t r = 0; r < rows; ++r)
    if (v[r] >= threshold) order.push_back(r);
  std::sort(order.begin(), order.end(), larger);
  // All resamples walk down together, a row at a time: each adds the row's
  // weight to what it has seen, and the first row at which that reaches
  // its rank from the top is its quantile (a loop over the resamples with no
  // branch, where a walk per resample looked each weight up on its own).
  std::vector<int32_t> need(resamples, 0), seen(resamples, 0), done(resamples, 1), at(resamples, 0);
  int64_t left = 0;
  for (size_t b = 0; b < resamples; ++b) {
    const double n = totals[b];
    if (n < 1) continue;
    // Nearest rank k from the bottom (as quantiles: ceil(q·N) in [1, N]) is
    // rank N − k + 1 from the top.
    const double k = std::clamp(std::ceil(q * n), 1.0, n);
    need[b] = int32_t(n - k + 1);
    done[b] = 0;
    ++left;
  }
  for (size_t i = 0; left > 0; ++i) {
    if (i == order.size() && i < rows) {  // a resample reaches below the top: the rest, sorted
      for (size_t r = 0; r < rows; ++r)
        if (!(v[r] >= threshold)) order.push_back(r);
      std::sort(order.begin() + ptrdiff_t(i), order.end(), larger);
    }
    if (i == rows) break;  // cannot happen: the weights add up to n
    const uint8_t *w = weights->row(weights->slot(order[i]));
    int32_t hits = 0;
    for (size_t b = 0; b < resamples; ++b) {
      const int32_t s = seen[b] + w[b];
      const int32_t hit = int32_t(s >= need[b]) & ~done[b];
      seen[b] = s;
      at[b] = hit ? int32_t(i) : at[b];
      done[b] |= hit;
      hits += hit;
    }
    left -= hits;
  }
  for (size_t b = 0; b < resamples; ++b)
    if (need[b] > 0 && done[b]) out[b] = v[order[size_t(at[b])]];
  return out;
}

}  // namespace vprof::analyzer
