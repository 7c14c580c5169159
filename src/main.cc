#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <iostream>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyzer/util/prefault.h"
#include "common/edit_distance.h"
#include "common/version.h"
#include "clang_commands.h"
#include "command.h"

namespace vprof::cli {

std::vector<Command> &registry() {
  static std::vector<Command> commands;
  return commands;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "vprof: error: %s\n", message.c_str());
  return kExitBadInput;
}

std::string close_match(const std::string &word, const std::vector<std::string> &names) {
  std::string best;
  size_t best_d = std::max<size_t>(1, word.size() / 3) + 1;
  for (const std::string &n : names) {
    size_t d = edit_distance(word, n);
    if (d < best_d) best_d = d, best = n;
  }
  return best;
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.find_last_of('/'));
}

#ifdef VPROF_CLANG_PROGRAM
namespace {

// vprof itself: a command of vprof-clang's runs that program, with the same
// arguments (argv[0] too, so usage lines still say what the user typed).
// Returns only when it cannot be run. Options before the command (--help,
// --version) are vprof's own and stay here.
int exec_clang_command(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    for (const ClangCommand &c : kClangCommands) {
      if (std::strcmp(argv[i], c.name) != 0) continue;
      std::string path = self_dir() + "/" + kClangProgram;
      execv(path.c_str(), argv);
      return fail(path + ": cannot run it for `" + c.name + "`: " + std::strerror(errno));
    }
    break;
  }
  return -1;
}

}  // namespace
#endif

}  // namespace vprof::cli

// A report (or the help) that did not reach stdout (a full disk, /dev/full)
// is a failure: the last buffer is written only now, and only now does its
// error show. `rc` when it did.
static bool g_stdout_closed = false;  // vprof started with descriptor 1 closed (main)

static int stdout_written(int rc, const std::string &command = "") {
  if (rc == vprof::cli::kExitBadInput) return rc;  // its one error line is out already
  // A report's only place is stdout: with it closed, what was printed went
  // to /dev/null (main) and the run "succeeded" (
  // `vprof analyze T >&-` exited 0). The commands that say what they did on
  // stderr (run, iterate, instrument, restore, init) are not concerned.
  static const char *const quiet[] = {"run", "iterate", "instrument", "restore", "init"};
  if (g_stdout_closed && std::none_of(std::begin(quiet), std::end(quiet), [&](const char *q) { return command == q; }))
    return vprof::cli::fail("stdout: closed when vprof started: what it printed there is lost (give it a file: "
                            "> FILE)");
  errno = 0;
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int err = errno;
    return vprof::cli::fail(fmt::format("stdout: cannot write: {}", err ? std::strerror(err) : "write error"));
  }
  return rc;
}

int main(int argc, char **argv) {
  using namespace vprof::cli;
  // Started with standard descriptors closed (a daemon's supervisor): the
  // first files vprof opens would take their numbers, and the command it
  // runs would write its output into them (a trace directory's .lock).
  for (int fd = 0; fd < 3; ++fd)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0) return 2;
      if (fd == 1) g_stdout_closed = true;
    }
#ifdef VPROF_CLANG_PROGRAM
  if (int rc = exec_clang_command(argc, argv); rc >= 0) return rc;
  // Listed by --help like the others; never parsed here.
  for (const ClangCommand &c : kClangCommands)
    registry().push_back({c.name, c.help, [](CLI::App &) -> Runner { return [] { return kExitBadInput; }; }});
#endif
  vprof::analyzer::keep_freed_memory();  // analyses reuse freed memory (prefault.h)
  CLI::App app{"vprof: find which functions make your server's latency vary"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("vprof ") + vprof::kVersion);
  // Every option's default is in its --help line (`--threads UINT=1`); the
  // subcommands copy this when they are added, below.
  app.option_defaults()->always_capture_default();
  std::map<CLI::App *, Runner> runners;
  auto commands = registry();
  std::sort(commands.begin(), commands.end(),
            [](const Command &a, const Command &b) { return a.name < b.name; });
  for (const Command &c : commands) {
    CLI::App *sub = app.add_subcommand(c.name, c.help);
    runners[sub] = c.setup(*sub);
    // An empty list (`--sync`, `--runs`) has no default worth a "=[]".
    for (CLI::Option *opt : sub->get_options())
      if (opt->get_default_str() == "[]") opt->default_str("");
  }
  // The first word that is not an option names the command: an unknown or
  // missing one gets its own message (CLI11 says "A subcommand is required").
  std::vector<std::string> names;
  for (const Command &c : commands) names.push_back(c.name);
  std::string list = fmt::format("{}", fmt::join(names, ", "));
  bool named = false;
  for (int i = 1; i < argc && !named; ++i) {
    if (argv[i][0] == '-') {
      std::string opt = argv[i];
      if (opt == "-h" || opt == "--help" || opt == "--version") continue;
      return fail(fmt::format("unknown option '{}' before the command (commands: {}; try --help)", opt, list));
    }
    if (std::find(names.begin(), names.end(), argv[i]) == names.end()) {
      std::string near = close_match(argv[i], names);
      return fail(fmt::format("unknown command '{}'{} (commands: {})", argv[i],
                              near.empty() ? "" : fmt::format("; did you mean '{}'?", near), list));
    }
    named = true;
  }
  if (argc == 1) return fail(fmt::format("no command given (commands: {}; try --help)", list));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return stdout_written(app.exit(e));
  } catch (const CLI::CallForAllHelp &e) {
    return stdout_written(app.exit(e));
  } catch (const CLI::CallForVersion &e) {
    return stdout_written(app.exit(e));
  } catch (const CLI::ParseError &e) {
    // CLI11 checks required arguments before it complains of unknown ones:
    // `analyze --nosuchflag` said "trace_dir is required", hiding the typo.
    for (auto &[sub, run] : runners)
      if (sub->parsed())
        for (const std::string &x : sub->remaining())
          if (x.size() > 1 && x[0] == '-' && x != "--")  // "--" ends the options: left when a value was refused
            return fail(fmt::format("{}: unknown option '{}'", sub->get_name(), x));
    return fail(e.what());
  }
  int rc = kExitBadInput;
  std::string command;
  for (auto &[sub, run] : runners)
    if (sub->parsed()) {
      command = sub->get_name();
      rc = run();
      break;
    }
  if (rc == kExitBadInput && std::none_of(runners.begin(), runners.end(), [](const auto &r) { return r.first->parsed(); }))
    return fail("no command given (try --help)");
  return stdout_written(rc, command);
}
