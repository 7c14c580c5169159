// vprof instrument -p BUILD_DIR (--function QUALNAME)... [--sync PACK]... [--config vprof.json] [--keep-ids M]
//                  [--dormant-probes [--root FUNC]] [--dry-run]
// Rewrites the target's sources in place (instrumenter/instrument.h); prints
// progress and a summary on stderr, and with --dry-run the diff on stdout.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "common/process.h"
#include "clang_commands.h"
#include "command.h"
#include "instrumenter/instrument.h"
#include "iterate/config.h"

namespace vprof::cli {
namespace {

struct InstrumentCli {
  std::string build_dir;  // "": the config's, else "."
  std::string config;
  std::vector<std::string> functions, packs;
  std::string source_root;
  std::string keep_ids, root;
  bool dry_run = false, all_files = false, quiet = false, verbose = false, dormant = false;
  unsigned jobs = 0;
};

// Unified diff of one file, by diff(1): the tool users read diffs with.
void print_diff(const instr::FileChange &c) {
  char a[] = "/tmp/vprof-diff-a-XXXXXX", b[] = "/tmp/vprof-diff-b-XXXXXX";
  int fa = mkstemp(a), fb = mkstemp(b);
  if (fa < 0 || fb < 0) return;
  (void)!write(fa, c.before.data(), c.before.size());
  (void)!write(fb, c.after.data(), c.after.size());
  close(fa);
  close(fb);
  std::fflush(stdout);
  SpawnOptions o;
  o.search_path = true;
  (void)run_program({"diff", "-u", "--label", "a" + c.path, "--label", "b" + c.path, a, b}, o);
  unlink(a);
  unlink(b);
}

int run(const InstrumentCli &o) {
  std::string source_root = o.source_root;
  instr::InstrumentOptions io;
  io.build_dir = o.build_dir.empty() ? "." : o.build_dir;
  io.functions = o.functions;
  io.sync_packs = o.packs;
  io.all_files = o.all_files;
  if (!o.config.empty()) {
    // The session config supplies what the command line leaves out: the
    // build directory, the sync packs, and whether to wrap them everywhere.
    auto c = iterate::load_config(o.config);
    if (!c) return fail(c.error().message);
    if (o.build_dir.empty()) io.build_dir = c->abs(c->build_dir);
    if (o.source_root.empty()) source_root = c->abs_source_root();
    for (const auto &p : c->sync_packs)
      if (std::find(io.sync_packs.begin(), io.sync_packs.end(), p) == io.sync_packs.end())
        io.sync_packs.push_back(p);
    io.all_files = io.all_files || c->sync_everywhere;
  }
  const Dirs dirs = vprof_dirs();
  io.annotations_dir = dirs.annotations;
  io.source_root = source_root;
  io.excluded_dirs = {dirs.include};  // vprof's own headers are never edited
  io.dry_run = o.dry_run;
  io.jobs = o.jobs;
  io.keep_ids_from = o.keep_ids;
  io.dormant = o.dormant;
  io.root = o.root;
  bool tty = isatty(2);
  if (!o.quiet)
    io.progress = [tty](size_t done, size_t total, const std::string &file) {
      if (tty) std::fprintf(stderr, "\rvprof: parsed %zu/%zu files", done, total);
      // Logs get a line per 50 files only: a small run's error stays one line.
      else if (done % 50 == 0) std::fprintf(stderr, "vprof: parsed %zu/%zu files (%s)\n", done, total, file.c_str());
    };
  auto r = instr::instrument(io);
  if (tty && !o.quiet) std::fprintf(stderr, "\n");
  if (!r) return fail(r.error().message);
  // What fails a real run fails a dry one the same way.
  if (!r->undefined.empty()) return fail(r->undefined.front());
  if (!r->opaque.empty()) return fail(instr::fmt_opaque(r->opaque.front()));
  if (o.dry_run)
    for (const auto &c : r->changes) print_diff(c);
  if (o.verbose)
    for (const auto &n : r->notes) std::fprintf(stderr, "vprof: note: %s\n", n.c_str());
  if (!o.quiet) {
    std::fprintf(stderr,
                 "vprof: %s %zu functions, %zu call sites, %zu sync sites in %zu files "
                 "(%zu of %zu translation units parsed",
                 o.dry_run ? "would instrument" : "instrumented", r->functions, r->call_sites, r->sync_sites,
                 r->changes.size(), r->files_parsed, r->files_in_db);
    if (r->files_from_cache)
      std::fprintf(stderr, ", %zu of them from the scan cache", r->files_from_cache);
    if (r->duplicates_dropped) std::fprintf(stderr, ", %zu duplicate entries ignored", r->duplicates_dropped);
    std::fprintf(stderr, ")\n");
    if (r->skipped_macro_sites || !r->notes.empty())
      std::fprintf(stderr, "vprof: %zu sites left alone (%zu inside macro bodies); --verbose lists them\n",
                   r->notes.size(), r->skipped_macro_sites);
    for (const auto &f : r->outside)
      std::fprintf(stderr, "vprof: %s: a link to a file outside the tree; not parsed, not rewritten\n", f.c_str());
    if (!r->dropped_flags.empty()) {
      std::string flags;
      for (const auto &f : r->dropped_flags) flags += " " + f;
      std::fprintf(stderr, "vprof: flags clang does not know were ignored while parsing:%s\n", flags.c_str());
    }
    if (!o.dry_run) std::fprintf(stderr, "vprof: manifest %s\n", r->manifest_path.c_str());
  }
  return kExitOk;
}

Registrar reg("instrument", clang_command_help("instrument"),
              [](CLI::App &sub) -> Runner {
                auto o = std::make_shared<InstrumentCli>();
                sub.add_option("-p,--build-dir", o->build_dir,
                               "directory holding compile_commands.json (default: --config's build_dir, else .)");
                sub.add_option("--function", o->functions,
                               "qualified name (ns::C::f, f(int), path/file.c:f); repeatable");
                sub.add_option("--sync", o->packs, "sync pack name (annotations/NAME.json) or path; repeatable");
                sub.add_option("--config", o->config,
                               "take the build dir (unless -p), sync packs and sync_everywhere from vprof.json");
                sub.add_option("--source-root", o->source_root, "edit only files below this directory");
                sub.add_option("--keep-ids", o->keep_ids,
                               "keep the function and call-site ids of this earlier manifest (BUILD/.vprof/"
                               "manifest.json will do: it is read first): files whose selection did not change "
                               "keep their text, and are not rebuilt");
                sub.add_flag("--dormant-probes", o->dormant,
                             "probes a run may leave off (VPROF_DORMANT): each tests its id's bit first");
                sub.add_option("--root", o->root,
                               "with --dormant-probes: the analysis root, recorded from its entry in every window "
                               "(the other bodies run their original copy between windows)");
                sub.add_flag("--all-files", o->all_files, "parse every translation unit (sync wrappers everywhere)");
                sub.add_option("-j,--jobs", o->jobs, "parallel parses (0: one per core)");
                sub.add_flag("--dry-run", o->dry_run, "print the diff; change nothing");
                sub.add_flag("-q,--quiet", o->quiet, "no progress or summary");
                sub.add_flag("-v,--verbose", o->verbose, "list the sites left alone and why");
                return [o] { return run(*o); };
              });

}  // namespace
}  // namespace vprof::cli

