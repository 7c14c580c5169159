// Where vprof's own files are: the install prefix or the build tree. Both
// programs (vprof and vprof-clang, clang_commands.h) need them.
#include <climits>
#include <cstdlib>
#include <unistd.h>

#include "command.h"

namespace vprof::cli {
namespace {

bool exists(const std::string &path) { return access(path.c_str(), R_OK) == 0; }

}  // namespace

Dirs vprof_dirs() {
  // Installed: <prefix>/bin/vprof with <prefix>/<libdir>/libvprof.so and the headers,
  // wherever the prefix was moved to (--prefix, DESTDIR). Otherwise this is
  // the build tree's vprof, which knows where CMake put things.
  char resolved[PATH_MAX];
  std::string prefix = realpath((self_dir() + "/..").c_str(), resolved) ? resolved : self_dir() + "/..";
  if (exists(prefix + "/" VPROF_INSTALL_LIB_DIR "/libvprof.so") &&
      exists(prefix + "/" VPROF_INSTALL_INCLUDE_DIR "/vprof/vprof.h"))
    return {prefix + "/" VPROF_INSTALL_INCLUDE_DIR, prefix + "/" VPROF_INSTALL_LIB_DIR,
            prefix + "/" VPROF_INSTALL_DATA_DIR "/annotations"};
  return {VPROF_BUILD_INCLUDE_DIR, VPROF_BUILD_LIB_DIR,
          std::string(VPROF_BUILD_INCLUDE_DIR) + "/../annotations"};
}

}  // namespace vprof::cli
