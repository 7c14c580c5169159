// What a run left in its trace directory, from the files' headers and a scan
// of their records: the one line `vprof run` prints at the end. Reads only
// (never changes a file) and needs only the format header, not the analyzer.
#ifndef VPROF_SRC_TRACE_SUMMARY_H
#define VPROF_SRC_TRACE_SUMMARY_H

#include <cstdint>
#include <string>

#include "analyzer/read/process_files.h"

namespace vprof::cli {

struct TraceSummary {
  uint64_t thread_files = 0;   // t-*.vpt with a valid header
  uint64_t unreadable = 0;     // t-*.vpt that are not (truncated, bad magic)
  uint64_t records = 0;        // records the program wrote: not strings or markers
  uint64_t dropped = 0;        // sum of the headers' dropped_records
  uint64_t late_switches = 0;  // sum of the headers' late_switches (v3: the writer lagged)
  trace::ProcessFiles processes;  // the p-*.vpp files: lost threads, registered manifests
};

TraceSummary summarize_trace(const std::string &dir);

// "(3 thread files): 120000 records, 0 dropped[, 2 threads without a file (40 records lost)]
//  [, 5 ring switches appended by their thread (the writer lagged: every core busy)]"
std::string describe(const TraceSummary &s);

}  // namespace vprof::cli

#endif
