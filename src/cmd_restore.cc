// vprof restore [-p BUILD_DIR]
// Puts every file `vprof instrument` rewrote back, byte for byte.
// Built only when the instrumenter is (VPROF_BUILD_INSTRUMENTER, needs clang).
#ifdef VPROF_HAVE_INSTRUMENTER
#include <cstdio>
#include <memory>

#include "command.h"
#include "instrumenter/instrument.h"

namespace vprof::cli {
namespace {

Registrar reg("restore", "put every rewritten source file back, byte for byte", [](CLI::App &sub) -> Runner {
  auto dir = std::make_shared<std::string>(".");
  sub.add_option("-p,--build-dir", *dir, "directory holding compile_commands.json");
  return [dir] {
    auto r = instr::restore(*dir);
    if (!r) return fail(r.error().message);
    std::fprintf(stderr, "vprof: restored %zu files\n", r->files_restored);
    return 0;
  };
});

}  // namespace
}  // namespace vprof::cli

#endif  // VPROF_HAVE_INSTRUMENTER
