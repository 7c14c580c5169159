#include "analyzer/tree/by_client.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace vprof::analyzer {

Fairness client_fairness(const CriticalPaths &cp, const std::vector<std::string> &labels) {
  Fairness out;
  // By name: label numbers are the run's own, and two numbers may name one client.
  std::map<std::string, std::vector<double>> latencies;
  for (const IntervalRow &row : cp.rows) {
    if (row.client_label == 0 || row.client_label >= labels.size()) {
      ++out.unlabeled_intervals;
      continue;
    }
    latencies[labels[row.client_label]].push_back(double(row.latency_ns));
  }
  if (latencies.empty()) return out;
  out.labeled = true;
  size_t labeled = 0;
  for (const auto &[name, v] : latencies) labeled += v.size();
  for (const auto &[name, v] : latencies) {
    ClientStats c;
    c.client = name;
    c.intervals = v.size();
    c.share = double(v.size()) / double(labeled);
    double sum = 0;
    for (double x : v) sum += x;
    c.mean_ns = sum / double(v.size());
    double ss = 0;  // centered first: no sums of squares of raw ns (stats.h)
    for (double x : v) ss += (x - c.mean_ns) * (x - c.mean_ns);
    c.cv = c.mean_ns > 0 ? std::sqrt(ss / double(v.size())) / c.mean_ns : 0.0;
    out.clients.push_back(std::move(c));
  }
  std::stable_sort(out.clients.begin(), out.clients.end(),
                   [](const ClientStats &a, const ClientStats &b) { return a.intervals > b.intervals; });
  const double h = double(labeled) / double(out.clients.size());
  for (const ClientStats &c : out.clients) {
    out.unfairness = std::max(out.unfairness, std::fabs(double(c.intervals) - h) / h);
    out.mean_cv += c.cv / double(out.clients.size());
  }
  return out;
}

}  // namespace vprof::analyzer
