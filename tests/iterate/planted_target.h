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
#include "iterate/session.h"
#include "tests/support/temp_dir.h"

namespace vprof::testing {

inline std::string slurp(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A CMake project in `dir` that builds `exe` from `source` (already in dir;
// LANG C or CXX) against vprof's runtime and `libs`, configured into dir/b,
// and a session config for it: `root`, run `./b/EXE ARGS`, k = 2, 8
// iterations at most.
inline iterate::Config make_target_project(const std::filesystem::path &dir, const std::string &lang,
                                           const std::string &exe, const std::string &source,
                                           const std::string &libs, const std::string &root,
                                           const std::string &args) {
  std::ofstream(dir / "CMakeLists.txt")
      << "cmake_minimum_required(VERSION 3.18)\nproject(" << exe << " " << lang << ")\n"
      << "set(CMAKE_EXPORT_COMPILE_COMMANDS ON)\nset(CMAKE_BUILD_TYPE Release)\n"
      << "find_package(Threads REQUIRED)\n"
      << "add_executable(" << exe << " " << source << ")\n"
      << "target_include_directories(" << exe << " PRIVATE " << VPROF_INCLUDE_DIR << ")\n"
      << "target_link_libraries(" << exe << " PRIVATE " << VPROF_RUNTIME_LIB << " " << libs << ")\n";
  std::string configure = "cmake -S " + dir.string() + " -B " + (dir / "b").string() + " -G Ninja > " +
                          (dir / "configure.log").string() + " 2>&1";
  EXPECT_EQ(std::system(configure.c_str()), 0);
  iterate::Config c;
  c.path = (dir / "vprof.json").string();
  c.dir = dir.string();
  c.root = root;
  c.build_dir = "b";
  c.build_command = "cmake --build b";
  c.run_command = "./b/" + exe + " " + args;
  c.k = 2;
  c.max_iterations = 8;
  return c;
}

// `victim` is the stage the planted delay is called from; `seed` its run's seed.
inline iterate::Config make_planted_target(const std::string &name, const std::string &victim, int seed) {
  namespace fs = std::filesystem;
  fs::path dir = fresh_dir("vprof-it", name);
  fs::copy_file(PLANTED_SOURCE, dir / "planted.cc");
  return make_target_project(dir, "CXX", "planted", "planted.cc", "", "handle",
                             victim + " " + std::to_string(seed));
}

// A session's options for the test targets: vprof's packs and headers.
inline iterate::SessionOptions session_options() {
  iterate::SessionOptions o;
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.include_dir = VPROF_INCLUDE_DIR;
  return o;
}

// The session's decisions, a line each, for a failing test to print.
inline std::string decisions(const iterate::State &s) {
  std::string log;
  for (const iterate::Decision &d : s.decisions)
    log += "\n  iteration " + std::to_string(d.iteration) + ": " + d.factor + ": " + d.decision + " (" +
           d.reason + ")";
  return log;
}

// The session's top factor (rank 1), or null.
inline const analyzer::Factor *top_factor(const iterate::Outcome &out) {
  for (const auto &f : out.analysis->factors)
    if (f.rank == 1) return &f;
  return nullptr;
}

}  // namespace vprof::testing

#endif
