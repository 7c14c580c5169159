// Turns the intents of all translation units into one set of edits per file.
//
// Intents are de-duplicated by (file, offsets) so a header seen from many
// translation units is edited once; ids are assigned in (file, offset) order
// so the same tree and selection always give the same ids (unless an earlier
// manifest's are kept: make_plan's ids_from). Every edit is an
// insertion; insertions at one offset are merged into one
// tooling::Replacement in nesting order (closing text of inner wrappers, then
// function probes, then opening text of outer wrappers), so nested wrappers
// such as f(g(x)) compose instead of overlapping. Crossing spans or one file
// needing different text for a C and a C++ translation unit is an error.
#ifndef VPROF_INSTRUMENTER_EDIT_PLAN_H
#define VPROF_INSTRUMENTER_EDIT_PLAN_H

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"
#include "instrumenter/intents.h"

namespace vprof::instr {

struct Plan {
  std::map<std::string, std::string> new_text;  // path -> rewritten contents
  nlohmann::json manifest;                      // its "id": the first 16 hex digits of the
                                                // SHA-1 of the manifest without it
  std::string manifest_id;
  size_t functions = 0, sites = 0, syncs = 0;
  // Where they are: files with instrumented functions (their call sites are
  // in them too), and files that hold sync sites alone (a sync pack applied
  // to every file parsed) with how many sync sites those hold.
  size_t function_files = 0, sync_only_files = 0, syncs_in_sync_only_files = 0;
};

// What a call through a pointer or a virtual call may reach, over every
// translation unit scanned: the functions of its type whose address the
// tree takes, or a virtual method and its overriders defined in the tree.
class CallTargets {
 public:
  explicit CallTargets(const std::vector<ScanResult> &scans);
  std::vector<std::string> of_type(const std::string &callee_type) const;
  std::vector<std::string> of_virtual(const std::string &method) const;
  // The tree's functions called `name` (the last part of their qualified
  // name): what a template's dependent call of that name may reach.
  std::vector<std::string> of_name(const std::string &name) const;
  // The functions the tree stores into a holder (SiteIntent::holder), when
  // it stores nothing else there and never takes its address; else nullopt.
  std::optional<std::vector<std::string>> of_holder(const std::string &holder) const;

 private:
  std::map<std::string, std::set<std::string>> by_type_, overriders_, by_name_, by_holder_;
  std::set<std::string> unknown_holders_;
};

// `original` maps each path that may be edited to its original contents
// (read by the caller); a path missing from it is read from disk. Every
// rewritten file registers its own id (the manifest's "files") and
// `manifest_path` with the runtime (forms.h, preamble). `ids_from`, an
// earlier manifest of the same tree (an iterate session's previous
// iteration), gives its functions and call sites their ids there, so that a
// file whose selection did not change is rewritten to the same bytes.
// dormant: the probes may be left dormant by a run (preamble()); its bodies
// are written twice, and those that may run their original copy between
// windows do, but `root`'s (a name or pattern: the analysis root, whose
// frames an interval's analysis needs from their entry).
Expected<Plan> make_plan(const std::vector<ScanResult> &scans, std::map<std::string, std::string> &original,
                         const std::string &manifest_path, const nlohmann::json *ids_from = nullptr,
                         bool dormant = false, const std::string &root = "");

}  // namespace vprof::instr

#endif
