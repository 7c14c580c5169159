// The `vprof` program is a thin layer over the libraries: one file per
// subcommand (cmd_<name>.cc), each registering itself here with a static
// Registrar. A command's setup adds its options to its CLI11 subcommand and
// returns the function main() runs when that subcommand is chosen.
#ifndef VPROF_SRC_COMMAND_H
#define VPROF_SRC_COMMAND_H

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/process.h"

namespace vprof::cli {

// Exit codes, the same for every command. Scripts and CI jobs read them, so
// they never change meaning; docs/cli.md, "Exit codes", is their page.
inline constexpr int kExitOk = 0;            // done (gate: within bounds)
inline constexpr int kExitFinding = 1;       // gate: a regression, or --inconclusive fail;
                                             // analyze --fail-on: the data's quality is that bad
inline constexpr int kExitBadInput = 2;      // bad usage or bad input: fail()'s one line says what
inline constexpr int kExitInconclusive = 3;  // gate: the intervals cannot tell yet
inline constexpr int kExitSignal = kSignalExitBase;      // + N: signal N ended it (run: CMD; iterate: the session)

using Runner = std::function<int()>;
using Setup = std::function<Runner(CLI::App &sub)>;

struct Command {
  std::string name;
  std::string help;
  Setup setup;
};

std::vector<Command> &registry();

struct Registrar {
  Registrar(std::string name, std::string help, Setup setup) {
    registry().push_back({std::move(name), std::move(help), std::move(setup)});
  }
};

// Prints "vprof: error: <message>" on stderr and returns kExitBadInput.
int fail(const std::string &message);

// The name in `names` closest to `word` (edit distance at most a third of
// its length, at least 1), or "" when none is close: for "did you mean".
std::string close_match(const std::string &word, const std::vector<std::string> &names);

// Validators with a plain message ("must be at least 1, not 0"), instead of
// CLI11's ranges, which print the type's limits (300 digits for a double).
// The text is a number when it gets here or CLI11 says so itself.
inline std::string num_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
inline CLI::Validator number_check(std::string what, std::function<bool(double)> ok) {
  return CLI::Validator(
      [what, ok](std::string &s) -> std::string {
        char *end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || *end != '\0') return "'" + s + "' is not a number";
        return ok(v) ? std::string() : "must be " + what + ", not " + s;
      },
      what);
}
// For an option that takes a whole number: "must be a whole number between
// 1 and 100, not 50.5" rather than CLI11's "Could not convert".
inline CLI::Validator whole_check(std::string what, std::function<bool(double)> ok) {
  return number_check("a whole number " + what, [ok](double v) { return v == static_cast<double>(static_cast<long long>(v)) && ok(v); });
}
inline CLI::Validator whole_at_least(double lo) {
  return whole_check("at least " + num_text(lo), [lo](double v) { return v >= lo; });
}
inline CLI::Validator whole_between(double lo, double hi) {
  return whole_check("between " + num_text(lo) + " and " + num_text(hi),
                     [lo, hi](double v) { return v >= lo && v <= hi; });
}
inline CLI::Validator at_least(double lo) {
  return number_check("at least " + num_text(lo), [lo](double v) { return v >= lo; });
}
inline CLI::Validator above(double lo) {
  return number_check("greater than " + num_text(lo), [lo](double v) { return v > lo; });
}
inline CLI::Validator between(double lo, double hi) {
  return number_check("between " + num_text(lo) + " and " + num_text(hi),
                      [lo, hi](double v) { return v >= lo && v <= hi; });
}

// An existing directory, or why not, with the system's reason ("a: Too many
// levels of symbolic links", not CLI11's "Directory does not exist").
inline CLI::Validator existing_directory() {
  return CLI::Validator(
      [](std::string &s) -> std::string {
        struct stat st;
        if (::stat(s.c_str(), &st) != 0) return s + ": " + std::strerror(errno);
        if (!S_ISDIR(st.st_mode)) return s + ": not a directory";
        return "";
      },
      "DIR");
}

// Directory holding this executable (resolved through /proc/self/exe).
std::string self_dir();

// vprof's own files, from the install prefix or the build tree (cmd_config.cc).
struct Dirs {
  std::string include, lib, annotations;
};
Dirs vprof_dirs();

}  // namespace vprof::cli

#endif  // VPROF_SRC_COMMAND_H
