#include "analyzer/report/histogram.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace vprof::analyzer {
namespace {

double edge(long k, int per_decade) { return std::pow(10.0, double(k) / per_decade); }

// The bin of v > 0: computed in log space, then settled against the very
// edges the report writes, so a latency on an edge counts where the edges say.
size_t bin_of(double v, long k_lo, const std::vector<double> &edges, int per_decade) {
  long k = long(std::floor(std::log10(v) * per_decade)) - k_lo;
  size_t last = edges.size() - 2;
  size_t i = size_t(std::clamp(k, 0L, long(last)));
  while (i > 0 && v < edges[i]) --i;
  while (i < last && v >= edges[i + 1]) ++i;
  return i;
}

}  // namespace

LatencyHistogram latency_histogram(const Analysis &a, int per_decade) {
  LatencyHistogram h;
  h.bins_per_decade = per_decade;
  const RunAnalysis &r = *a.runs.front();
  const Eigen::VectorXd &lat = r.columns.latency;
  double lo = 0, hi = 0;
  for (Eigen::Index i = 0; i < lat.size(); ++i) {
    double v = lat[i];
    if (v <= 0) continue;
    lo = lo == 0 ? v : std::min(lo, v);
    hi = std::max(hi, v);
  }
  // Which by_type entry each interval's type label goes to.
  std::unordered_map<uint32_t, size_t> type_index;
  if (a.types.labeled) {
    for (const TypeStats &t : a.types.types) h.by_type.push_back({t.type, {}, 0});
    for (size_t l = 0; l < r.labels.size(); ++l)
      for (size_t t = 0; t < h.by_type.size(); ++t)
        if (h.by_type[t].type == r.labels[l]) type_index[uint32_t(l)] = t;
  }
  long k_lo = 0;
  if (hi > 0) {
    k_lo = long(std::floor(std::log10(lo) * per_decade));
    while (edge(k_lo, per_decade) > lo) --k_lo;
    long k_hi = long(std::floor(std::log10(hi) * per_decade)) + 1;
    while (k_hi - 1 > k_lo && edge(k_hi - 1, per_decade) > hi) --k_hi;
    while (edge(k_hi, per_decade) <= hi) ++k_hi;
    for (long k = k_lo; k <= k_hi; ++k) h.edges_ns.push_back(edge(k, per_decade));
  }
  size_t bins = h.edges_ns.empty() ? 0 : h.edges_ns.size() - 1;
  h.counts.assign(bins, 0);
  for (auto &t : h.by_type) t.counts.assign(bins, 0);
  for (Eigen::Index i = 0; i < lat.size(); ++i) {
    double v = lat[i];
    LatencyHistogram::ByType *t = nullptr;
    if (!h.by_type.empty() && size_t(i) < r.paths.rows.size()) {
      auto it = type_index.find(r.paths.rows[size_t(i)].type_label);
      if (it != type_index.end()) t = &h.by_type[it->second];
    }
    if (v <= 0) {
      ++h.zero;
      if (t) ++t->zero;
      continue;
    }
    size_t b = bin_of(v, k_lo, h.edges_ns, per_decade);
    ++h.counts[b];
    if (t) ++t->counts[b];
  }
  return h;
}

}  // namespace vprof::analyzer
