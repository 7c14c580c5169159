// A fresh temporary folder per test, removed afterwards.
#ifndef MINIDB_TEST_DIR_H
#define MINIDB_TEST_DIR_H

#include <string>

namespace minidb_test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace minidb_test

#endif
