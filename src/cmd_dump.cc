// vprof dump TRACE_DIR: every record of every thread, decoded, for debugging.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "analyzer/read/trace_reader.h"
#include "command.h"

namespace vprof::cli {
namespace {

struct DumpOptions {
  std::string dir;
  size_t limit = 0;
};

std::string describe(const trace::Event &e, const trace::Trace &t) {
  using trace::Kind;
  switch (e.kind) {
    case Kind::FuncEnter:
    case Kind::FuncExit: return fmt::format("fn={}", e.arg);
    case Kind::SiteBegin:
    case Kind::SiteEnd: return fmt::format("site={}", e.arg);
    case Kind::IntervalBegin:
      return fmt::format("interval={} type='{}' client='{}'", e.arg, t.labels[e.type_label],
                         t.labels[e.client_label]);
    case Kind::IntervalEnd:
    case Kind::IntervalJoin: return fmt::format("interval={}", e.arg);
    case Kind::WaitBegin:
    case Kind::Release: return fmt::format("obj={:#x} role={}", e.arg, e.role);
    case Kind::WaitEnd:
      return fmt::format("obj={:#x} role={} acquired={} waker={} release_ts={}", e.arg, e.role,
                         e.acquired, e.waker_tid, e.release_ts);
    case Kind::WaitMutex: return fmt::format("mutex={:#x}", e.arg & VPROF_OBJ_MASK);
    case Kind::TaskEnqueue:
    case Kind::TaskDequeue: return fmt::format("task={:#x}", e.arg);
    case Kind::Preempted:
    case Kind::Recorder: return fmt::format("from={} to={}", e.release_ts, e.arg);
    case Kind::Window: {
      static const char *const states[] = {"off", "on", "drain", "?"};
      return fmt::format("window={} state={}{}{}{}{} pops={}", VPROF_WINDOW_SEQ(e.arg),
                         states[VPROF_WINDOW_STATE(e.arg)], VPROF_WINDOW_MADE(e.arg) ? " made" : "",
                         VPROF_WINDOW_CAPPED(e.arg) ? " capped" : "", VPROF_WINDOW_LOST(e.arg) ? " lost" : "",
                         VPROF_WINDOW_UNKNOWN(e.arg) ? " stack-unknown" : "", VPROF_WINDOW_POPS(e.arg));
    }
    default: return "";
  }
}

int run(const DumpOptions &o) {
  auto trace = trace::read_trace_dir(o.dir);
  if (!trace) return fail(trace.error().message);
  const trace::Trace &t = *trace;
  std::printf("trace %s: %zu threads, %llu records, %llu dropped, clock %.6f ticks/ns, "
              "probe pair %.1f ns, empty interval %.1f ns\n",
              t.dir.c_str(), t.threads.size(), (unsigned long long)t.total_records,
              (unsigned long long)t.dropped_records, t.ticks_per_ns, t.overhead.probe_pair_ns,
              t.overhead.empty_interval_ns);
  for (const auto &s : t.threads) {
    std::printf("\n== pid %u tid %u (%s/%s) %s: %zu events%s%s\n", s.pid, s.tid, s.comm.c_str(),
                s.thread_name.c_str(), s.file.c_str(), s.events.size(),
                s.clean_exit ? "" : ", no thread exit (torn)",
                s.dropped_records ? fmt::format(", {} dropped", s.dropped_records).c_str() : "");
    size_t n = 0;
    for (const auto &e : s.events) {
      if (o.limit && n++ >= o.limit) {
        std::printf("  ... (%zu more)\n", s.events.size() - o.limit);
        break;
      }
      std::printf("  %lld %-14s %s\n", (long long)e.ts, trace::kind_name(e.kind), describe(e, t).c_str());
    }
  }
  for (const auto &d : t.diagnostics)
    if (d.severity != trace::Severity::Error)
      std::fprintf(stderr, "vprof: %s\n", d.str().c_str());
  if (const auto *err = t.first_error()) {
    size_t n = t.count(trace::Severity::Error);
    return fail(err->str() + (n > 1 ? fmt::format(" (and {} more errors)", n - 1) : ""));
  }
  return kExitOk;
}

Registrar reg("dump", "print the raw records of a trace directory", [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<DumpOptions>();
  sub.add_option("trace_dir", o->dir, "the trace directory")->required();
  sub.add_option("--limit", o->limit, "at most this many records per thread (0 = all)")->check(whole_at_least(0));
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
