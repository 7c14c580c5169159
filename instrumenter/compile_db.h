// The target's compile_commands.json, made safe to hand to clang.
//
// Real trees list one file several times (libtool's -fPIC pass, PostgreSQL's
// 1209 entries for 1072 files), reach sources through symlinks, and carry
// gcc-only flags. Entries are de-duplicated by the file's real path (the first
// entry wins: edits are made once and must be valid for every variant), and
// arguments clang's driver does not know are dropped before parsing.
#ifndef VPROF_INSTRUMENTER_COMPILE_DB_H
#define VPROF_INSTRUMENTER_COMPILE_DB_H

#include <string>
#include <vector>

#include "common/expected.h"

namespace vprof::instr {

struct CompileEntry {
  std::string file;                    // real (symlink-free) absolute path
  std::string directory;               // working directory of the command
  std::vector<std::string> arguments;  // argv, sanitized for clang, ending with the file
  bool is_c = false;                   // parsed as C (not C++)
};

struct CompileDb {
  std::vector<CompileEntry> entries;
  size_t duplicates_dropped = 0;
  std::vector<std::string> dropped_flags;  // distinct unknown flags removed
  std::string common_root;                 // deepest directory holding every source
  // Sources that are links to files outside the tree the others are in
  // ("name (target)"): not parsed, not rewritten, not in the root.
  std::vector<std::string> outside;
};

Expected<CompileDb> load_compile_db(const std::string &build_dir);

}  // namespace vprof::instr

#endif
