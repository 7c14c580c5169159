// Where a tree's journal lives, and the lock that keeps two vprofs apart.
//
// The journal (journal.h) is SOURCE_ROOT/.vprof, next to the sources it
// protects, so any build directory of the tree finds it, and removing or
// reconfiguring a build directory loses nothing. SOURCE_ROOT is --source-root,
// else the deepest directory holding every compile-db source, else (a tree
// instrumented with a narrower --source-root) the one journal among the
// sources' directories below that root. A tree
// instrumented by a vprof older than the journal keeps its state in
// BUILD_DIR/.vprof; that one is used until the tree is restored.
//
//   auto place = locate_tree(build_dir, "");      // Error: say why
//   auto lock = TreeLock::acquire(place->journal_dir);   // Error: another vprof holds it
#ifndef VPROF_INSTRUMENTER_TREE_H
#define VPROF_INSTRUMENTER_TREE_H

#include <memory>
#include <string>

#include "common/expected.h"

namespace vprof::instr {

struct TreePlace {
  std::string journal_dir;  // absolute; may not exist yet
  std::string source_root;  // absolute, ends without '/'; "" when unknown (no compile db)
};

// From a build directory with a compile_commands.json: its source root's
// journal. From any other existing directory (a source tree whose build
// directory is gone): the nearest journal at or above it. Errors: the
// directory does not exist; it has no compile db and no journal is above it.
Expected<TreePlace> locate_tree(const std::string &build_dir, const std::string &source_root);

// An exclusive flock() on JOURNAL_DIR/lock, re-entrant within one process
// (iterate holds it for a whole session while instrument and restore take it
// again). Released when the last holder goes.
class TreeLock {
 public:
  static Expected<TreeLock> acquire(const std::string &journal_dir);
  TreeLock(TreeLock &&) = default;
  TreeLock &operator=(TreeLock &&) = default;
  ~TreeLock();

 private:
  explicit TreeLock(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  struct Moved {};
  std::unique_ptr<Moved> live_ = std::make_unique<Moved>();  // empty once moved from
};

}  // namespace vprof::instr

#endif
