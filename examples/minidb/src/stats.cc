#include "stats.h"

#include <algorithm>
#include <cmath>

namespace minidb {
namespace {

int64_t nearest_rank(const std::vector<int64_t> &sorted, double q) {
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  if (rank == 0) rank = 1;
  return sorted[std::min(rank, sorted.size()) - 1];
}

}  // namespace

LatencySummary summarize(std::vector<int64_t> samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  double mean = 0, m2 = 0;
  uint64_t n = 0;
  for (int64_t x : samples) {
    ++n;
    double d = static_cast<double>(x) - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (static_cast<double>(x) - mean);
  }
  std::sort(samples.begin(), samples.end());
  s.count = n;
  s.mean_ns = mean;
  s.variance_ns2 = m2 / static_cast<double>(n);
  s.p50_ns = nearest_rank(samples, 0.50);
  s.p99_ns = nearest_rank(samples, 0.99);
  s.p999_ns = nearest_rank(samples, 0.999);
  s.max_ns = samples.back();
  return s;
}

double variance_share(const std::vector<int64_t> &part, const std::vector<int64_t> &total) {
  size_t n = std::min(part.size(), total.size());
  if (n < 2) return 0;
  // Welford-style co-moment, stable for large values.
  double mx = 0, my = 0, cxy = 0, m2y = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = static_cast<double>(part[i]), y = static_cast<double>(total[i]);
    double k = static_cast<double>(i + 1);
    double dx = x - mx;
    mx += dx / k;
    double dy = y - my;
    my += dy / k;
    cxy += dx * (y - my);
    m2y += dy * (y - my);
  }
  return m2y > 0 ? cxy / m2y : 0;
}

}  // namespace minidb
