// Saved profiles merged into one variance tree (`vprof analyze A.vprof
// B.vprof ...`, docs/analyze.md, "Merging saved profiles"): runs of one build
// on several hosts, or several runs on one, as if all their intervals were
// one run. Each profile is reduced once to sums per node (the map step), and
// the sums of any number of profiles add up exactly (the reduce step): the
// work and memory of a merge are bounded by the tree's size, not by the
// intervals.
//
// A node's share is Cov(X, L) / Var(L) over all the intervals, X its time
// and L the latency (the root's column). The sums are kept as Chan et al.'s
// pairwise form (count, means, centred co-moments), which adds two sets
// without the cancellation of raw sums of squares: merging any split of one
// run's intervals gives the whole run's shares (to rounding).
#ifndef VPROF_ANALYZER_PROFILE_MERGE_H
#define VPROF_ANALYZER_PROFILE_MERGE_H

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/profile/profile.h"

namespace vprof::analyzer {

struct MergedNode {
  std::string key, label, factor;
  std::string parent;  // its parent's key ("" for the root)
  bool leaf = false;
  double mean = 0;  // of its time per interval, ns
  double m2 = 0;    // Σ (x − mean)²
  double cxl = 0;   // Σ (x − mean)(L − mean L)
  // Its share's 95% interval over the merged parts (between_run_intervals;
  // NaN when not computed) and how many parts hold it.
  double lo = NAN, hi = NAN;
  size_t parts_with = 0;
};

struct MergedTree {
  std::string root;     // the profiles' root ("latency" or a function)
  BuildInfo build;      // the first profile's
  size_t profiles = 0, runs = 0;
  double n = 0;         // intervals
  double mean = 0;      // of L, ns
  double m2 = 0;        // Σ (L − mean)²
  std::vector<MergedNode> nodes;           // in the order first seen (parents before children)
  std::map<std::string, size_t> index;     // key -> nodes[]
  std::vector<std::string> commits;        // the builds' commits, as seen (one each)
  size_t parts = 0, resamples = 0;         // between_run_intervals': the parts resampled, how often
  std::map<std::string, std::pair<double, double>> factor_ci;  // a factor's share's 95% interval

  double variance() const { return n > 1 ? m2 / (n - 1) : 0.0; }
  double share(const MergedNode &x) const { return m2 > 0 ? x.cxl / m2 : 0.0; }
};

// The map step: one profile's runs, as one set of intervals.
MergedTree reduce_profile(const Profile &p);

// The reduce step: b's intervals added to a's. A node in one of them only
// has time 0 in the other's intervals. Refused (an error naming both) when
// the roots differ.
Status merge_into(MergedTree &a, const MergedTree &b);

// One merged part's sums, kept compactly for between_run_intervals: its
// nodes by their index in the merged tree (merge_into appends nodes it has
// not seen, so an index, once given, stays).
struct PartSums {
  double n = 0, mean = 0, m2 = 0;
  std::vector<uint32_t> node;  // index in the merged tree
  std::vector<double> mean_x, cxl;
};
// `part`'s sums, after it was merged into `t`.
PartSums part_sums(const MergedTree &t, const MergedTree &part);

// Intervals that include how runs differ: each share's 95% interval from a
// bootstrap over `parts` (the merged profiles, each one run or one host's
// runs): `resamples` times, as many parts drawn with replacement and merged.
// A share that one run carries alone has a wide interval, however many
// intervals that run had; a within-run bootstrap cannot say so (two sessions'
// shares agreed "inside each other's ci95" in 15 of 30 pairs on PostgreSQL).
// t is the merge of all the parts; nothing is done with fewer than 2.
void between_run_intervals(MergedTree &t, const std::vector<PartSums> &parts, size_t resamples, uint64_t seed);

// The merged tree as text: a heading, the latency's mean and spread, the
// tree's nodes whose |share| is at least min_share (children by share), and
// the k factors with the largest shares (each factor's leaves summed).
std::string merged_text(const MergedTree &t, size_t k, double min_share);
// The same as JSON (docs/analyze.md, "Merging saved profiles"), with the
// sums, so that it is itself an input of a later merge: a reduce of reduces
// (hosts, then racks) is the same tree as one reduce of every profile.
std::string merged_json(const MergedTree &t, size_t k);
// Whether text is a merged tree's JSON (its "format" says so).
bool is_merged_json(const std::string &text);
// A merged tree from its JSON; errors say what is missing or wrong.
Expected<MergedTree> parse_merged_json(const std::string &text);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_PROFILE_MERGE_H
