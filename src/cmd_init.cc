// vprof init [-p BUILD_DIR] --root FUNC --build CMD --run CMD [--sync PACK]... [-o vprof.json]
// Writes the session config `vprof iterate` reads (iterate/config.h).
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "clang_commands.h"
#include "command.h"
#include "iterate/config.h"

namespace vprof::cli {
namespace {

struct InitCli {
  iterate::Config c;
  std::string out = "vprof.json";
  bool force = false;
  bool runs_given = false;
};

// Every --sync names a pack that exists (or a pack file): one line naming the
// first that does not, with the closest name.
Status check_packs(const std::vector<std::string> &packs) {
  const std::string dir = vprof_dirs().annotations;
  std::string bad = iterate::unknown_sync_pack(packs, dir);
  if (bad.empty()) return Status::Ok();
  std::vector<std::string> names = iterate::sync_pack_names(dir);
  std::string near = close_match(bad, names);
  return Error{fmt::format("--sync {}: no such sync pack{} (packs: {}; or a path to a pack file)",
                           bad, near.empty() ? "" : fmt::format("; did you mean '{}'?", near),
                           fmt::join(names, ", "))};
}

int run(InitCli &o) {
  namespace fs = std::filesystem;
  if (Status s = check_packs(o.c.sync_packs); !s.ok()) return fail(s.message());
  if (fs::exists(o.out) && !o.force)
    return fail(fmt::format("{}: already exists (use --force to overwrite)", o.out));
  if (!fs::exists(fs::path(o.c.build_dir) / "compile_commands.json"))
    std::fprintf(stderr, "vprof: note: %s/compile_commands.json does not exist yet; the build "
                 "command must make it (CMAKE_EXPORT_COMPILE_COMMANDS=ON, or bear)\n",
                 o.c.build_dir.c_str());
  if (!o.runs_given) o.c.runs = iterate::runs_for_sample(o.c.sample);
  Status s = iterate::save_config(o.c, o.out);
  if (!s) return fail(s.message());
  // Read it back: the same validation `iterate` will apply.
  auto back = iterate::load_config(o.out);
  if (!back) return fail(back.error().message);
  std::printf("wrote %s\n", o.out.c_str());
  if (o.c.runs > 1)
    std::printf("each iteration runs the workload %d times into one trace%s\n", o.c.runs,
                o.runs_given ? "" : fmt::format(" (--sample {}: about {}% of a run's intervals count; --runs N to change)",
                                                o.c.sample, o.c.sample).c_str());
  return kExitOk;
}

Registrar reg("init", clang_command_help("init"),
              [](CLI::App &sub) -> Runner {
                auto o = std::make_shared<InitCli>();
                sub.add_option("-p,--build-dir", o->c.build_dir, "build directory with compile_commands.json");
                sub.add_option("--source-root", o->c.source_root,
                               "edit only files below this directory (default: the deepest directory holding "
                               "every compile-db source; relative to the config's directory)");
                sub.add_option("--root", o->c.root, "the function to break down first")->required();
                sub.add_option("--build", o->c.build_command, "the target's build command")->required();
                sub.add_option("--run", o->c.run_command,
                               "the workload to profile (runs with the recorder on)")->required();
                sub.add_option("--sync", o->c.sync_packs,
                               fmt::format("sync packs to wrap ({}; or a pack file's path); repeatable",
                                           fmt::join(iterate::sync_pack_names(vprof_dirs().annotations), ", ")));
                sub.add_option("-k", o->c.k, "factors selected per iteration")->check(whole_at_least(1));
                sub.add_option("-d", o->c.d, "minimum contribution of a selected factor")->check(between(0, 1));
                sub.add_option("-m", o->c.m, "body share that makes a function explained")
                    ->check(number_check("greater than 0 and at most 1", [](double v) { return v > 0 && v <= 1; }));
                sub.add_option("--exponent", o->c.exponent, "specificity exponent e")->check(at_least(0));
                sub.add_option("--max-iterations", o->c.max_iterations, "the session stops after this many iterations")->check(whole_at_least(1));
                sub.add_option("--sample", o->c.sample,
                               "windowed recording: each run records in windows covering about PCT percent of the "
                               "time (0: in full; docs/run.md)")
                    ->check(whole_between(0, 100))
                    ->type_name("PCT");
                sub.add_option("--runs", o->c.runs,
                               "workload runs per iteration, into one trace (default: 1; under --sample PCT, "
                               "100/PCT rounded up, to keep a full recording's interval count)")
                    ->check(whole_between(1, iterate::kMaxRuns))
                    ->each([o](const std::string &) { o->runs_given = true; });
                sub.add_option("--session-dir", o->c.session_dir,
                               "where the session keeps its iterations and reports (relative to the config's directory)");
                sub.add_option("-o,--output", o->out, "where to write");
                sub.add_flag("--force", o->force, "overwrite an existing file");
                return [o] { return run(*o); };
              });

}  // namespace
}  // namespace vprof::cli
