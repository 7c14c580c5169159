// The scans of translation units, kept between instruments (MariaDB's ~1,000
// translation units took every `iterate` iteration a full parse with the sync
// packs everywhere, though only a handful of its files changed selection).
//
// A unit's scan depends on the unit's command, the bytes of every file the
// unit read (sources as originally fetched: the journal's originals for a
// file vprof rewrote), the settings that decide what is wrapped (packs,
// source root, excluded directories, this vprof), and of the selection only
// on the patterns that name a function the unit defines (names_seen: in
// its own text or in a header it includes). An entry is used only when all
// of those are as they were, or when the selection names none of the unit's
// functions (then what the selection added to it is left out: a dry run of
// one function reads the scans an iteration of a hundred stored); otherwise
// the unit is parsed again. So a unit
// is parsed when a function it shows is selected or let go, however its
// text says the name: a name a macro pastes (MariaDB's
// my_sha224_context_size), a function a header defines as the unit's macros
// show it (mysql_thread.h's inline_mysql_cond_wait, which psi_noop.c sees
// with HAVE_PSI_INTERFACE).
//
// Entries: BUILD_DIR/.vprof-cache/scan/<settings>/<unit>.json (beside the
// journal and the manifest, not in them: a restore in full removes those),
// kept as unit_cache.h keeps them.
#ifndef VPROF_INSTRUMENTER_SCAN_CACHE_H
#define VPROF_INSTRUMENTER_SCAN_CACHE_H

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "instrumenter/compile_db.h"
#include "instrumenter/intents.h"
#include "instrumenter/names.h"
#include "instrumenter/unit_cache.h"

namespace vprof::instr {

class ScanCache {
 public:
  // `settings`: everything besides the unit that decides its scan.
  // `content_of(path)`: the bytes a parse would read for that file.
  // `read_only` (a dry run): reads entries, writes, prunes and touches nothing.
  ScanCache(std::string dir, std::string settings, std::function<std::string(const std::string &)> content_of,
            bool read_only = false);

  // The stored scan of `entry` when every file it read is unchanged and the
  // patterns naming functions it defines are those it was scanned with.
  std::optional<ScanResult> get(const CompileEntry &entry, const std::vector<NamePattern> &patterns);
  void put(const CompileEntry &entry, const ScanResult &scan, const std::vector<NamePattern> &patterns);
  // The texts of the patterns (in their order) that name a function of names_seen.
  static std::vector<std::string> selecting(const std::vector<std::string> &names_seen,
                                            const std::vector<NamePattern> &patterns);

 private:
  UnitCache units_;
};

}  // namespace vprof::instr

#endif
