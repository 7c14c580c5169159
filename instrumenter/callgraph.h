// The static call graph of a tree below one root function, with heights.
//
// Nodes are the functions defined in the tree (by normalized qualified name:
// overloads share a node); an edge f -> g is a direct call of g in f's body
// (calls through pointers and virtual calls are no edges: the analyzer takes
// their height from the dynamic call tree, docs/method.md, "Factors"; what
// they may reach is each node's pointer_callees).
// Callees with no definition in the tree (libc, the standard library) are
// listed but are not nodes and add no height. Strongly connected components
// (recursion) are collapsed: every function of a cycle gets the cycle's height.
//   height(f) = 0 when f calls no tree function outside its own component,
//   else 1 + max height over those callees.
#ifndef VPROF_INSTRUMENTER_CALLGRAPH_H
#define VPROF_INSTRUMENTER_CALLGRAPH_H

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"

namespace vprof::instr {

struct CallGraphNode {
  std::string name, file;
  unsigned line = 0;
  std::set<std::string> callees;
  // Every file that defines a function of this name: more than one when
  // programs of the tree each define their own (PostgreSQL's frontend
  // palloc in fe_memutils.c beside the backend's in mcxt.c).
  std::set<std::string> files;
  // Defined outside its unit's own source file: in a header, which every
  // unit that includes it compiles again when its text changes.
  bool header = false;
  int height = 0;
  // The body's size: its statements and expressions as clang counts them
  // (the code that runs: evaluated_visitor.h); of the largest definition
  // when several files define the name. A build ahead leaves out the
  // smallest (iterate/prebuild.h).
  unsigned size = 0;
  // What it calls inside a loop (its body, condition or increment), by
  // name as in `callees`: a dormant probe there runs at every turn
  // (iterate/prebuild.h).
  std::set<std::string> loop_callees;
  bool loops_call_pointers = false;  // a loop calls through a pointer too
  // Callees whose body the calling unit cannot see: a library's or the
  // system's (write, fsync), or a function another file of the tree defines.
  std::set<std::string> opaque_callees;
  // Its calls through pointers, by type (function_types.h), and its virtual
  // calls, by the method they name: what build_callgraph resolves into
  // pointer_callees.
  std::set<std::string> pointer_types, virtual_methods;
  // The tree's functions those calls may reach: those whose address the
  // tree's code takes as that type, the named method and its overriders
  // (PostgreSQL's ExecProcNode calls node->ExecProcNode, set to ExecSeqScan,
  // ExecHashJoin and 40 more). Not edges for heights (the analyzer takes a
  // pointer call's height from the dynamic tree); a build ahead follows them.
  std::set<std::string> pointer_callees;
};

struct CallGraph {
  std::string root;
  std::map<std::string, CallGraphNode> nodes;  // only those reachable from root
  int height = 0;
  size_t files_parsed = 0;
  size_t files_from_cache = 0;  // of files_parsed, read from the cache (build_callgraph)
};

struct CallGraphOptions {
  std::string build_dir, root;
  // Every function the tree defines, root or not, with no heights (an
  // iterate session's build ahead reads what each calls).
  bool whole_tree = false;
  unsigned jobs = 0;  // 0 = one per core
  // Keep each unit's part in BUILD_DIR/.vprof-cache/callgraph and read it
  // instead of parsing the unit while no file it read changed (unit_cache.h).
  bool cache = true;
  std::function<void(size_t done, size_t total)> progress;  // called from worker threads, serialized
};

Expected<CallGraph> build_callgraph(const CallGraphOptions &options);

// Heights over an already collected graph (exposed for tests).
Expected<CallGraph> graph_below(const std::map<std::string, CallGraphNode> &all, const std::string &root);

nlohmann::json callgraph_json(const CallGraph &g);

}  // namespace vprof::instr

#endif
