// The scans of translation units that found no selected function, kept
// between instruments (issue 29: MariaDB's ~1,000 translation units took
// every `iterate` iteration a full parse with the sync packs everywhere,
// though only a handful of its files changed selection).
//
// Such a scan is what the sync packs wrap in the unit and what the unit
// defines (names, address-taken functions, overrides): it depends on the
// unit's command, the bytes of every file the unit read (sources as
// originally fetched: the journal's originals for a file vprof rewrote) and
// the settings that decide what is wrapped (packs, source root, excluded
// directories). An entry is used only when all of those are as they were;
// otherwise the unit is parsed again. A unit whose text mentions a selected
// name is always parsed: it may define a selected function.
//
// Entries: BUILD_DIR/.vprof-cache/scan/<settings>/<unit>.json (beside the
// journal and the manifest, not in them: a restore in full removes those);
// the three most recently used settings directories are kept. A write goes to
// a temporary file renamed into place, so a killed instrument leaves whole
// entries or none.
#ifndef VPROF_INSTRUMENTER_SCAN_CACHE_H
#define VPROF_INSTRUMENTER_SCAN_CACHE_H

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "instrumenter/compile_db.h"
#include "instrumenter/intents.h"

namespace vprof::instr {

class ScanCache {
 public:
  // `settings`: everything besides the unit that decides its scan.
  // `content_of(path)`: the bytes a parse would read for that file.
  ScanCache(std::string dir, std::string settings, std::function<std::string(const std::string &)> content_of);

  // The stored scan of `entry` when every file it read is unchanged.
  std::optional<ScanResult> get(const CompileEntry &entry);
  // Stores a scan that found no selected function (others are not stored).
  void put(const CompileEntry &entry, const ScanResult &scan);

  size_t hits() const { return hits_; }

 private:
  std::string key(const CompileEntry &entry) const;
  std::string file_sha1(const std::string &path);

  std::string dir_;  // this settings' directory
  std::function<std::string(const std::string &)> content_of_;
  std::mutex mu_;
  std::map<std::string, std::string> sha1_;  // path -> sha1 of its content ("" when unreadable)
  size_t hits_ = 0;
};

// Whether a scan may be stored: it found no selected function and no site.
bool cacheable(const ScanResult &scan);

}  // namespace vprof::instr

#endif
