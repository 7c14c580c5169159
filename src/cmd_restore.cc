// vprof restore [-p BUILD_DIR] [--source-root DIR] [--force]
// Puts every file `vprof instrument` rewrote back, byte for byte, from the
// tree's journal (SOURCE_ROOT/.vprof) and vprof's markers in the files.
#include <cstdio>
#include <memory>

#include "clang_commands.h"
#include "command.h"
#include "instrumenter/instrument.h"

namespace vprof::cli {
namespace {

int run(const instr::RestoreOptions &o) {
  auto r = instr::restore(o);
  if (!r) return fail(r.error().message);
  // Already as it was: the state a restore asks for, so no error (a script's
  // cleanup may run it twice).
  if (r->found_nothing) {
    std::fprintf(stderr, "vprof: %s: nothing to restore: no vprof journal and no file with vprof's marker (the tree is as it was)\n",
                 o.build_dir.c_str());
    return kExitOk;
  }
  std::fprintf(stderr, "vprof: restored %zu files\n", r->files_restored);
  for (const auto &l : r->not_ours) std::fprintf(stderr, "vprof: %s\n", l.c_str());
  if (!r->returned.empty())
    std::fprintf(stderr,
                 "vprof: %zu files already held their originals, though vprof did not put them back (a git stash "
                 "or checkout?), e.g. %s: their journal stays in %s, so that restore can still tell vprof's text "
                 "if it comes back; `vprof restore --forget` drops it\n",
                 r->returned.size(), r->returned.front().c_str(), r->journal_dir.c_str());
  if (!r->gone.empty())
    std::fprintf(stderr,
                 "vprof: %zu files vprof wrote are gone (deleted, or another branch checked out), e.g. %s: not made "
                 "again; %s\n",
                 r->gone.size(), r->gone.front().c_str(),
                 o.forget ? "dropped from the journal"
                          : ("their originals stay in " + r->journal_dir +
                             " in case they come back; `vprof restore --forget` drops them").c_str());
  if (r->left_alone.empty()) return kExitOk;
  for (const auto &l : r->left_alone) std::fprintf(stderr, "vprof: not restored: %s\n", l.c_str());
  return fail(std::to_string(r->left_alone.size()) + " files not restored (listed above)");
}

Registrar reg("restore", clang_command_help("restore"), [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<instr::RestoreOptions>();
  sub.add_option("-p,--build-dir", o->build_dir,
                 "build directory (compile_commands.json), or any directory of the source tree");
  sub.add_option("--source-root", o->source_root, "the tree's source root (default: the compile db's)");
  sub.add_flag("--force", o->force, "restore what can be; leave files changed by hand as they are, and list them");
  sub.add_flag("--forget", o->forget,
               "drop the journal of files that already hold their originals though vprof did not put them back "
               "(a git stash, a checkout); without it their journal stays");
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
