// Reporters behind one interface (after google/benchmark's reporter.h): the
// terminal table, the JSON report (schema in docs/analyze.md, versioned), the
// CSV of the per-interval leaf matrix, and the HTML page that renders the JSON
// report (one self-contained file, docs/analyze.md). A reporter writes to a stream and returns a
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
// `extra`: keys added to the JSON document, as `vprof iterate` adds the
// session's iterations; the HTML page renders the same document.
std::unique_ptr<Reporter> make_json_reporter(nlohmann::json extra = nlohmann::json::object());
std::unique_ptr<Reporter> make_csv_reporter();
std::unique_ptr<Reporter> make_html_reporter(nlohmann::json extra = nlohmann::json::object());

// The JSON document the JSON reporter writes (for tests and other tools).
nlohmann::json to_json(const Analysis &a);
// That document with extra's keys added (replacing any of the same name).
nlohmann::json to_json(const Analysis &a, const nlohmann::json &extra);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_REPORT_REPORTER_H
