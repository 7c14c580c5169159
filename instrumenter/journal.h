// The journal: how vprof keeps the promise that a rewritten tree comes back
// byte for byte, whatever happens (SIGKILL, a full disk, a second vprof).
//
// It lives next to the sources, in SOURCE_ROOT/.vprof/ (found from any build
// directory, tree.h):
//   state.json        every file vprof rewrote: its path, the SHA-1 of its
//                     original, and the SHA-1s of the texts vprof wrote ("ours")
//   written           "SHA1 PATH" of every text vprof wrote, appended before
//                     the write: what restore may take back with no state.json
//   originals/<sha1>  the original bytes
//   lock              flock()ed by instrument, restore and iterate (tree.h)
//
// commit() changes the tree in this order, each step durable (fsync) before
// the next:
//   1. check every file holds its original or one of ours (else: an error,
//      nothing changed);
//   2. save every original;
//   3. write state.json as a *pending* union of the old and the new sets: each
//      file may hold its original, an old text or a new one;
//   4. replace the files, each through a temporary and rename();
//   5. write the final state.json (or remove the journal when nothing is left).
// A process killed anywhere leaves either the old state with an untouched
// tree, or a pending state that describes every file exactly; the next commit
// (instrument or restore) starts from there. SIGINT/SIGTERM/SIGHUP are held
// back during steps 3-5, so only SIGKILL or a crash interrupts them.
//
// Every rewritten file also starts with a marker naming its original's SHA-1
// (marker_line), so vprof recognises its own output with no journal at hand.
#ifndef VPROF_INSTRUMENTER_JOURNAL_H
#define VPROF_INSTRUMENTER_JOURNAL_H

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"

namespace vprof::instr {

struct JournalEntry {
  std::string path, original_sha1;
  std::vector<std::string> ours;  // SHA-1s of the texts vprof may have left in the file
};

struct Journal {
  std::string dir;       // SOURCE_ROOT/.vprof (or an older vprof's BUILD_DIR/.vprof)
  bool exists = false;   // state.json was there
  bool pending = false;  // a commit was interrupted
  std::vector<JournalEntry> files;
};

std::string sha1_hex(const std::string &data);

// The first line of every rewritten file (after a UTF-8 BOM, if any): it
// includes the probe header, <vprof/dormant_probes.h> for a build whose runs
// may leave probes dormant.
std::string marker_line(const std::string &original_sha1, bool dormant = false);
// The original's SHA-1 when `text` starts with a marker.
std::optional<std::string> marker_sha1(const std::string &text);

Expected<Journal> read_journal(const std::string &dir);

// Removes the journal directory's own files (state, originals, lock, its
// .gitignore) and the directory, when nothing else is in it.
Status remove_journal(const std::string &dir);

// The saved original of `e`, checked against its checksum.
Expected<std::string> read_original(const std::string &journal_dir, const JournalEntry &e);
// Original contents of every file in the journal.
Expected<std::map<std::string, std::string>> read_originals(const Journal &j);
// The text of `path` as `overlay` holds it (the originals of the files
// vprof rewrote), else as on disk ("" when unreadable).
std::string contents(const std::string &path, const std::map<std::string, std::string> &overlay);

struct CommitOptions {
  // Restore what can be: a file changed since vprof wrote it is left alone,
  // reported, and kept in the journal, instead of failing the commit.
  bool force = false;
  // A file that already holds its original, though vprof did not write it
  // back (a `git stash`, a checkout), stays in the journal with its original:
  // the instrumented text may come back (`git stash pop`), and then only the
  // journal can tell what vprof wrote.
  bool keep_returned = false;
};

struct CommitResult {
  size_t files_written = 0;
  std::vector<std::string> left_alone;  // with force: "path: why"
  std::vector<std::string> returned;    // with keep_returned: files kept in the journal
  // Files vprof wrote that are gone (deleted, or a checkout of another
  // branch): never made again; with keep_returned kept in the journal, as
  // returned ones are, else dropped from it.
  std::vector<std::string> gone;
};

// Whether vprof wrote exactly these bytes at this path (the journal's
// written log): a file that carries vprof's marker but is not listed in
// state.json is taken back only then, never a copy or an edited file.
bool vprof_wrote(const std::string &journal_dir, const std::string &path, const std::string &text);

// Makes the tree hold exactly `rewritten` (path -> new text; `originals` has
// path -> original text for each, and for each file in `j`), and every other
// file of `j` restored. An empty `rewritten` restores the whole tree.
// On success `j` describes the new state.
Expected<CommitResult> commit(Journal &j, const std::map<std::string, std::string> &originals,
                              const std::map<std::string, std::string> &rewritten, const CommitOptions &o = {});

}  // namespace vprof::instr

#endif
