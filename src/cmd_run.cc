// vprof run [--trace-dir DIR] [--manifest FILE] -- CMD [ARGS...]
// Runs CMD with the recorder on (VPROF_TRACE_DIR set). Old trace files in DIR
// are removed first so one directory holds one run. Exits with CMD's status.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "command.h"

namespace fs = std::filesystem;

namespace vprof::cli {
namespace {

struct RunOptions {
  std::string trace_dir = "vprof-trace";
  std::string manifest;
  std::vector<std::string> command;
};

bool find_program(const std::string &name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0;
  const char *path = getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    if (access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

int run(const RunOptions &o) {
  if (!find_program(o.command[0])) return fail(fmt::format("{}: command not found", o.command[0]));
  std::error_code ec;
  fs::create_directories(o.trace_dir, ec);
  if (ec) return fail(fmt::format("{}: cannot create trace directory: {}", o.trace_dir, ec.message()));
  std::string dir = fs::canonical(o.trace_dir, ec).string();
  if (ec) return fail(fmt::format("{}: {}", o.trace_dir, ec.message()));
  // One directory, one run: remove only what vprof wrote before.
  for (const auto &ent : fs::directory_iterator(dir, ec)) {
    std::string name = ent.path().filename().string();
    if ((name.rfind("t-", 0) == 0 && ent.path().extension() == ".vpt") || name == "manifest.json")
      fs::remove(ent.path(), ec);
  }
  std::string manifest = o.manifest;
  if (manifest.empty() && getenv("VPROF_MANIFEST")) manifest = getenv("VPROF_MANIFEST");
  if (!manifest.empty()) {
    fs::copy_file(manifest, fs::path(dir) / "manifest.json", fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(fmt::format("{}: cannot copy the manifest: {}", manifest, ec.message()));
  }

  pid_t pid = fork();
  if (pid < 0) return fail(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    setenv("VPROF_TRACE_DIR", dir.c_str(), 1);
    std::vector<char *> argv;
    for (const auto &a : o.command) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "vprof: error: %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  // Ctrl-C goes to the whole foreground group; vprof waits for the child to finish writing.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  size_t files = 0;
  for (const auto &ent : fs::directory_iterator(dir, ec))
    if (ent.path().extension() == ".vpt") ++files;
  std::fprintf(stderr, "vprof: trace in %s (%zu thread files)\n", dir.c_str(), files);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

Registrar reg("run", "run a command with the recorder on", [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<RunOptions>();
  sub.add_option("--trace-dir", o->trace_dir, "directory for the trace (old trace files in it are removed)")
      ->capture_default_str();
  sub.add_option("--manifest", o->manifest,
                 "instrumenter manifest to keep with the trace (default: $VPROF_MANIFEST)");
  sub.add_option("command", o->command, "the command and its arguments, after --")->required();
  std::string env_help = "\nRuntime settings (environment):\n";
#define VPROF_OPTION_STR(field, env, def, help) env_help += fmt::format("  {:<22} {}\n", env, help);
#define VPROF_OPTION_U64(field, env, def, min, max, step, help) \
  env_help += fmt::format("  {:<22} {} (default {})\n", env, help, def);
#include "../runtime/options.def"
#undef VPROF_OPTION_STR
#undef VPROF_OPTION_U64
  sub.footer(env_help);
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
