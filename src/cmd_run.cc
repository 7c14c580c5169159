// vprof run [--trace-dir DIR] [--manifest FILE] -- CMD [ARGS...]
// Runs CMD with the recorder on (VPROF_TRACE_DIR set) and says in one line
// what the run recorded. The directory is prepared, locked and summed up by
// its one owner (analyzer/read/recording.h): one directory holds one run, and
// a run never costs the previous trace unless it records. What is left here
// is CMD: checked to be a program, started, its signals forwarded, waited for.
#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analyzer/read/recording.h"
#include "common/process.h"
#include "command.h"
#include "inputs.h"


namespace vprof::cli {
namespace {

struct RunOptions {
  std::string trace_dir = "vprof-trace";
  std::string manifest;
  int sample = 0;  // windowed recording: percent of the time (0: in full)
  std::vector<std::string> command;
};

// --- signals ----------------------------------------------------------------
// vprof and CMD share a process group, so a terminal's Ctrl-C (or Ctrl-\, or a
// hang-up) reaches CMD by itself: the kernel sends it (SI_KERNEL) to the whole
// foreground group, and forwarding it would deliver it twice. A signal sent to
// vprof alone (kill PID, timeout, a supervisor) is forwarded to CMD. vprof
// itself never dies of them: it waits for CMD to finish writing, then reports.
volatile sig_atomic_t g_child = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void forward(int sig, siginfo_t *si, void *) {
  if (si && si->si_code == SI_KERNEL) return;
  pid_t child = g_child;
  if (child > 0) kill(child, sig);
}

sigset_t forwarded_set() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : kForwarded) sigaddset(&s, sig);
  return s;
}

void install_forwarding() {
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kForwarded) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);  // nohup stays nohup
  }
}

int run(const RunOptions &o) {
  std::string why;
  if (find_program(o.command[0], why).empty()) return fail(fmt::format("{}: {}", o.command[0], why));
  std::string manifest = o.manifest;
  if (manifest.empty() && getenv("VPROF_MANIFEST")) manifest = getenv("VPROF_MANIFEST");
  auto rec = trace::Recording::start(o.trace_dir, manifest);
  if (!rec) return fail(rec.error().message);
  trace::Recording &r = **rec;
  const std::string &dir = r.dir();
  sigset_t forwarded = forwarded_set(), mask;
  sigprocmask(SIG_BLOCK, &forwarded, &mask);  // none is lost between the start and the handlers
  SpawnOptions so;
  so.search_path = true;
  so.env = r.env(o.sample);
  so.mask = &mask;
  so.inherit_fd = r.lock();  // CMD holds the lock too (analyzer/read/recording.h)
  auto pid = spawn(o.command, so);
  if (!pid) {
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    r.abandon();
    return fail(pid.error().message);
  }
  g_child = *pid;
  install_forwarding();
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  int rc = wait_exit(*pid);
  g_child = 0;
  std::vector<std::string> manifest_lines;  // said after the summary
  const trace::Recording::Outcome out =
      r.finish([&](const std::string &line) { manifest_lines.push_back(line); });
  if (out.moved) {
    // Renamed or replaced while CMD ran (a hostile walk: "0 thread files",
    // exit 0, while the trace went on under the new name).
    std::fprintf(stderr,
                 "vprof: warning: %s was moved or replaced while the command ran: what was recorded before is in "
                 "the directory under its new name, files made after it could not be (that path was gone); "
                 "nothing here is summarized\n",
                 dir.c_str());
    return rc;
  }
  const trace::RecordCount count = out.trace ? out.trace->count() : trace::RecordCount{};
  const trace::ProcessFiles processes = out.trace ? out.trace->processes() : trace::ProcessFiles{};
  std::fprintf(stderr, "vprof: trace in %s %s\n", dir.c_str(), trace::describe(count, processes).c_str());
  if (out.still_recording) {
    std::fprintf(stderr,
                 "vprof: warning: %s exited, but processes it started still record in %s (a daemon): the "
                 "figures above are only what was written so far; stop them (the server's own stop command), "
                 "then `vprof analyze %s`. The previous trace is not kept\n",
                 o.command[0].c_str(), dir.c_str(), dir.c_str());
    return rc;
  }
  for (const std::string &line : trace::refused_lines(processes, dir))
    std::fprintf(stderr, "vprof: warning: %s\n", line.c_str());
  if (const std::string cause = trace::lost_records_cause(count.dropped, processes, dir); !cause.empty())
    std::fprintf(stderr, "vprof: warning: records were lost: %s\n", cause.c_str());
  for (const std::string &line : manifest_lines) say_on_stderr(line);
  if (count.records > 0) return rc;
  // Nothing recorded: the previous trace stays in DIR/.old (the next run
  // puts it back first). Records lost are a failed run, whatever CMD did;
  // CMD's own failure is the status then, else 2.
  const std::string kept = out.kept_old.empty() ? "" : "; the previous trace is kept in " + out.kept_old;
  const uint64_t lost = count.dropped + processes.lost_records;
  if (lost) {
    std::fprintf(stderr, "vprof: error: %s: nothing recorded: %llu records lost%s\n", dir.c_str(),
                 static_cast<unsigned long long>(lost), kept.c_str());
    return rc != 0 ? rc : kExitBadInput;
  }
  if (!kept.empty()) std::fprintf(stderr, "vprof: warning: %s: nothing recorded%s\n", dir.c_str(), kept.c_str());
  return rc;
}

Registrar reg("run", "run a command with the recorder on", [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<RunOptions>();
  sub.add_option("--trace-dir", o->trace_dir,
                 "directory for the trace (the previous trace in it is replaced once CMD records)");
  sub.add_option("--manifest", o->manifest,
                 "instrumenter manifest to keep with the trace (default: $VPROF_MANIFEST)");
  sub.add_option("--sample", o->sample,
                 "windowed recording: record in windows covering about PCT percent of the time, nothing "
                 "in between (sets VPROF_SAMPLE; 100: in full)")
      ->check(whole_between(1, 100))
      ->type_name("PCT");
  sub.add_option("command", o->command, "the command and its arguments, after --")->required();
  std::string env_help = "\nRuntime settings (environment):\n";
#define VPROF_OPTION_STR(field, env, def, help) env_help += fmt::format("  {:<22} {}\n", env, help);
#define VPROF_OPTION_U64(field, env, def, min, max, step, help) \
  env_help += fmt::format("  {:<22} {} (default {}, {}..{})\n", env, help, def, min, max);
#include "common/runtime_options.def"
#undef VPROF_OPTION_STR
#undef VPROF_OPTION_U64
  sub.footer(env_help);
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
