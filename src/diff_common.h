// What `vprof diff` and `vprof gate` share: their common options, reading
// each side's inputs, and writing the reports (analyzer/diff/).
#ifndef VPROF_SRC_DIFF_COMMON_H
#define VPROF_SRC_DIFF_COMMON_H

#include <string>
#include <vector>

#include "analyzer/diff/diff.h"
#include "analyzer/diff/gate.h"
#include "command.h"
#include "outputs.h"

namespace vprof::cli {

struct DiffCliOptions {
  std::string root, json, markdown;
  analyzer::DiffOptions diff;
  unsigned threads = 1;
  size_t nodes = 15;
};

// --root, --bootstrap, --confidence, --seed, -k, -d, --threads, --nodes,
// --json, --markdown.
void add_diff_options(CLI::App &sub, DiffCliOptions &o);

struct Sides {
  std::vector<analyzer::Profile> base, head;
};
// Checks the outputs first (--json, --markdown: none is an input or inside
// an input trace directory, outputs.h).
Expected<Sides> load_sides(const std::vector<std::string> &base, const std::vector<std::string> &head,
                           const DiffCliOptions &o);

Expected<analyzer::Diff> run_diff(const Sides &s, const DiffCliOptions &o);

// Text on stdout (unless --json -), and the --json / --markdown files.
Status write_reports(const analyzer::Diff &d, const DiffCliOptions &o,
                     const analyzer::GateResult *gate);

}  // namespace vprof::cli

#endif  // VPROF_SRC_DIFF_COMMON_H
