#include "analyzer/pipeline/trace_dirs.h"

#include "analyzer/pipeline/run_summary.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyzer/read/recording.h"
#include "analyzer/read/trace_stream.h"

namespace vprof::analyzer {

// An input given by name must be a regular file: a FIFO would block the read.
Status regular_input(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error{path + ": not a regular file; not read"};
  return Status::Ok();
}

Expected<Names> names_for(const trace::TraceDir &d, const std::string &explicit_file, const Say &say) {
  const std::string &dir = d.path();
  const trace::ProcessFiles &processes = d.processes();
  for (const std::string &w : processes.warnings) say("warning: " + w);
  if (std::string e = trace::build_mismatch(processes, dir); !e.empty()) return Error{e};
  const auto &registered = processes.manifests;
  std::string path = explicit_file;
  if (path.empty()) {
    std::string in_dir = (std::filesystem::path(dir) / "manifest.json").string();
    if (std::filesystem::exists(in_dir)) path = in_dir;
  }
  if (path.empty()) {
    const std::set<std::string> paths = trace::manifest_paths(processes);
    if (paths.size() != 1 || !std::filesystem::exists(*paths.begin())) return Names{};
    path = *paths.begin();
    auto names = load_manifest(path);
    // Rewritten since by another instrumentation: no names rather than wrong ones.
    if (!names || trace::listed(processes, names->ids) == trace::Listed::None) return Names{};
    if (std::string e = trace::build_mismatch(processes, dir, names->ids); !e.empty()) return Error{e};
    say("names from " + path + ", the manifest the program was built with");
    return names;
  }
  if (Status s = regular_input(path); !s.ok()) return Error{s.message()};
  auto names = load_manifest(path);
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

bool summary_only(const std::string &dir) {
  std::error_code ec;
  return !trace::has_thread_files(dir) && std::filesystem::is_regular_file(dir + "/" + kRunSummaryFile, ec);
}

Expected<std::unique_ptr<Analysis>> analyze_dirs(const std::vector<std::string> &dirs, const AnalyzeOptions &opt,
                                                 const std::string &manifest, const Say &say, AnalyzedRuns *analyzed) {
  std::vector<std::unique_ptr<RunAnalysis>> runs;
  for (size_t i = 0; i < dirs.size(); ++i) {
    if (analyzed)
      if (auto kept = analyzed->find(dirs[i]); kept != analyzed->end() && kept->second->run == int(i)) {
        runs.push_back(std::move(kept->second));
        analyzed->erase(kept);
        continue;
      }
    // A session's run summarized before: the same run, without its trace
    // (which may be gone: keep_traces false). A summary that cannot be read
    // is said, and the trace read instead. Any other analysis takes a run
    // from its summary only when the trace's files are gone.
    const std::string summary = dirs[i] + "/" + kRunSummaryFile;
    std::error_code ec;
    if (opt.run_summaries ? std::filesystem::is_regular_file(summary, ec) : summary_only(dirs[i])) {
      auto r = load_run_summary(summary, dirs[i], int(i), opt);
      if (r) {
        (*r)->summarized = true;
        runs.push_back(std::move(r).value());
        continue;
      }
      say(fmt::format("warning: {}; reading the trace instead", r.error().message));
    }
    // Streamed: memory holds the merge's window, not the trace. A damaged
    // file costs its damaged part (the report's first line says what was
    // lost, a warning here says where); the run fails only when nothing of
    // it could be read.
    auto dir = trace::TraceDir::open(dirs[i]);
    if (!dir) return dir.error();
    std::shared_ptr<const trace::TraceDir> d = std::move(*dir);
    auto stream = trace::TraceStream::open(d);
    if (!stream) return stream.error();
    if ((*stream)->sources().empty()) return Error{(*stream)->first_error()};
    auto names = names_for(*d, i == 0 ? manifest : std::string(), say);
    if (!names) return names.error();
    auto r = analyze_run(**stream, std::move(*names), opt, int(i));
    if (!r) return r.error();
    DataLost lost = data_lost(**r);
    if (lost.any()) {
      if ((*stream)->summary().total_records == 0) return Error{(*stream)->first_error()};
      const trace::FileLoss &first = *std::find_if(
          (*r)->losses.begin(), (*r)->losses.end(), [](const auto &l) { return l.lost_anything(); });
      say(fmt::format("warning: {}: {} of {} trace files damaged; their damaged parts are left out (the report's "
                      "first line says what was lost); first: {}",
                      dirs[i], lost.damaged, lost.files, first.first));
    }
    std::set<std::string> programs;
    for (const trace::ThreadStream &t : (*stream)->summary().threads)
      if (!t.comm.empty()) programs.insert(t.comm);
    (*r)->programs.assign(programs.begin(), programs.end());
    runs.push_back(std::move(r).value());
  }
  // Runs of one program share a process name (run 0's: the base).
  const std::vector<std::string> &first = runs.front()->programs;
  for (size_t i = 1; i < runs.size(); ++i) {
    const std::vector<std::string> &programs = runs[i]->programs;
    if (programs.empty() || first.empty() || std::any_of(programs.begin(), programs.end(), [&](const std::string &p) {
          return std::binary_search(first.begin(), first.end(), p);
        }))
      continue;
    return Error{fmt::format("{} and {}: traces of different programs ({}; {}): analyze merges runs of one "
                             "program; compare two with vprof diff",
                             dirs[0], dirs[i], fmt::join(first, ", "), fmt::join(programs, ", "))};
  }
  // A repeat grafts nothing (RunAnalysis::repeat): a run whose trace says
  // which run it repeats (Recording::mark_repeat_of), when that run is read
  // before it.
  std::vector<std::string> read;  // the runs before, canonical
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string of = trace::repeat_of(dirs[i]);
    runs[i]->repeat = !of.empty() && std::find(read.begin(), read.end(), of) != read.end();
    std::error_code ec;
    read.push_back(std::filesystem::weakly_canonical(dirs[i], ec).string());
  }
  return combine(std::move(runs), opt);
}

void keep_runs(std::unique_ptr<Analysis> &a, AnalyzedRuns &analyzed, const std::string &except, const Say &say,
               bool summaries) {
  if (a)
    for (std::unique_ptr<RunAnalysis> &r : a->runs) {
      if (r->dir == except) continue;
      // Not a run reduced before (its cells let go): its rows' bounds are gone.
      if (summaries && !r->summarized && r->paths.row_start.size() == r->paths.rows.size() + 1) {
        Status s = save_run_summary(*r, r->dir + "/" + kRunSummaryFile);
        if (s) r->summarized = true;
        else if (say) say(fmt::format("warning: {}; the run's trace stays its only record", s.message()));
      }
      reduce_run(*r);
      analyzed[r->dir] = std::move(r);
    }
  drop(a);
}

}  // namespace vprof::analyzer
