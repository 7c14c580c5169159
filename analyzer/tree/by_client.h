// Per-client fairness (docs/method.md, "Beyond the papers", after AppleS,
// EuroSys 2022, §3.1): with interval client labels
// (vprof_interval_begin_labeled), each client's share of the intervals, the
// coefficient of variation of its latency, and
//   U_f = max_i |N_i/phi_i - H| / H,   H = (sum_i N_i/phi_i) / n,
// the largest relative deviation of one client's (weighted) throughput from
// the clients' average. AppleS counts N_i, the requests of user i scheduled
// during a time window [t1, t2] in which every user is backlogged; here the
// window is the whole run and N_i the number of client i's complete
// (analyzed) intervals, n the number of clients that have one. No weights can
// be given yet: phi_i = 1 for every client (a common weight cancels out of
// U_f), so U_f = max_i |N_i - H| / H with H the mean N_i. A client that was
// only active in part of the run reads as unfair: the window is not chosen.
//
// The mean per-client CV is AppleS's latency variability V_l: the CV of each
// client's latency (population standard deviation over mean, so a client
// with one interval has CV 0), averaged over the clients, unweighted.
// Intervals without a client label belong to no client: they are counted
// apart and are in no share.
#ifndef VPROF_ANALYZER_TREE_BY_CLIENT_H
#define VPROF_ANALYZER_TREE_BY_CLIENT_H

#include <string>
#include <vector>

#include "analyzer/critpath/critical_path.h"

namespace vprof::analyzer {

struct ClientStats {
  std::string client;
  size_t intervals = 0;
  double share = 0;      // intervals / all client-labeled intervals
  double mean_ns = 0;    // mean latency
  double cv = 0;         // population stddev / mean of the latency (0 when the mean is 0)
};

struct Fairness {
  bool labeled = false;            // some interval had a client label
  std::vector<ClientStats> clients;  // by intervals, most first (then by name)
  double unfairness = 0;           // U_f (equal weights)
  double mean_cv = 0;              // unweighted mean of the clients' cv
  size_t unlabeled_intervals = 0;  // complete intervals without a client label
};

Fairness client_fairness(const CriticalPaths &cp, const std::vector<std::string> &labels);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_TREE_BY_CLIENT_H
