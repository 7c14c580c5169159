// A saved profile (`vprof analyze --save FILE`, every `vprof iterate`
// session): what a later `vprof diff` or `vprof gate` needs of an analysis,
// without its trace. Per run: the variance tree's parts (Var and Leaf terms:
// key, label, call site, factor name) and, per interval, each part's time in
// ns, the interval's id and type; the run's latency is part 0's column (the
// root). Beside them the selected factors and the machine and build.
//
// On disk (docs/diff.md, "Saved profiles"):
//   bytes 0-7   "VPROFPRF"
//   bytes 8-11  format version (u32, little endian)        kProfileVersion
//   bytes 12-15 the oldest version this one can be read as  (u32)
//   bytes 16-   zlib stream of CBOR: one object, {meta, factors, runs: [...]};
//               each run's columns are one CBOR byte string of zigzag
//               LEB128 varints, column after column: its count of cells, then
//               per cell the step from the last one's row and the value.
// Versions: 1 the first, every interval's value of every column (read
// still); 2 the cells only: a MariaDB session's 22 runs
// (~7 000 parts x 40 000 intervals a run) took 24 GB to save densely.
#ifndef VPROF_ANALYZER_PROFILE_PROFILE_H
#define VPROF_ANALYZER_PROFILE_PROFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/build_info.h"
#include "common/expected.h"

#include "analyzer/names/names.h"

namespace vprof::analyzer {

struct Analysis;

constexpr uint32_t kProfileVersion = 2;

struct ProfileNode {
  std::string key;    // identity across builds (variance_tree.h)
  int parent = -1;    // index in ProfileRun::nodes; parents precede children
  bool leaf = false;  // nothing below it in this run
  std::string label, factor;
  std::string cause;  // VarNode::cause: a loop's part goes to its function ("" = the factor's)
  std::vector<std::string> functions;
  bool body = false;
  std::optional<CallSiteInfo> call_site;  // function_id is not kept (ids are per build)
};

struct ProfileRun {
  std::string trace_dir;
  std::vector<ProfileNode> nodes;       // nodes[0] is the root
  std::vector<uint64_t> interval_ids;   // per interval
  std::vector<uint32_t> types;          // per interval, index into type_names (0: none)
  std::vector<std::string> type_names;  // type_names[0] == ""
  // Node n's time per interval, ns, kept where it is not zero (rows
  // ascending): a wide tree's nodes are each in a few intervals, and dense,
  // saving the wide benchmark's profile took 1.8 GB. cols[0] is
  // the root, the latency. The file stores every cell (format unchanged).
  struct Column {
    std::vector<uint32_t> row;
    std::vector<double> value;
    bool operator==(const Column &o) const { return row == o.row && value == o.value; }
  };
  std::vector<Column> cols;
  uint64_t dropped_records = 0, incomplete_intervals = 0;
  double probe_ns = 0, empty_interval_ns = 0;
  size_t intervals() const { return interval_ids.size(); }
  // Node n's column into out[at .. at + intervals()), zeros included.
  void column_into(size_t n, std::vector<double> &out, size_t at) const;
};

struct ProfileFactor {
  int rank = 0;
  std::string name;
  double share = 0;
  std::string where;  // its largest call site, "file:line"; "" when none
};

// The machine and the build the profile was measured on (common/build_info.h).
using vprof::BuildInfo;
using vprof::build_info;

struct Profile {
  uint32_t version = kProfileVersion;
  std::string root;  // "latency" or the root function
  BuildInfo build;
  std::vector<ProfileFactor> factors;
  std::vector<ProfileRun> runs;  // in the analysis' order (runs[0]: the base run)
  std::string source;            // where it was read from (not saved)
};

// From an analysis (its runs' own trees and columns): every run, or the one
// whose index is only_run (an iterate session's iteration saves its own run:
// the runs before it are in their iterations' profiles).
Profile make_profile(const Analysis &a, BuildInfo build, std::optional<int> only_run = std::nullopt);

Status save_profile(const Profile &p, const std::string &path);
// Errors name the file and say what is wrong (not a profile, another
// version, damaged).
Expected<Profile> load_profile(const std::string &path);
// True when the file starts with the profile's magic.
bool is_profile_file(const std::string &path);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_PROFILE_PROFILE_H
