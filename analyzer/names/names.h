// Names for ids: the instrumenter's manifest (function and call-site ids) and
// the static call graph's heights (`vprof callgraph --json`), both described in
// docs/interfaces.md. Loading fails with an Error naming the file and field;
// ids the manifest does not know fall back to "fn#ID" / "site#ID".
#ifndef VPROF_ANALYZER_NAMES_NAMES_H
#define VPROF_ANALYZER_NAMES_NAMES_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include "common/expected.h"

namespace vprof::analyzer {

struct CallSiteInfo {
  uint32_t function_id = 0;  // the caller, by its id in this site's own manifest
  std::string callee;
  std::string file;
  int line = 0, column = 0;
  // A call through a pointer or a virtual call (callee is the expression's
  // text): targets lists the functions in the tree it may reach (manifest).
  bool indirect = false;
  std::vector<std::string> targets;
  // A wrapped sync call (the manifest's sync_sites at this file, line and
  // column): a lock, an unlock or a wait, whose probes the wrapper records.
  bool sync = false;
  // The scope form (manifest: to_full_expression): the site lasts to the end
  // of its full expression, so the caller's code after the call (`s = f()`'s
  // assignment) runs inside it.
  bool to_full_expression = false;
  // A template's call whose callee its arguments decide: the name it calls
  // (targets: the tree's functions of that name).
  std::string dependent_name;
  // A call through a variable or field where the tree stores one function
  // and nothing else (manifest: stored_in): callee is that function, as a
  // direct call's is, and this is the pointer's expression (MariaDB's
  // os_file_sync_posix calls fdatasync through `func`).
  std::string through;
  // The caller's name, resolved in that same manifest: ids are renumbered by
  // every instrumentation, so a merged report must never look function_id up
  // in another run's names (it read "fn#78" there, and a session died on
  // `--function fn#78: no definition`).
  std::string caller;
};

// {"file", "line", "column", "callee"[, "through"]}, or null: how every JSON output names a call site.
nlohmann::json site_json(const std::optional<CallSiteInfo> &s);

struct FunctionInfo {
  std::string name, file;
  int line = 0;
};

class Names {
 public:
  std::string function(uint32_t id) const;
  std::string callee(uint32_t site_id) const;   // the called function's name
  const CallSiteInfo *site(uint32_t id) const;  // nullptr when unknown
  // Function id by qualified name, or 0.
  uint32_t function_id(const std::string &name) const;
  std::unordered_map<uint32_t, FunctionInfo> functions;
  std::unordered_map<uint32_t, CallSiteInfo> sites;
  std::string manifest_id;  // the manifest's "id" ("" in manifests older than ids)
  // Every id a program built from this instrumentation registers: each
  // rewritten file's ("files"), and the manifest's own (what programs built
  // by a vprof before per-file ids registered).
  std::set<std::string> ids;
  int schema_version = 1;   // 2: call sites say whether they are indirect
  // Functions outside instrumented code where wakers released (a Held
  // leaf's id kHeldPlace | n names places[n - 1]): found by the analysis
  // (names/symbols.h), not in the manifest.
  std::vector<std::string> places;
  // The call sites some thread called in a row (a loop of calls with nothing
  // recorded between them, SITE_RUN), sorted: found by the analysis. A
  // loop's calls are its function's doing, one cause with its body
  // (factors/causes.h).
  std::vector<uint32_t> looped_sites;
  bool looped(uint32_t site) const {
    return std::binary_search(looped_sites.begin(), looped_sites.end(), site);
  }
  // The function holding a site some thread called in a row ("" when none).
  std::string looping_function(uint32_t site) const;
  // Whether function `name` holds such a site.
  bool loops(const std::string &name) const;
  std::string place(uint32_t n) const { return n >= 1 && n <= places.size() ? places[n - 1] : std::string(); }
  // How a holder at place n reads where it is named ("held by ...", the
  // blame lines): "F (outside instrumented code)", or "" for no name.
  std::string place_label(uint32_t n) const {
    std::string f = place(n);
    return f.empty() ? f : f + " (outside instrumented code)";
  }
};

Expected<Names> load_manifest(const std::string &path);

struct CallGraph {
  std::string root;
  int height = -1;
  std::unordered_map<std::string, int> heights;
  std::unordered_map<std::string, std::vector<std::string>> callees;
};

Expected<CallGraph> load_callgraph(const std::string &path);

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_NAMES_NAMES_H
