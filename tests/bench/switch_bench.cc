// What recording preemptions costs a context switch (VPROF_PREEMPT,
// docs/run.md): the runtime opens a perf_event_open context-switch event per
// recording thread, and the kernel then does perf's work at every switch of
// that thread, whether or not the switch is a preemption. A server that
// switches per request (PostgreSQL: a process per connection waiting on its
// socket) pays it per request.
//
// Two processes pinned to one CPU pass a byte back and forth through pipes:
// every round trip is two context switches. Timed with the recorder off, on
// with VPROF_PREEMPT=0 (trace only), and on with VPROF_PREEMPT=1 (trace and
// the switch event), alternately (the runtime reads its environment at
// start-up, so each measurement re-executes this program). The same two
// again between recording windows (VPROF_SAMPLE=1 with windows of an hour,
// which never open here: the event is closed between windows). Last line:
//   switch_ns=<plain ns a switch> preempt_event_ns=<ns the event adds a switch> ratio=<x>
//   off_window_event_ns=<ns the event adds a switch between windows>
// Usage: vprof_bench_switch [round_trips]   (default 100000)
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <vprof/vprof.h>

namespace fs = std::filesystem;

static double mono_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pin_to_cpu0() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);
}

// The measured child: ns per round trip, printed on stdout.
static int ping_pong(int n) {
  pin_to_cpu0();
  int to_peer[2], to_us[2];
  if (pipe(to_peer) != 0 || pipe(to_us) != 0) return 1;
  char c = 0;
  pid_t peer = fork();
  if (peer == 0) {
    // One interval each gives both processes their trace file and, with
    // VPROF_PREEMPT=1, their switch event, as a server's threads get them.
    vprof_interval_begin(2);
    vprof_interval_end(2);
    for (int i = 0; i < n; ++i) {
      if (read(to_peer[0], &c, 1) != 1 || write(to_us[1], &c, 1) != 1) _exit(1);
    }
    _exit(0);
  }
  vprof_interval_begin(1);
  vprof_interval_end(1);
  for (int i = 0; i < 1000; ++i) {  // warm-up
    if (write(to_peer[1], &c, 1) != 1 || read(to_us[0], &c, 1) != 1) return 1;
  }
  double t0 = mono_s();
  for (int i = 1000; i < n; ++i) {
    if (write(to_peer[1], &c, 1) != 1 || read(to_us[0], &c, 1) != 1) return 1;
  }
  double t = mono_s() - t0;
  int status = 0;
  waitpid(peer, &status, 0);
  printf("%.1f\n", t / (n - 1000) * 1e9);
  return 0;
}

static double run(const char *self, int n, const std::string &trace_dir, int preempt, bool sampled = false) {
  std::string cmd;
  if (preempt < 0)
    cmd = "env -u VPROF_TRACE_DIR ";
  else
    cmd = "env VPROF_TRACE_DIR=" + trace_dir + " VPROF_PREEMPT=" + std::to_string(preempt) + " ";
  if (sampled) cmd += "VPROF_SAMPLE=1 VPROF_SAMPLE_WINDOW_MS=3600000 ";
  cmd += std::string(self) + " --ping-pong " + std::to_string(n);
  FILE *p = popen(cmd.c_str(), "r");
  double ns = 0;
  if (!p || fscanf(p, "%lf", &ns) != 1) ns = 0;
  if (p) pclose(p);
  fs::remove_all(trace_dir);
  return ns;
}

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "--ping-pong") return ping_pong(atoi(argv[2]));
  int n = argc > 1 ? atoi(argv[1]) : 100000;
  if (n < 2000) n = 2000;
  std::string dir = (fs::temp_directory_path() / ("vprof-bench-switch-" + std::to_string(getpid()))).string();
  std::vector<double> off, trace, event, off_trace, off_event;
  for (int r = 0; r < 5; ++r) {
    off.push_back(run(argv[0], n, dir, -1));
    trace.push_back(run(argv[0], n, dir, 0));
    event.push_back(run(argv[0], n, dir, 1));
    off_trace.push_back(run(argv[0], n, dir, 0, true));
    off_event.push_back(run(argv[0], n, dir, 1, true));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double a = median(off), b = median(trace), c = median(event), d = median(off_trace), e = median(off_event);
  if (a <= 0 || b <= 0 || c <= 0 || d <= 0 || e <= 0) {
    fprintf(stderr, "vprof_bench_switch: a measurement failed\n");
    return 1;
  }
  printf("one CPU, two processes, a pipe round trip = 2 context switches; median of 5 interleaved runs of %d\n", n);
  printf("recorder off: %.0f ns a round trip; on, VPROF_PREEMPT=0: %.0f; on, VPROF_PREEMPT=1: %.0f\n", a, b,
         c);
  printf("between windows, VPROF_PREEMPT=0: %.0f; VPROF_PREEMPT=1: %.0f\n", d, e);
  printf("switch_ns=%.0f preempt_event_ns=%.0f ratio=%.2f off_window_event_ns=%.0f\n", a / 2, (c - b) / 2, c / b,
         (e - d) / 2);
  return 0;
}
