// How a diff (diff.h) is shown: a table for the terminal, JSON for scripts
// (`--json`, schema_version 1, docs/diff.md), Markdown for a pull-request
// comment or a CI step summary (`--markdown`). The gate adds its verdict.
#ifndef VPROF_ANALYZER_DIFF_DIFF_REPORT_H
#define VPROF_ANALYZER_DIFF_DIFF_REPORT_H

#include <ostream>

#include <nlohmann/json.hpp>

#include "analyzer/diff/diff.h"
#include "analyzer/diff/gate.h"

namespace vprof::analyzer {

// gate: null for `vprof diff`.
void write_diff_text(const Diff &d, std::ostream &out, const GateResult *gate = nullptr,
                     size_t max_nodes = 15);
nlohmann::json diff_json(const Diff &d, const GateResult *gate = nullptr);
void write_diff_markdown(const Diff &d, std::ostream &out, const GateResult *gate = nullptr,
                         size_t max_nodes = 10);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_DIFF_DIFF_REPORT_H
