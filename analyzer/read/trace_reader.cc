#include "analyzer/read/trace_reader.h"

#include <fcntl.h>

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "analyzer/read/decoder.h"
#include "analyzer/read/trace_stream.h"

namespace vprof::trace {

const char *kind_name(Kind k) {
  switch (static_cast<uint32_t>(k)) {  // the kinds table's names (trace_format.h)
#define VPROF_KIND_NAME_(NAME, value, slots, writer, read, name) \
  case value: return name;
    VPROF_RECORD_KINDS(VPROF_KIND_NAME_)
#undef VPROF_KIND_NAME_
  }
  return "?";
}

const char *severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::string Diagnostic::str() const {
  return fmt::format("{}:{}: {}: {}", file, offset, severity_name(severity), message);
}

size_t Trace::count(Severity s) const {
  return static_cast<size_t>(std::count_if(diagnostics.begin(), diagnostics.end(),
                                           [s](const Diagnostic &d) { return d.severity == s; }));
}

const Diagnostic *Trace::first_error() const {
  for (const auto &d : diagnostics)
    if (d.severity == Severity::Error) return &d;
  return nullptr;
}

namespace {

using detail::Clock;
using detail::Decoder;
using detail::Labels;
using detail::MappedFile;

}  // namespace

bool read_trace_file(const std::string &path, ThreadStream &out, std::vector<Diagnostic> &diags) {
  MappedFile f(AT_FDCWD, path);  // a path as given: relative to here, or absolute
  vprof_file_header h;
  if (!detail::check_header(path, f, h, diags)) return false;
  Clock clock{h.clock_source == VPROF_CLOCK_MONOTONIC ? 1.0 : h.ticks_per_ns, h.anchor0_ticks,
              static_cast<int64_t>(h.anchor0_ns)};
  Labels labels;
  Decoder d(path, f, h, clock, diags, labels);
  d.describe(out);
  Event e;
  uint64_t tick;
  uint32_t delta;
  while (d.next(e, tick, delta)) out.events.push_back(e);
  d.finish(out, out.events.size());
  return true;
}

// The streaming reader's sources, decoded whole: one reader, one rule for
// records and wake-ups, whether the trace is read at once or on demand.
Expected<Trace> read_trace_dir(const std::string &dir) {
  auto stream = TraceStream::open(dir);
  if (!stream) return stream.error();
  std::vector<EventSource *> sources = (*stream)->sources();
  // Every file decoded before any wake-up is settled (a release may be in any
  // of them); in steps, so that a buffer grows to what its file holds, not to
  // the ring-sized bound size_hint() gives.
  for (EventSource *s : sources)
    while (!s->exhausted()) s->fill(s->size() + 256);
  for (EventSource *s : sources) s->settle(std::numeric_limits<int64_t>::max());
  Trace trace = (*stream)->summary();
  for (size_t i = 0; i < sources.size(); ++i) {
    trace.threads[i].events.assign(sources[i]->data(), sources[i]->data() + sources[i]->size());
    sources[i]->consume(sources[i]->size());
  }
  return trace;
}

}  // namespace vprof::trace
