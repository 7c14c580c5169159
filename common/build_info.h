// The machine and the build a measurement was taken on: a saved profile
// records it (analyzer/profile), the gate's history keys its runs by it.
#ifndef VPROF_COMMON_BUILD_INFO_H
#define VPROF_COMMON_BUILD_INFO_H

#include <string>

namespace vprof {

// Empty fields when unknown.
struct BuildInfo {
  std::string commit, compiler, cpu, kernel, host, clock, created, vprof_version;
  unsigned cpus = 0;
};

// The commit (VPROF_BUILD_COMMIT, GITHUB_SHA, CI_COMMIT_SHA, else `git
// rev-parse HEAD` in the current directory), compiler ($CXX, else $CC), CPU,
// kernel, host, clock source and the time now.
BuildInfo build_info();

}  // namespace vprof

#endif  // VPROF_COMMON_BUILD_INFO_H
