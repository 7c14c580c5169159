// Factor selection's defaults (docs/method.md, "Factors"), written once: vprof
// analyze's -k, -d and -e, vprof diff's and gate's, the analyzer's own
// options, and a new session's vprof.json (iterate/config.h) start from these.
#ifndef VPROF_ANALYZER_FACTORS_DEFAULTS_H
#define VPROF_ANALYZER_FACTORS_DEFAULTS_H

namespace vprof::analyzer {

inline constexpr int kDefaultK = 3;         // factors selected at most
inline constexpr double kDefaultD = 0.05;   // a selected factor's |share| of Var(root), at least
inline constexpr double kDefaultE = 2.0;    // specificity exponent: (H - height)^e

}  // namespace vprof::analyzer

#endif
