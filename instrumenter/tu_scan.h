// Parses one translation unit and reports what it asks to change: probes for
// the selected functions defined in it, call sites in their bodies, and sync
// call sites in every function body of an editable file. No file is touched.
#ifndef VPROF_INSTRUMENTER_TU_SCAN_H
#define VPROF_INSTRUMENTER_TU_SCAN_H

#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "instrumenter/compile_db.h"
#include "instrumenter/intents.h"
#include "instrumenter/names.h"
#include "instrumenter/sync_pack.h"

namespace vprof::instr {

struct ScanOptions {
  std::vector<NamePattern> patterns;
  const SyncRules *sync = nullptr;
  std::string source_root;  // only files below it are edited
  std::vector<std::string> excluded_dirs;  // never edited (vprof's own headers)
  // Files to parse with other contents than on disk (the originals of an
  // already instrumented tree).
  const std::map<std::string, std::string> *overlay = nullptr;
};

// Error: the file does not parse (message names file, line and what).
Expected<ScanResult> scan_translation_unit(const CompileEntry &entry, const ScanOptions &options);

}  // namespace vprof::instr

#endif
