#include "test_dir.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace minidb_test {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "minidb-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace minidb_test
