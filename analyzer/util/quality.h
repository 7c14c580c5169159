// How bad a data-quality counter is when it is not zero. Each counter's
// level is in its list (analyzer/read/read_counters.def,
// analyzer/merge/merge_counters.def, analyzer/critpath/path_counters.def), so
// the report's `data_quality.level`, the terminal's "data quality:" line and
// `vprof analyze --fail-on` all read one table (docs/analyze.md, "Data
// quality").
#ifndef VPROF_ANALYZER_UTIL_QUALITY_H
#define VPROF_ANALYZER_UTIL_QUALITY_H

#include <cstdint>
#include <optional>
#include <string>

namespace vprof::analyzer {

enum class Level : uint8_t {
  info,     // what the analysis did or saw (edges followed, late ring switches): nothing wrong
  warning,  // the data had something odd that a documented rule handled; the report stands
  loss,     // data the report lacks: records dropped, threads or files lost, paths cut
};

inline const char *level_name(Level l) {
  switch (l) {
    case Level::info: return "info";
    case Level::warning: return "warning";
    case Level::loss: return "loss";
  }
  return "?";
}

// A run's verdict from its worst level: "ok" when only info counters
// counted anything.
inline const char *verdict_name(Level worst) {
  return worst == Level::info ? "ok" : level_name(worst);
}

inline std::optional<Level> parse_level(const std::string &s) {
  for (Level l : {Level::info, Level::warning, Level::loss})
    if (s == level_name(l)) return l;
  return std::nullopt;
}

// One counter as a visitor sees it (for_each_counter of each list).
struct Counter {
  const char *name;
  uint64_t value;
  Level level;
  const char *what;
};

}  // namespace vprof::analyzer

#endif
