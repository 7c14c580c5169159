// Windowed recording's one rule for its percentage (docs/run.md, "Windowed
// recording"): 0 and 100 record in full; in between, a run records in
// windows over that percent of the time, which it is told by VPROF_SAMPLE.
#ifndef VPROF_COMMON_SAMPLE_H
#define VPROF_COMMON_SAMPLE_H

#include <string>
#include <utility>
#include <vector>

namespace vprof {

inline bool windowed(int sample_pct) { return sample_pct > 0 && sample_pct < 100; }

// A run's environment under `vprof run --sample PCT` (and an iterate
// session's `sample`): VPROF_SAMPLE when windowed, nothing in full.
inline void add_sample_env(std::vector<std::pair<std::string, std::string>> &env, int sample_pct) {
  if (windowed(sample_pct)) env.emplace_back("VPROF_SAMPLE", std::to_string(sample_pct));
}

}  // namespace vprof

#endif  // VPROF_COMMON_SAMPLE_H
