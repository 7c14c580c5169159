// A report or profile written whole or not at all. The bytes go to a
// temporary file next to the destination (DIR/.NAME.vprof-PID-XXXXXX) and are
// renamed over it only when every write, the flush and fsync succeeded: a
// full disk, a quota or a kill leaves the previous file as it was (a CI
// baseline refreshed in place) and no partial one. Errors name the path and
// the system's reason ("out.json: cannot write: No space left on device").
// A killed writer's temporary file is removed by the next write of NAME.
//
// A destination that is not a regular file (/dev/null, /dev/stdout, a FIFO)
// is written in place: renaming over it would replace the device. An existing
// file keeps its permissions.
#ifndef VPROF_COMMON_OUTPUT_FILE_H
#define VPROF_COMMON_OUTPUT_FILE_H

#include <functional>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

#include "common/expected.h"

namespace vprof {

class OutputFile {
 public:
  // Creates the temporary file (or opens a non-regular destination).
  static Expected<std::unique_ptr<OutputFile>> open(const std::string &path);
  ~OutputFile();  // not committed: the temporary file is removed
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  std::ostream &stream() { return out_; }
  // Flushes, syncs and renames over the destination; the first failure of
  // any write so far is the error.
  Status commit();
  // The first write's failure so far, as "PATH: cannot write: why"; ok if none.
  Status status();

 private:
  class Buf : public std::streambuf {
   public:
    explicit Buf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
    int error() const { return err_; }
    bool drain();

   protected:
    int_type overflow(int_type c) override;
    int sync() override { return drain() ? 0 : -1; }

   private:
    int fd_;
    int err_ = 0;
    char buf_[1 << 16];
  };
  OutputFile(std::string path, std::string dest, std::string tmp, int fd);
  Status failed(int err) const;

  std::string path_;  // as the user named it, for messages
  std::string dest_;  // the file tmp_ replaces: path_, or a symlink's target
  std::string tmp_;   // empty: written in place (a device, a FIFO)
  int fd_;
  Buf buf_;
  std::ostream out_;
  bool committed_ = false;
};

// Opens path, lets write() fill it, commits: the whole file or an error.
Status write_output(const std::string &path, const std::function<Status(std::ostream &)> &write);

// Creates a trace directory (and its parents) for a program about to record.
// Made by root, it is writable by all and sticky, as /tmp is (1777): a
// server that drops root (httpd's children as daemon, PostgreSQL's as
// postgres) makes its threads' files as its new user, and no user can
// remove another's. A directory that exists is left as it is.
Status make_trace_dir(const std::string &dir);

}  // namespace vprof

#endif  // VPROF_COMMON_OUTPUT_FILE_H
