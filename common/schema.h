// The version of every JSON file vprof writes, and the one check each reader
// makes before it reads one: a file from a newer vprof (or with a version that
// is not a number) is refused with one line naming the file and both versions,
// as the trace reader and the saved profile refuse theirs.
#ifndef VPROF_COMMON_SCHEMA_H
#define VPROF_COMMON_SCHEMA_H

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/expected.h"

namespace vprof::schema {

struct File {
  const char *what;  // how an error names the file's kind
  int version;       // the schema_version this vprof writes, and the newest it reads
};

inline constexpr File kManifest{"instrumentation manifest", 2};  // 2: call sites say whether they are indirect
inline constexpr File kJournal{"instrumentation journal", 2};    // 2: `ours` lists every instrumented sha1
inline constexpr File kCallGraph{"call graph", 1};
inline constexpr File kSyncPack{"sync pack", 1};
inline constexpr File kSessionConfig{"session config", 1};
inline constexpr File kSessionState{"session state", 1};
inline constexpr File kAnalysis{"analysis report", 1};
inline constexpr File kDiff{"diff report", 1};

// {"schema_version": N}, to add a file's fields to.
inline nlohmann::json versioned(File f) { return nlohmann::json{{"schema_version", f.version}}; }

// The file's schema_version, or an error when it is newer than `f.version` or
// not a positive integer. A file without one is version 1: it was written
// before the field was.
inline Expected<int> check(const nlohmann::json &j, const std::string &path, File f) {
  auto it = j.is_object() ? j.find("schema_version") : j.end();
  if (!j.is_object() || it == j.end()) return 1;
  if (!it->is_number_unsigned() || it->get<long long>() < 1)
    return Error{fmt::format("{}: the {}'s schema_version {} is not a version (this vprof reads 1 to {})", path,
                             f.what, it->dump(), f.version)};
  long long v = it->get<long long>();
  if (v > f.version)
    return Error{fmt::format("{}: the {} is schema_version {}, newer than this vprof reads ({}); use a newer vprof",
                             path, f.what, v, f.version)};
  return static_cast<int>(v);
}

}  // namespace vprof::schema

#endif  // VPROF_COMMON_SCHEMA_H
