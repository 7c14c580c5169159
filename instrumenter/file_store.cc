#include "instrumenter/file_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/SHA1.h>
#include <nlohmann/json.hpp>

namespace vprof::instr {

namespace {

std::string state_path(const std::string &b) { return b + "/.vprof/state.json"; }
std::string originals_dir(const std::string &b) { return b + "/.vprof/originals"; }

bool read_all(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

// Writes through a temporary in the same directory and rename(), keeping the
// file's mode: a reader never sees half a file.
Status write_atomically(const std::string &path, const std::string &data) {
  struct stat st {};
  mode_t mode = 0644;
  if (stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
  std::string tmp = path + ".vprof-tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return Error{path + ": cannot write: " + std::strerror(errno)};
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return Error{path + ": cannot write: " + why};
    }
    done += static_cast<size_t>(n);
  }
  fchmod(fd, mode);
  if (close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return Error{path + ": cannot replace: " + why};
  }
  return Status::Ok();
}

bool mkdirs(const std::string &dir) {
  for (size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') {
      std::string p = dir.substr(0, i);
      if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  return true;
}

}  // namespace

std::string sha1_hex(const std::string &data) {
  auto digest = llvm::SHA1::hash(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

Expected<StoreState> read_state(const std::string &build_dir) {
  StoreState st;
  std::string text;
  if (!read_all(state_path(build_dir), text)) return st;  // nothing instrumented
  try {
    auto j = nlohmann::json::parse(text);
    for (const auto &f : j.at("files"))
      st.files.push_back({f.at("path").get<std::string>(), f.at("original_sha1").get<std::string>(),
                          f.at("instrumented_sha1").get<std::string>()});
  } catch (const std::exception &e) {
    return Error{state_path(build_dir) + ": damaged: " + e.what()};
  }
  return st;
}

Expected<std::map<std::string, std::string>> read_originals(const std::string &build_dir, const StoreState &state) {
  std::map<std::string, std::string> out;
  for (const auto &f : state.files) {
    std::string text;
    std::string p = originals_dir(build_dir) + "/" + f.original_sha1;
    if (!read_all(p, text)) return Error{p + ": the saved original of " + f.path + " is missing"};
    if (sha1_hex(text) != f.original_sha1) return Error{p + ": the saved original of " + f.path + " is damaged"};
    out[f.path] = text;
  }
  return out;
}

Status commit(const std::string &build_dir, const StoreState &old_state,
              const std::map<std::string, std::string> &originals,
              const std::map<std::string, std::string> &rewritten, size_t *files_written) {
  // 1. Check everything before changing anything.
  std::map<std::string, std::string> want;     // path -> contents after the commit
  std::map<std::string, std::string> current;  // path -> contents now
  for (const auto &f : old_state.files) {
    std::string now;
    if (!read_all(f.path, now)) return Error{f.path + ": cannot read (instrumented earlier)"};
    std::string sum = sha1_hex(now);
    if (sum != f.instrumented_sha1 && sum != f.original_sha1)
      return Error{f.path + ": changed since it was instrumented; restore it by hand or revert the change"};
    current[f.path] = now;
    want[f.path] = originals.at(f.path);
  }
  for (const auto &[path, text] : rewritten) {
    if (!current.count(path)) {
      std::string now;
      if (!read_all(path, now)) return Error{path + ": cannot read"};
      current[path] = now;
    }
    if (access(path.c_str(), W_OK) != 0) return Error{path + ": not writable"};
    want[path] = text;
  }
  // 2. Save originals and the new state (old originals stay until the end).
  std::string odir = originals_dir(build_dir);
  if (!mkdirs(odir)) return Error{odir + ": cannot create: " + std::strerror(errno)};
  nlohmann::json files = nlohmann::json::array();
  std::set<std::string> keep;
  for (const auto &[path, text] : rewritten) {
    const std::string &orig = originals.at(path);
    std::string sum = sha1_hex(orig);
    keep.insert(sum);
    if (auto s = write_atomically(odir + "/" + sum, orig); !s) return Error{s.message()};
    files.push_back({{"path", path}, {"original_sha1", sum}, {"instrumented_sha1", sha1_hex(text)}});
  }
  // 3. Write the tree; on failure put back what was written.
  std::vector<std::string> written;
  for (const auto &[path, text] : want) {
    if (current[path] == text) continue;
    if (auto s = write_atomically(path, text); !s) {
      for (const auto &w : written) (void)write_atomically(w, current[w]);
      return Error{s.message() + " (nothing was changed)"};
    }
    written.push_back(path);
  }
  if (files_written) *files_written = written.size();
  // 4. Record the new state; drop originals no longer needed.
  if (rewritten.empty()) {
    unlink(state_path(build_dir).c_str());
  } else {
    nlohmann::json j = {{"schema_version", 1}, {"files", files}};
    if (auto s = write_atomically(state_path(build_dir), j.dump(2) + "\n"); !s) {
      for (const auto &w : written) (void)write_atomically(w, current[w]);
      return Error{s.message() + " (nothing was changed)"};
    }
  }
  for (const auto &f : old_state.files)
    if (!keep.count(f.original_sha1)) unlink((odir + "/" + f.original_sha1).c_str());
  return Status::Ok();
}

}  // namespace vprof::instr
