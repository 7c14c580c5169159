// vprof iterate [--config vprof.json] [--auto] [--max-iterations N] [--fresh]
// The refinement loop (iterate/session.h): interactive by default (the table
// first, then a question per selected factor), --auto for the rule in
// docs/method.md, "Iterative refinement". Ctrl-C stops after the current step;
// the tree is restored.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "analyzer/report/reporter.h"
#include "clang_commands.h"
#include "command.h"
#include "instrumenter/instrument.h"
#include "iterate/answer.h"
#include "iterate/session.h"

namespace vprof::cli {
namespace {

struct IterateCli {
  std::string config = "vprof.json";
  bool automatic = false, fresh = false;
  int max_iterations = 0;
};

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{SIGINT};  // which one: the exit status is 128 + it (docs/cli.md)
void on_sigint(int sig) {
  g_signal = sig;
  g_interrupted = true;
}

bool ask(std::vector<iterate::Suggestion> &sugg, const analyzer::Analysis &a) {
  analyzer::make_terminal_reporter()->write(a, std::cout);
  for (auto &g : sugg) {
    if (g.function.empty() && !g.break_down) continue;  // nothing to ask: not a function
    std::printf("%s (%.1f%%): suggested: %s (%s). [b]reak down, [e]xplained, [q]uit? ",
                g.factor.c_str(), 100 * g.contribution, iterate::decision_word(g),
                g.reason.c_str());
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line) || line == "q") return false;
    if (line == "b") {
      if (g.function.empty()) std::printf("  %s is not a function; left explained\n", g.factor.c_str());
      else {
        g.break_down = true;
        g.unreached = false;
        g.reason = "chosen by the user";
        if (g.functions.empty()) g.functions = {g.function};
      }
    } else if (line == "e") {
      g.break_down = g.unreached = false;
      g.reason = "explained by the user";
    }
  }
  return true;
}

// --- the supervisor -----------------------------------------------------------
// The session runs in a child process. Whatever kills it (a crash, an abort,
// SIGKILL from the OOM killer), this process restores the tree, so no signal
// path leaves the user's sources instrumented; exceptions are caught in the
// session itself (iterate/session.cc). The child gets the terminal's signals
// itself (same process group); a signal sent to this process alone (kill,
// timeout, a CI job) is forwarded to it. If this process is killed outright,
// the child dies with it (PR_SET_PDEATHSIG), leaving the journal for `vprof
// restore`, as a killed session always has.
volatile sig_atomic_t g_session = 0;

void forward(int sig, siginfo_t *si, void *) {
  if (si && si->si_code == SI_KERNEL) return;  // the terminal's: the child has it too
  if (g_session > 0) kill(g_session, sig);
}

// What the dead session left running (its build or workload, orphaned to
// this process, the subreaper): killed and reaped, so that none goes on
// writing into the tree or the session, or holds the tree's lock (a child
// between its fork and exec still shares the lock's descriptor).
void end_orphans() {
  for (int round = 0; round < 10; ++round) {
    std::ifstream kids(fmt::format("/proc/self/task/{}/children", getpid()));
    bool any = false;
    for (pid_t p; kids >> p;) any = kill(p, SIGKILL) == 0 || any;
    if (!any) return;
    while (waitpid(-1, nullptr, 0) > 0) {
    }
  }
}

