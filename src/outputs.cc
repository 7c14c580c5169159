#include "outputs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace vprof::cli {
namespace {

namespace fs = std::filesystem;

// Whether path can be written. "PATH: cannot write: why".
Status writable(const std::string &path) {
  if (access(path.c_str(), F_OK) == 0) {
    if (access(path.c_str(), W_OK) != 0)
      return Error{fmt::format("{}: cannot write: {}", path, std::strerror(errno))};
    return Status::Ok();
  }
  fs::path dir = fs::path(path).parent_path();
  std::string d = dir.empty() ? "." : dir.string();
  struct stat st;
  if (stat(d.c_str(), &st) != 0)
    return Error{fmt::format("{}: cannot write: {} ({})", path, std::strerror(errno), d)};
  if (!S_ISDIR(st.st_mode)) return Error{fmt::format("{}: cannot write: {} is not a directory", path, d)};
  if (access(d.c_str(), W_OK) != 0)
    return Error{fmt::format("{}: cannot write: {} ({})", path, std::strerror(errno), d)};
  return Status::Ok();
}

// p, with its directory's symlinks and dots resolved (the file itself may
// not exist yet).
fs::path resolved(const std::string &p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::path(p) : r;
}

bool within(const fs::path &p, const fs::path &dir) {
  auto d = dir.begin(), x = p.begin();
  for (; d != dir.end(); ++d, ++x)
    if (x == p.end() || *x != *d) return false;
  return true;
}

}  // namespace

Status check_outputs(const std::vector<OutputArg> &outs, const std::vector<std::string> &inputs) {
  struct In {
    std::string path;
    struct stat st;
    bool dir;
    fs::path real;
  };
  std::vector<In> in;
  for (const std::string &p : inputs) {
    In x{p, {}, false, {}};
    if (p.empty() || stat(p.c_str(), &x.st) != 0) continue;
    x.dir = S_ISDIR(x.st.st_mode);
    x.real = resolved(p);
    in.push_back(std::move(x));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto &[flag, path] = outs[i];
    if (path.empty() || path == "-") continue;
    struct stat st;
    const bool exists = stat(path.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) return Error{fmt::format("{} {}: is a directory", flag, path)};
    if (Status w = writable(path); !w.ok()) return Error{fmt::format("{} {}", flag, w.message())};
    const fs::path real = resolved(path);
    for (const In &x : in) {
      if (exists && x.st.st_dev == st.st_dev && x.st.st_ino == st.st_ino)
        return Error{fmt::format("{} {}: is an input ({}); the report would overwrite it; choose "
                                 "another file",
                                 flag, path, x.path)};
      if (x.dir && within(real, x.real))
        return Error{fmt::format("{} {}: lies in the trace directory {}, an input; write it "
                                 "elsewhere",
                                 flag, path, x.path)};
    }
    for (size_t j = 0; j < i; ++j)
      if (!outs[j].path.empty() && outs[j].path != "-" && resolved(outs[j].path) == real)
        return Error{fmt::format("{} and {} name the same file ({}); give each its own", outs[j].flag,
                                 flag, path)};
  }
  return Status::Ok();
}

}  // namespace vprof::cli
