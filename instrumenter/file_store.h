// Keeping and putting back originals: BUILD_DIR/.vprof/state.json lists every
// rewritten file with the checksums of its original and rewritten contents;
// the originals are stored under BUILD_DIR/.vprof/originals/<sha1>.
//
// commit() replaces the tree's instrumented set all or nothing: it checks every
// file first (still as we left it, writable), saves originals, then writes
// each file through a temporary and rename(); if any write fails the files
// already written are put back before the error is returned.
#ifndef VPROF_INSTRUMENTER_FILE_STORE_H
#define VPROF_INSTRUMENTER_FILE_STORE_H

#include <map>
#include <string>
#include <vector>

#include "include/vprof/expected.h"

namespace vprof::instr {

struct StoredFile {
  std::string path, original_sha1, instrumented_sha1;
};

struct StoreState {
  std::vector<StoredFile> files;
};

std::string sha1_hex(const std::string &data);

Expected<StoreState> read_state(const std::string &build_dir);

// Original contents of every file in the state, checked against their checksums.
Expected<std::map<std::string, std::string>> read_originals(const std::string &build_dir, const StoreState &state);

// Makes the tree hold exactly `rewritten` (path -> new text, with `originals`
// path -> original text) and every other previously rewritten file restored.
// An empty `rewritten` restores the whole tree.
Status commit(const std::string &build_dir, const StoreState &old_state,
              const std::map<std::string, std::string> &originals,
              const std::map<std::string, std::string> &rewritten, size_t *files_written = nullptr);

}  // namespace vprof::instr

#endif
