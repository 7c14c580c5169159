// Internal: the value-or-error type vprof's libraries return. Only main()
// prints and exits; libraries hand an Error up with a message that already
// names the file (and line, field or offset) that was wrong.
#ifndef VPROF_EXPECTED_H
#define VPROF_EXPECTED_H

#include <string>
#include <utility>
#include <variant>

namespace vprof {

struct Error {
  std::string message;  // one line: "<file>[:<where>]: <what was wrong>"
};

template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}      // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T &value() & { return std::get<0>(v_); }
  const T &value() const & { return std::get<0>(v_); }
  T &&value() && { return std::get<0>(std::move(v_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  const Error &error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing but may fail.
class Status {
 public:
  Status() = default;
  Status(Error e) : err_(std::move(e.message)), failed_(true) {}  // NOLINT
  static Status Ok() { return Status(); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return err_; }

 private:
  std::string err_;
  bool failed_ = false;
};

}  // namespace vprof

#endif  // VPROF_EXPECTED_H