int supervise(const std::string &build_dir, const std::string &source_root,
              const std::function<int()> &session) {
  const pid_t parent = getpid();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) return fail(fmt::format("cannot start the session: fork: {}", std::strerror(errno)));
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(kExitSignal + SIGKILL);  // the supervisor died before prctl
    int rc = session();
    std::fflush(nullptr);
    _exit(rc);
  }
  g_session = child;
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  // This process is the subreaper of what the session starts: a daemon the
  // workload started (a server that forks into the background) becomes its
  // child when its first parent exits, and is reaped here when it ends, or
  // it would stay a zombie of vprof until the session ended (a stop script's
  // `kill -0` loop never saw it go).
  int st = 0;
  for (;;) {
    int s = 0;
    const pid_t got = waitpid(-1, &s, 0);
    if (got == child) {
      st = s;
      break;
    }
    if (got < 0 && errno != EINTR) break;  // (ECHILD: none left; the session's status is lost then)
  }
  g_session = 0;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  const int sig = WTERMSIG(st);
  end_orphans();
  instr::RestoreOptions ro;
  ro.build_dir = build_dir;
  ro.source_root = source_root;
  auto restored = instr::restore(ro);
  // The lock's last holder may still be going (a descendant that escaped
  // end_orphans, in exit): wait for it a little.
  for (int i = 0; i < 50 && !restored &&
                  restored.error().message.find("is instrumenting or restoring this tree") != std::string::npos;
       ++i) {
    usleep(100 * 1000);
    restored = instr::restore(ro);
  }
  std::string after = restored ? "the tree is restored and `vprof iterate` resumes"
                               : "restoring the tree failed: " + restored.error().message +
                                     "; run `vprof restore`";
  std::fprintf(stderr, "vprof: error: the session died of signal %d (%s); %s\n", sig, strsignal(sig),
               after.c_str());
  return kExitSignal + sig;
}

int session_main(const IterateCli &o, const iterate::Config &cfg) {
  Dirs d = vprof_dirs();
  iterate::SessionOptions so;
  so.annotations_dir = d.annotations;
  so.include_dir = d.include;
  so.max_iterations = o.max_iterations;
  so.fresh = o.fresh;
  iterate::Hooks h;
  h.log = [](const std::string &s) { std::fprintf(stderr, "vprof: %s\n", s.c_str()); };
  h.interrupted = [] { return g_interrupted.load(); };
  if (!o.automatic) h.decide = ask;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  // SIGTERM (a CI job's timeout, `kill`) and SIGHUP (a closed terminal) stop
  // the session as Ctrl-C does: at the next step, with the tree restored.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  auto out = iterate::run_session(cfg, so, h);
  if (!out) {
    if (g_interrupted) {
      std::fprintf(stderr, "vprof: interrupted (%s); the tree is restored and `vprof iterate` resumes\n",
                   strsignal(g_signal.load()));
      return kExitSignal + g_signal.load();
    }
    return fail(out.error().message);
  }
  std::printf("\n");
  analyzer::make_terminal_reporter()->write(*out->analysis, std::cout);
  std::printf("\n%zu iterations; %s.\n", out->state.iterations.size(), out->state.stop_reason.c_str());
  if (std::string line = iterate::answer_line(*out->analysis); !line.empty()) std::printf("%s\n", line.c_str());
  if (std::string b = iterate::builds_summary(out->state); !b.empty()) std::printf("%s\n", b.c_str());
  std::printf("Reports: %s, %s and %s\n", out->final_text.c_str(), out->final_json.c_str(),
              out->final_html.c_str());
  return kExitOk;
}

int run(const IterateCli &o) {
  if (!o.automatic && !isatty(0))
    return fail("iterate asks questions: run it in a terminal, or pass --auto");
  auto cfg = iterate::load_config(o.config);
  if (!cfg) return fail(cfg.error().message);
  return supervise(cfg->abs(cfg->build_dir), cfg->abs_source_root(), [&] { return session_main(o, *cfg); });
}

Registrar reg("iterate", clang_command_help("iterate"),
              [](CLI::App &sub) -> Runner {
                auto o = std::make_shared<IterateCli>();
                sub.add_option("--config", o->config, "the session config");
                sub.add_flag("--auto", o->automatic, "decide by the automatic rule (docs/iterate.md, 'The loop'), ask nothing");
                sub.add_option("--max-iterations", o->max_iterations, "override the config's max_iterations (0: keep it)");
                sub.add_flag("--fresh", o->fresh, "discard the previous session and start over");
                return [o] { return run(*o); };
              });

}  // namespace
}  // namespace vprof::cli
