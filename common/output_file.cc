#include "common/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include <vprof/trace_format.h>

#include "common/trace_dir_rules.h"

namespace vprof {

bool OutputFile::Buf::drain() {
  const char *p = pbase();
  while (p < pptr() && err_ == 0) {
    ssize_t n = ::write(fd_, p, size_t(pptr() - p));
    if (n > 0) p += n;
    else if (n < 0 && errno == EINTR) continue;
    else err_ = n < 0 ? errno : EIO;
  }
  setp(buf_, buf_ + sizeof buf_);
  return err_ == 0;
}

OutputFile::Buf::int_type OutputFile::Buf::overflow(int_type c) {
  if (!drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

OutputFile::OutputFile(std::string path, std::string dest, std::string tmp, int fd)
    : path_(std::move(path)), dest_(std::move(dest)), tmp_(std::move(tmp)), fd_(fd), buf_(fd), out_(&buf_) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

Status OutputFile::failed(int err) const {
  return Error{fmt::format("{}: cannot write: {}", path_, std::strerror(err))};
}

namespace {

// Temporary files of this destination left by a writer that was killed
// (DIR/.NAME.vprof-PID-XXXXXX whose PID is gone): removed. A live writer's
// are left alone.
void remove_orphans(const std::string &dir, const std::string &stem) {
  std::error_code ec;
  for (const auto &ent : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = ent.path().filename().string();
    if (name.compare(0, stem.size(), stem) != 0) continue;
    char *end = nullptr;
    long pid = std::strtol(name.c_str() + stem.size(), &end, 10);
    if (pid <= 0 || *end != '-') continue;
    if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH) ::unlink(ent.path().c_str());
  }
}

}  // namespace

Expected<std::unique_ptr<OutputFile>> OutputFile::open(const std::string &path) {
  namespace fs = std::filesystem;
  auto cannot = [&](int err) {
    return Error{fmt::format("{}: cannot write: {}", path, std::strerror(err))};
  };
  struct stat st;
  std::string dest = path;
  mode_t mode = 0;  // an existing file's, kept; else what a plain create would make
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Error{path + ": cannot write: it is a directory"};
    if (!S_ISREG(st.st_mode)) {  // a device or a FIFO: in place
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return cannot(errno);
      return std::unique_ptr<OutputFile>(new OutputFile(path, path, "", fd));
    }
    if (::access(path.c_str(), W_OK) != 0) return cannot(errno);
    mode = st.st_mode & 07777;
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);  // through a symlink: its target is replaced
    if (!ec) dest = real.string();
  }
  fs::path d = fs::path(dest).parent_path();
  const std::string dir = d.empty() ? std::string(".") : d.string();
  const std::string stem = "." + fs::path(dest).filename().string() + ".vprof-";
  remove_orphans(dir, stem);
  std::string tmpl = dir + "/" + stem + std::to_string(::getpid()) + "-XXXXXX";
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Error{fmt::format("{}: cannot write: cannot create a file beside it ({}): {}", path, dir,
                             std::strerror(err))};
  }
  if (mode == 0) {  // 0666 less the umask
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);
  return std::unique_ptr<OutputFile>(new OutputFile(path, dest, tmpl, fd));
}

Status OutputFile::commit() {
  if (committed_) return Status::Ok();
  out_.flush();
  if (!buf_.drain() || buf_.error()) return failed(buf_.error() ? buf_.error() : EIO);
  if (!tmp_.empty() && ::fsync(fd_) != 0) return failed(errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) return failed(errno);
  if (!tmp_.empty() && ::rename(tmp_.c_str(), dest_.c_str()) != 0) return failed(errno);
  committed_ = true;
  return Status::Ok();
}

Status OutputFile::status() {
  out_.flush();
  return buf_.error() ? failed(buf_.error()) : Status::Ok();
}

Status write_output(const std::string &path, const std::function<Status(std::ostream &)> &write) {
  auto f = OutputFile::open(path);
  if (!f) return f.error();
  Status s = write((*f)->stream());
  if (!s) {
    Status why = (*f)->status();  // the system's reason, when a write failed
    return why ? Status(Error{fmt::format("{}: {}", path, s.message())}) : why;
  }
  return (*f)->commit();
}

Status make_trace_dir(const std::string &dir) {
  char why[512];
  if (tracedir::foreign_link_above(dir.c_str(), why, sizeof why))  // before anything is made there
    return Error{fmt::format("{}: refused as a trace directory: it {}", dir, why)};
  std::error_code ec;
  const bool existed = std::filesystem::exists(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create the trace directory: {}", dir, ec.message())};
  if (!existed && geteuid() == 0 && chmod(dir.c_str(), VPROF_TRACE_DIR_MODE_AS_ROOT) != 0)
    return Error{fmt::format("{}: cannot make the trace directory writable by all: {}", dir,
                             std::strerror(errno))};
  if (tracedir::refuse_trace_dir(dir.c_str(), why, sizeof why))
    return Error{fmt::format("{}: refused as a trace directory: it {}", dir, why)};
  return Status::Ok();
}

}  // namespace vprof
