// The machine and build a measurement was taken on (build_info.h).
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include "common/build_info.h"
#include "common/process.h"
#include "common/version.h"

namespace vprof {
namespace {

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

BuildInfo build_info() {
  BuildInfo b;
  for (const char *v : {"VPROF_BUILD_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA"})
    if (b.commit.empty()) b.commit = env(v);
  if (b.commit.empty()) b.commit = first_line_of({"git", "rev-parse", "--verify", "-q", "HEAD"});
  b.compiler = !env("CXX").empty() ? env("CXX") : env("CC");
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      b.cpu = line.substr(line.find(':') + 2);
      break;
    }
  b.cpus = std::thread::hardware_concurrency();
  struct utsname u;
  if (uname(&u) == 0) b.kernel = std::string(u.sysname) + " " + u.release;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) b.host = host;
  std::ifstream cs("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::getline(cs, b.clock);
  std::time_t now = std::time(nullptr);
  char iso[32];
  std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  b.created = iso;
  b.vprof_version = kVersion;
  return b;
}

}  // namespace vprof
