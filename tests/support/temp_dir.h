// A fresh, empty directory under the system temp dir, unique per test process.
// Every directory made here is removed when the process that made it exits
// normally (a forked child's exit leaves its parent's alone). Set
// VPROF_KEEP_TEST_DIRS=1 to keep them for a look after a failure.
#ifndef VPROF_TESTS_SUPPORT_TEMP_DIR_H
#define VPROF_TESTS_SUPPORT_TEMP_DIR_H

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace vprof::testing {

class TempDirs {
 public:
  static TempDirs &instance() {
    static TempDirs dirs;
    return dirs;
  }
  void add(const std::filesystem::path &p) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.push_back(p);
  }
  ~TempDirs() {
    if (getpid() != owner_ || std::getenv("VPROF_KEEP_TEST_DIRS")) return;
    for (const auto &p : paths_) {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  }

 private:
  TempDirs() = default;
  pid_t owner_ = getpid();
  std::mutex mu_;
  std::vector<std::filesystem::path> paths_;
};

inline std::string fresh_dir(const std::string &prefix, const std::string &name) {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / (prefix + "-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  TempDirs::instance().add(d);
  return d.string();
}

}  // namespace vprof::testing

#endif
