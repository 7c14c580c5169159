// vprof restore [-p BUILD_DIR]
// Puts every file `vprof instrument` rewrote back, byte for byte.
#include <cstdio>
#include <memory>

#include "clang_commands.h"
#include "command.h"
#include "instrumenter/instrument.h"

namespace vprof::cli {
namespace {

Registrar reg("restore", clang_command_help("restore"), [](CLI::App &sub) -> Runner {
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

