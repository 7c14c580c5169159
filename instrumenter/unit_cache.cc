#include "instrumenter/unit_cache.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/trace_dir_rules.h"
#include "instrumenter/journal.h"

namespace vprof::instr {

using json = nlohmann::json;

namespace {
constexpr size_t kKeptSettings = 3;  // settings directories kept, this one included
}

std::string this_vprof() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  auto size = std::filesystem::file_size(self, ec);
  auto time = std::filesystem::last_write_time(self, ec).time_since_epoch().count();
  return self.string() + " " + std::to_string(size) + " " + std::to_string(time);
}

UnitCache::UnitCache(const std::string &dir, const std::string &settings,
                     std::function<std::string(const std::string &)> content_of, bool read_only)
    : content_of_(std::move(content_of)), read_only_(read_only) {
  // The old settings' directories would otherwise pile up (157 MiB each of
  // scans on MariaDB).
  namespace fs = std::filesystem;
  dir_ = dir + "/" + sha1_hex(settings).substr(0, 16);
  // Entries steer what vprof does, and it writes and prunes there: a cache
  // directory another user could plant links or entries in is not used (the
  // trace directories' rules: vprof as root on another user's tree parses),
  // looked at before anything is made in it and after.
  std::error_code ec;
  auto refused = [&] {
    char why[512];
    for (const std::string &d : {fs::path(dir).parent_path().string(), dir, dir_})
      if (fs::symlink_status(d, ec).type() != fs::file_type::not_found &&
          tracedir::refuse_trace_dir(d.c_str(), why, sizeof why))
        return true;
    return false;
  };
  if (!read_only_ && !refused()) fs::create_directories(dir_, ec);
  off_ = refused();
  if (read_only_ || off_) return;
  fs::last_write_time(dir_, fs::file_time_type::clock::now(), ec);
  std::vector<std::pair<fs::file_time_type, fs::path>> dirs;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && e.path() != fs::path(dir_)) dirs.emplace_back(e.last_write_time(ec), e.path());
  std::sort(dirs.begin(), dirs.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  for (size_t i = kKeptSettings - 1; i < dirs.size(); ++i) fs::remove_all(dirs[i].second, ec);
}

std::string UnitCache::path_of(const CompileEntry &unit) const {
  std::string k = unit.directory + '\n' + unit.file + '\n';
  for (const auto &a : unit.arguments) k += a + '\n';
  return dir_ + "/" + sha1_hex(k) + ".json";
}

std::string UnitCache::file_sha1(const std::string &path) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = sha1_.find(path); it != sha1_.end()) return it->second;
  }
  std::string sum = std::filesystem::exists(path) ? sha1_hex(content_of_(path)) : "";
  std::lock_guard<std::mutex> l(mu_);
  return sha1_.emplace(path, sum).first->second;
}

std::optional<UnitCache::Entry> UnitCache::get(const CompileEntry &unit) {
  if (off_) return std::nullopt;
  std::ifstream in(path_of(unit), std::ios::binary);
  if (!in) return std::nullopt;
  try {
    json j = json::parse(in);
    Entry e;
    for (const auto &d : j.at("files_read")) {
      e.files_read.push_back(d.at(0).get<std::string>());
      if (file_sha1(e.files_read.back()) != d.at(1).get<std::string>()) return std::nullopt;
    }
    e.payload = std::move(j.at("payload"));
    return e;
  } catch (const json::exception &) {
    return std::nullopt;  // a damaged entry is a miss; the unit is parsed again
  }
}

void UnitCache::put(const CompileEntry &unit, const std::vector<std::string> &files_read, const json &payload) {
  if (read_only_ || off_) return;
  json files = json::array();
  for (const auto &f : files_read) {
    std::string sum = file_sha1(f);
    if (sum.empty()) return;  // a file that is gone: nothing to check an entry by
    files.push_back({f, sum});
  }
  const json j = {{"file", unit.file}, {"files_read", files}, {"payload", payload}};
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return;
  const std::string path = path_of(unit);
  const std::string tmp =
      path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(std::hash<std::string>{}(unit.file));
  {
    std::ofstream out(tmp, std::ios::binary);
    out << j.dump();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace vprof::instr
