// vprof callgraph -p BUILD_DIR --root FUNC [--json FILE] [-j N] [--no-cache]
// The static call graph below FUNC (instrumenter/callgraph.h): a table of
// functions by height on stdout, JSON for the analyzer with --json.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "common/output_file.h"
#include "clang_commands.h"
#include "command.h"
#include "instrumenter/callgraph.h"

namespace vprof::cli {
namespace {

struct CallgraphCli {
  std::string build_dir = ".", root, json;
  unsigned jobs = 0;
  bool quiet = false, no_cache = false;
};

int run(const CallgraphCli &o) {
  instr::CallGraphOptions co;
  co.build_dir = o.build_dir;
  co.root = o.root;
  co.jobs = o.jobs;
  co.cache = !o.no_cache;
  bool tty = isatty(2);
  if (!o.quiet)
    co.progress = [tty](size_t done, size_t total) {
      if (tty) std::fprintf(stderr, "\rvprof: parsed %zu/%zu files", done, total);
      else if (done % 100 == 0) std::fprintf(stderr, "vprof: parsed %zu/%zu files\n", done, total);
    };
  auto g = instr::build_callgraph(co);
  if (tty && !o.quiet) std::fprintf(stderr, "\n");
  if (!g) return fail(g.error().message);
  if (!o.quiet && g->files_from_cache > 0)
    std::fprintf(stderr, "vprof: %zu of %zu files from the call-graph cache\n", g->files_from_cache, g->files_parsed);
  auto j = instr::callgraph_json(*g);
  if (!o.json.empty()) {
    Status s = write_output(o.json, [&](std::ostream &out) {
      out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return Status::Ok();
    });
    if (!s) return fail(s.message());
  }
  std::printf("%-7s %s\n", "height", "function");
  for (const auto &f : j["functions"])
    std::printf("%-7d %s  (%s:%u)\n", f["height"].get<int>(), f["name"].get<std::string>().c_str(),
                f["file"].get<std::string>().c_str(), f["line"].get<unsigned>());
  return kExitOk;
}

Registrar reg("callgraph", clang_command_help("callgraph"), [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<CallgraphCli>();
  sub.add_option("-p,--build-dir", o->build_dir, "directory holding compile_commands.json");
  sub.add_option("--root", o->root, "qualified name of the root function")->required();
  sub.add_option("--json", o->json, "write the graph as JSON (docs/interfaces.md)");
  sub.add_option("-j,--jobs", o->jobs, "parallel parses (0: one per core)");
  sub.add_flag("-q,--quiet", o->quiet, "no progress");
  sub.add_flag("--no-cache", o->no_cache, "parse every unit, reading and writing no cached definitions");
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
