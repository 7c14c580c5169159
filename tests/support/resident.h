// The process's resident set, read from /proc/self/status: for tests and
// benchmarks of memory given back (tests/analyzer/freed_memory_test.cc).
#ifndef VPROF_TESTS_SUPPORT_RESIDENT_H
#define VPROF_TESTS_SUPPORT_RESIDENT_H

#include <cstdlib>
#include <fstream>
#include <string>

namespace vprof::testing {

// VmRSS in KiB, or -1 where /proc says nothing.
inline long resident_kb() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

}  // namespace vprof::testing

#endif  // VPROF_TESTS_SUPPORT_RESIDENT_H
