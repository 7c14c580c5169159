// A fresh, empty directory under the system temp dir, unique per test process.
#ifndef VPROF_TESTS_SUPPORT_TEMP_DIR_H
#define VPROF_TESTS_SUPPORT_TEMP_DIR_H

#include <unistd.h>

#include <filesystem>
#include <string>

namespace vprof::testing {

inline std::string fresh_dir(const std::string &prefix, const std::string &name) {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / (prefix + "-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

}  // namespace vprof::testing

#endif
