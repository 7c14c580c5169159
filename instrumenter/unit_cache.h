// What a parse of one translation unit found, kept between runs of vprof
// when nothing the unit read has changed: the instrument's scans
// (scan_cache.h) and the call graph's definitions (callgraph.h) each keep
// theirs. A parse of MariaDB's ~1,000 units takes minutes; a session parses
// the same pristine tree again at every start.
//
// An entry holds what its user stored (a JSON payload) and the SHA-1 of
// every file the unit read, as `content_of` gives it (sources as originally
// fetched: the journal's originals for a file vprof rewrote); it is used only
// when all of those are as they were, and when the unit's command is the
// same (the entry's name is a hash of it). `settings` is everything else that
// decides the payload (its format, this vprof, the instrument's packs): other
// settings are another directory, and the three most recently used are kept.
//
// Entries: DIR/<settings>/<unit>.json. A write goes to a temporary file
// renamed into place, so a killed vprof leaves whole entries or none; a
// damaged entry is a miss; a cache that cannot be written only costs time. A
// cache directory that is a link, another user's, or writable by all and not
// sticky (common/trace_dir_rules.h) is neither read nor written.
#ifndef VPROF_INSTRUMENTER_UNIT_CACHE_H
#define VPROF_INSTRUMENTER_UNIT_CACHE_H

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "instrumenter/compile_db.h"

namespace vprof::instr {

class UnitCache {
 public:
  struct Entry {
    std::vector<std::string> files_read;
    nlohmann::json payload;
  };
  // `read_only` (a dry run): reads entries; writes, prunes and touches nothing.
  UnitCache(const std::string &dir, const std::string &settings,
            std::function<std::string(const std::string &)> content_of, bool read_only = false);

  std::optional<Entry> get(const CompileEntry &unit);
  void put(const CompileEntry &unit, const std::vector<std::string> &files_read, const nlohmann::json &payload);

 private:
  std::string path_of(const CompileEntry &unit) const;
  std::string file_sha1(const std::string &path);

  std::string dir_;  // this settings' directory
  std::function<std::string(const std::string &)> content_of_;
  bool read_only_ = false;
  bool off_ = false;  // a directory of the cache another user could write in: neither read nor written
  std::mutex mu_;
  std::map<std::string, std::string> sha1_;  // path -> sha1 of its content ("" when unreadable)
};

// This vprof's executable (path, size, time): a rebuilt vprof may parse
// otherwise, so it is part of every cache's settings.
std::string this_vprof();

}  // namespace vprof::instr

#endif
