#include "instrumenter/compile_db.h"

#include <algorithm>
#include <map>
#include <set>

#include <clang/Driver/Options.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/JSONCompilationDatabase.h>
#include <llvm/Option/ArgList.h>
#include <llvm/Option/OptTable.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

namespace vprof::instr {

namespace {

std::string real_path(const std::string &dir, const std::string &file) {
  llvm::SmallString<256> p(file);
  if (!llvm::sys::path::is_absolute(p)) {
    llvm::SmallString<256> d(dir);
    llvm::sys::path::append(d, file);
    p = d;
  }
  llvm::SmallString<256> real;
  if (!llvm::sys::fs::real_path(p, real)) return std::string(real.str());
  llvm::sys::path::remove_dots(p, true);
  return std::string(p.str());
}

bool looks_like_c(const std::vector<std::string> &args, const std::string &file) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-x") return args[i + 1] == "c";
  return llvm::sys::path::extension(file) == ".c";
}

// Drops what clang's driver would reject: unknown options (gcc-only flags such
// as -fno-tree-vrp) and output/dependency flags that make no sense for a parse.
std::vector<std::string> sanitize(const std::vector<std::string> &in, std::set<std::string> &dropped) {
  const llvm::opt::OptTable &table = clang::driver::getDriverOptTable();
  std::vector<std::string> out;
  if (in.empty()) return out;
  out.push_back(in[0]);
  for (size_t i = 1; i < in.size(); ++i) {
    const std::string &a = in[i];
    if (a == "-o" || a == "-MF" || a == "-MT" || a == "-MQ") {
      ++i;
      continue;
    }
    if (a == "-c" || a == "-MD" || a == "-MMD" || a == "-M" || a == "-MM" || a == "-MP") continue;
    if (a.size() > 1 && a[0] == '-') {
      const char *argv[] = {a.c_str()};
      unsigned missing_index = 0, missing_count = 0;
      llvm::opt::InputArgList parsed = table.ParseArgs(argv, missing_index, missing_count);
      bool unknown = parsed.hasArg(clang::driver::options::OPT_UNKNOWN);
      // gcc's -Wfoo=N spellings parse as -W<name> in clang but still error.
      if (!unknown && a.rfind("-W", 0) == 0 && a.find('=') != std::string::npos &&
          a.rfind("-Wl,", 0) != 0 && a.rfind("-Wa,", 0) != 0 && a.rfind("-Wp,", 0) != 0 &&
          a.rfind("-Werror=", 0) != 0 && a.rfind("-Wno-error=", 0) != 0)
        unknown = true;
      if (unknown) {
        dropped.insert(a);
        continue;
      }
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

Expected<CompileDb> load_compile_db(const std::string &build_dir) {
  std::string err;
  std::string path = build_dir + "/compile_commands.json";
  auto db = clang::tooling::JSONCompilationDatabase::loadFromFile(
      path, err, clang::tooling::JSONCommandLineSyntax::AutoDetect);
  if (!db) return Error{path + ": " + (err.empty() ? "cannot read the compilation database" : err)};
  CompileDb out;
  std::set<std::string> seen, dropped;
  // The tree is where the sources are as the database names them: a source
  // that is a symbolic link to a file elsewhere (another project's) is not
  // the tree's, and must neither pull the source root up to a directory the
  // two share (its journal, its restore) nor be rewritten through the link.
  const auto commands = db->getAllCompileCommands();
  std::string named_root;
  bool first = true;
  for (const auto &cmd : commands) {
    llvm::SmallString<256> p(cmd.Filename);
    if (!llvm::sys::path::is_absolute(p)) {
      llvm::SmallString<256> d(cmd.Directory);
      llvm::sys::path::append(d, cmd.Filename);
      p = d;
    }
    llvm::sys::path::remove_dots(p, true);
    const std::string dir = llvm::sys::path::parent_path(p).str();
    if (first) {
      named_root = dir;
      first = false;
    }
    while (!named_root.empty() && dir != named_root && dir.compare(0, named_root.size() + 1, named_root + "/") != 0)
      named_root = llvm::sys::path::parent_path(named_root).str();
  }
  llvm::SmallString<256> real_root;
  const std::string tree = !named_root.empty() && !llvm::sys::fs::real_path(named_root, real_root)
                               ? std::string(real_root.str())
                               : named_root;
  for (const auto &cmd : commands) {
    std::string file = real_path(cmd.Directory, cmd.Filename);
    if (!tree.empty() && tree != "/" && file.compare(0, tree.size() + 1, tree + "/") != 0) {
      out.outside.push_back(cmd.Filename + " (" + file + ")");
      continue;
    }
    if (!seen.insert(file).second) {
      ++out.duplicates_dropped;
      continue;
    }
    CompileEntry e;
    e.file = file;
    e.directory = cmd.Directory;
    e.is_c = looks_like_c(cmd.CommandLine, file);
    // Drop the input however it is spelled (bear writes "file" absolute but
    // the argument relative), then append it once as its real path.
    std::vector<std::string> args;
    for (size_t i = 0; i < cmd.CommandLine.size(); ++i) {
      const std::string &a = cmd.CommandLine[i];
      bool input = i > 0 && !a.empty() && a[0] != '-' && (a == cmd.Filename || real_path(cmd.Directory, a) == file);
      if (!input) args.push_back(a);
    }
    e.arguments = sanitize(args, dropped);
    e.arguments.push_back(file);
    out.entries.push_back(std::move(e));
  }
  if (out.entries.empty()) return Error{path + ": no entries"};
  std::sort(out.entries.begin(), out.entries.end(),
            [](const CompileEntry &a, const CompileEntry &b) { return a.file < b.file; });
  // Deepest common directory of all sources: only files below it are edited.
  std::string root = llvm::sys::path::parent_path(out.entries[0].file).str();
  for (const auto &e : out.entries)
    while (!root.empty() && e.file.compare(0, root.size() + 1, root + "/") != 0)
      root = llvm::sys::path::parent_path(root).str();
  out.common_root = root.empty() ? "/" : root;
  out.dropped_flags.assign(dropped.begin(), dropped.end());
  return out;
}

}  // namespace vprof::instr
