// The `vprof` program is a thin layer over the libraries: one file per
// subcommand (cmd_<name>.cc), each registering itself here with a static
// Registrar. A command's setup adds its options to its CLI11 subcommand and
// returns the function main() runs when that subcommand is chosen.
//
// Exit codes (CLI.md): 0 success, 1 a finding (gate), 2 bad usage or bad input,
// reported as one line on stderr by fail().
#ifndef VPROF_SRC_COMMAND_H
#define VPROF_SRC_COMMAND_H

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace vprof::cli {

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

// Prints "vprof: error: <message>" on stderr and returns 2.
int fail(const std::string &message);

// Directory holding this executable (resolved through /proc/self/exe).
std::string self_dir();

// vprof's own files, from the install prefix or the build tree (cmd_config.cc).
struct Dirs {
  std::string include, lib, annotations;
};
Dirs vprof_dirs();

}  // namespace vprof::cli

#endif  // VPROF_SRC_COMMAND_H
