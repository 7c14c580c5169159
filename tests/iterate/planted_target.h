// A fresh copy of tests/iterate/planted.cc with its own CMake build and a
// session config: the target the iterate tests instrument, build and run.
#ifndef VPROF_TESTS_ITERATE_PLANTED_TARGET_H
#define VPROF_TESTS_ITERATE_PLANTED_TARGET_H

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "iterate/config.h"
#include "tests/support/temp_dir.h"

namespace vprof::testing {

inline std::string slurp(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `victim` is the stage the planted delay is called from; `seed` its run's seed.
inline iterate::Config make_planted_target(const std::string &name, const std::string &victim, int seed) {
  namespace fs = std::filesystem;
  fs::path dir = fresh_dir("vprof-it", name);
  fs::copy_file(PLANTED_SOURCE, dir / "planted.cc");
  std::ofstream(dir / "CMakeLists.txt")
      << "cmake_minimum_required(VERSION 3.18)\nproject(planted CXX)\n"
      << "set(CMAKE_EXPORT_COMPILE_COMMANDS ON)\nset(CMAKE_BUILD_TYPE Release)\n"
      << "add_executable(planted planted.cc)\n"
      << "target_include_directories(planted PRIVATE " << VPROF_INCLUDE_DIR << ")\n"
      << "target_link_libraries(planted PRIVATE " << VPROF_RUNTIME_LIB << ")\n";
  std::string configure = "cmake -S " + dir.string() + " -B " + (dir / "b").string() + " -G Ninja > " +
                          (dir / "configure.log").string() + " 2>&1";
  EXPECT_EQ(std::system(configure.c_str()), 0);
  iterate::Config c;
  c.path = (dir / "vprof.json").string();
  c.dir = dir.string();
  c.root = "handle";
  c.build_dir = "b";
  c.build_command = "cmake --build b";
  c.run_command = "./b/planted " + victim + " " + std::to_string(seed);
  c.k = 2;
  c.max_iterations = 8;
  return c;
}

}  // namespace vprof::testing

#endif
