#include "inputs.h"

#include <filesystem>

#include <fmt/format.h>

namespace vprof::cli {

void say_on_stderr(const std::string &line) { std::fprintf(stderr, "vprof: %s\n", line.c_str()); }

Expected<analyzer::Profile> load_input(const std::string &path, const std::string &root,
                                       unsigned threads) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return Error{path + ": no such file or directory"};
  if (fs::is_directory(path, ec)) {
    analyzer::AnalyzeOptions opt;
    opt.root = root;
    opt.threads = threads;
    opt.factors.bootstrap = 0;  // the diff has its own intervals
    auto a = analyze_dirs({path}, opt, "", say_on_stderr);
    if (!a) return a.error();
    analyzer::Profile p = analyzer::make_profile(**a, analyzer::build_info());
    analyzer::drop(*a);  // `vprof gate` analyzes run after run in one process
    // Measured elsewhere, maybe: only what this machine can say of it.
    p.build.commit.clear();
    p.source = path;
    return p;
  }
  if (Status s = regular_input(path); !s.ok()) return Error{s.message()};
  if (!analyzer::is_profile_file(path))
    return Error{path + ": neither a saved profile (vprof analyze --save) nor a trace directory"};
  auto p = analyzer::load_profile(path);
  if (p && !root.empty() && p->root != root)
    return Error{fmt::format("{}: saved with root {}, not --root {}", path, p->root, root)};
  return p;
}

}  // namespace vprof::cli
