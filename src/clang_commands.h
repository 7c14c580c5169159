// The subcommands that need clang (LibTooling) are a second program,
// vprof-clang, installed beside vprof; `vprof NAME ...` for one of them execs
// vprof-clang with the same arguments. Loading libclang-cpp and libLLVM costs
// a process about 25 ms and 3 900 page faults (relocations and static
// constructors) before main(), which `vprof analyze`, `run`, `dump` and
// `config` never needed (docs/performance.md). One table, so that both
// programs list the same commands with the same help.
#ifndef VPROF_SRC_CLANG_COMMANDS_H
#define VPROF_SRC_CLANG_COMMANDS_H

#include <cstring>

namespace vprof::cli {

struct ClangCommand {
  const char *name, *help;
};

inline constexpr ClangCommand kClangCommands[] = {
    {"callgraph", "static call graph below a function, with heights"},
    {"init", "write vprof.json, the session config for `vprof iterate`"},
    {"instrument", "rewrite the target's sources: function probes, call sites, sync wrappers"},
    {"iterate", "break the top factors down, one level per run, until explained"},
    {"restore", "put every rewritten source file back, byte for byte"},
};

inline const char *clang_command_help(const char *name) {
  for (const ClangCommand &c : kClangCommands)
    if (std::strcmp(c.name, name) == 0) return c.help;
  return "";
}

inline constexpr const char *kClangProgram = "vprof-clang";

}  // namespace vprof::cli

#endif  // VPROF_SRC_CLANG_COMMANDS_H
