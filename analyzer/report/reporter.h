// Reporters behind one interface (after google/benchmark's reporter.h): the
// terminal table, the JSON report (schema in CLI.md, versioned), and the CSV
// of the per-interval leaf matrix. A reporter writes to a stream and returns a
// Status; it never prints elsewhere or exits.
#ifndef VPROF_ANALYZER_REPORT_REPORTER_H
#define VPROF_ANALYZER_REPORT_REPORTER_H

#include <memory>
#include <ostream>

#include <nlohmann/json.hpp>

#include "analyzer/pipeline/analyze.h"

namespace vprof::analyzer {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual Status write(const Analysis &a, std::ostream &out) const = 0;
};

// What the table shows beyond its default.
struct TerminalOptions {
  bool by_type = false;  // the variance tree within each interval type (--by-type)
};

std::unique_ptr<Reporter> make_terminal_reporter(const TerminalOptions &opt = {});
std::unique_ptr<Reporter> make_json_reporter();
std::unique_ptr<Reporter> make_csv_reporter();

// The JSON document the JSON reporter writes (for tests and other tools).
nlohmann::json to_json(const Analysis &a);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_REPORT_REPORTER_H
