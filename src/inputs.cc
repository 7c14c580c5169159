#include "inputs.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyzer/read/process_files.h"
#include "analyzer/read/trace_stream.h"

namespace vprof::cli {

// An input given by name must be a regular file: a FIFO would block the read.
Status regular_input(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error{path + ": not a regular file; not read"};
  return Status::Ok();
}

// The manifest of a run: an explicit file, else TRACE_DIR/manifest.json, else
// the one the traced program registered (its instrumented code names it in
// the process files) if it is still that instrumentation's, else none (names
// fall back to fn#ID / site#ID). A manifest from another instrumentation than
// the program's is refused: it would put wrong names on every factor.
Expected<analyzer::Names> names_for(const std::string &dir, const std::string &explicit_file) {
  auto processes = trace::read_process_files(dir);
  for (const std::string &w : processes.warnings) std::fprintf(stderr, "vprof: warning: %s\n", w.c_str());
  if (std::string e = trace::build_mismatch(processes, dir); !e.empty()) return Error{e};
  const auto &registered = processes.manifests;
  std::string path = explicit_file;
  if (path.empty()) {
    std::string in_dir = (std::filesystem::path(dir) / "manifest.json").string();
    if (std::filesystem::exists(in_dir)) path = in_dir;
  }
  if (path.empty()) {
    const std::set<std::string> paths = trace::manifest_paths(processes);
    if (paths.size() != 1 || !std::filesystem::exists(*paths.begin())) return analyzer::Names{};
    path = *paths.begin();
    auto names = analyzer::load_manifest(path);
    // Rewritten since by another instrumentation: no names rather than wrong ones.
    if (!names || trace::listed(processes, names->ids) == trace::Listed::None) return analyzer::Names{};
    if (std::string e = trace::build_mismatch(processes, dir, names->ids); !e.empty()) return Error{e};
    std::fprintf(stderr, "vprof: names from %s, the manifest the program was built with\n", path.c_str());
    return names;
  }
  if (Status s = regular_input(path); !s.ok()) return Error{s.message()};
  auto names = analyzer::load_manifest(path);
  if (!names) return names;
  if (registered.empty() || names->ids.empty()) return names;  // nothing to check against
  if (trace::listed(processes, names->ids) == trace::Listed::None)
    return Error{path + ": manifest of another instrumentation (id " + names->manifest_id +
                 ") than the one the traced program was built with (its code registered " +
                 trace::unlisted(processes, names->ids) + ", none of them this manifest's; its manifest was written to " +
                 registered.begin()->second + "); pass that one with --manifest, or rebuild and rerun"};
  if (std::string e = trace::build_mismatch(processes, dir, names->ids); !e.empty()) return Error{e};
  return names;
}

Expected<std::unique_ptr<analyzer::Analysis>> analyze_dirs(const std::vector<std::string> &dirs,
                                                           const analyzer::AnalyzeOptions &opt,
                                                           const std::string &manifest) {
  std::vector<std::unique_ptr<analyzer::RunAnalysis>> runs;
  std::set<std::string> first_programs;  // run 0's process names: runs of one program share one
  for (size_t i = 0; i < dirs.size(); ++i) {
    // Streamed: memory holds the merge's window, not the trace. A damaged
    // file costs its damaged part (the report's first line says what was
    // lost, a warning here says where); the run fails only when nothing of
    // it could be read.
    auto stream = trace::TraceStream::open(dirs[i]);
    if (!stream) return stream.error();
    if ((*stream)->sources().empty()) return Error{(*stream)->first_error()};
    auto names = names_for(dirs[i], i == 0 ? manifest : std::string());
    if (!names) return names.error();
    auto r = analyzer::analyze_run(**stream, std::move(*names), opt, int(i));
    if (!r) return r.error();
    analyzer::DataLost lost = analyzer::data_lost(**r);
    if (lost.any()) {
      if ((*stream)->summary().total_records == 0) return Error{(*stream)->first_error()};
      const trace::FileLoss &first = *std::find_if(
          (*r)->losses.begin(), (*r)->losses.end(), [](const auto &l) { return l.lost_anything(); });
      std::fprintf(stderr,
                   "vprof: warning: %s: %zu of %zu trace files damaged; their damaged parts are "
                   "left out (the report's first line says what was lost); first: %s\n",
                   dirs[i].c_str(), lost.damaged, lost.files, first.first.c_str());
    }
    std::set<std::string> programs;
    for (const trace::ThreadStream &t : (*stream)->summary().threads)
      if (!t.comm.empty()) programs.insert(t.comm);
    if (i == 0) {
      first_programs = programs;
    } else if (!programs.empty() && !first_programs.empty() &&
               std::none_of(programs.begin(), programs.end(), [&](const std::string &p) { return first_programs.count(p); })) {
      auto list = [](const std::set<std::string> &s) { return fmt::format("{}", fmt::join(s, ", ")); };
      return Error{fmt::format("{} and {}: traces of different programs ({}; {}): analyze merges runs of one "
                               "program; compare two with vprof diff",
                               dirs[0], dirs[i], list(first_programs), list(programs))};
    }
    runs.push_back(std::move(r).value());
  }
  return analyzer::combine(std::move(runs), opt);
}

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
    auto a = analyze_dirs({path}, opt, "");
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
