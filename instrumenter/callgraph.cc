#include "instrumenter/callgraph.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <clang/AST/ASTContext.h>
#include <clang/AST/ASTLambda.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>

#include "common/schema.h"
#include "instrumenter/compile_db.h"
#include "instrumenter/evaluated_visitor.h"
#include "instrumenter/function_types.h"
#include "instrumenter/journal.h"
#include "instrumenter/tree.h"
#include "instrumenter/locate.h"
#include "instrumenter/names.h"
#include "instrumenter/parse_tu.h"
#include "instrumenter/unit_cache.h"

namespace vprof::instr {

namespace {

using namespace clang;

// A body's callees, its size, and its calls inside loops.
class CalleeCollector : public EvaluatedVisitor<CalleeCollector> {
  using Base = EvaluatedVisitor<CalleeCollector>;

 public:
  CalleeCollector(const ASTContext &ast, CallGraphNode &out) : ast_(ast), out_(out) {}
  bool VisitStmt(Stmt *) {
    ++out_.size;
    return true;
  }
  bool VisitCallExpr(CallExpr *ce) {
    if (const CXXMethodDecl *m = virtual_callee(ce))
      out_.virtual_methods.insert(normalize_qualified(m->getQualifiedNameAsString()));
    if (const FunctionDecl *fd = ce->getDirectCallee()) {
      if (!fd->getBuiltinID()) add(fd);
      return true;
    }
    if (loops_ > 0) out_.loops_call_pointers = true;
    if (!isa<CXXMemberCallExpr>(ce))
      if (std::string t = function_type(ce->getCallee()->getType(), ast_); !t.empty()) out_.pointer_types.insert(t);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *ce) {
    add(ce->getConstructor());
    return true;
  }
  bool TraverseForStmt(ForStmt *s) { return in_loop([&] { return Base::TraverseForStmt(s); }); }
  bool TraverseWhileStmt(WhileStmt *s) { return in_loop([&] { return Base::TraverseWhileStmt(s); }); }
  bool TraverseDoStmt(DoStmt *s) { return in_loop([&] { return Base::TraverseDoStmt(s); }); }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *s) {
    return in_loop([&] { return Base::TraverseCXXForRangeStmt(s); });
  }

 private:
  void add(const FunctionDecl *fd) {
    std::string name = normalize_qualified(fd->getQualifiedNameAsString());
    if (loops_ > 0) out_.loop_callees.insert(name);
    if (!fd->isDefined()) out_.opaque_callees.insert(name);
    out_.callees.insert(std::move(name));
  }
  template <class F>
  bool in_loop(F traverse) {
    ++loops_;
    const bool ok = traverse();
    --loops_;
    return ok;
  }
  const ASTContext &ast_;
  CallGraphNode &out_;
  int loops_ = 0;
};

// What a pointer or virtual call may reach, from the whole tree: functions
// whose address its code takes, by type (as tu_scan.cc lists a site's
// targets), and each method's overriders.
struct PointerFacts {
  std::map<std::string, std::set<std::string>> address_taken;  // type -> functions
  std::map<std::string, std::set<std::string>> overriders;     // method -> overriders, transitively
  void merge(const PointerFacts &o) {
    for (const auto &[t, fs] : o.address_taken) address_taken[t].insert(fs.begin(), fs.end());
    for (const auto &[m, fs] : o.overriders) overriders[m].insert(fs.begin(), fs.end());
  }
};

// What a body says of its function joins what other definitions of the
// name said (a header's function in every unit that includes it, the
// workers' partial graphs): callees and loops add up, the size is the
// largest definition's.
void merge_body(CallGraphNode &into, const CallGraphNode &from) {
  into.callees.insert(from.callees.begin(), from.callees.end());
  into.size = std::max(into.size, from.size);
  into.loop_callees.insert(from.loop_callees.begin(), from.loop_callees.end());
  into.loops_call_pointers |= from.loops_call_pointers;
  into.opaque_callees.insert(from.opaque_callees.begin(), from.opaque_callees.end());
  into.pointer_types.insert(from.pointer_types.begin(), from.pointer_types.end());
  into.virtual_methods.insert(from.virtual_methods.begin(), from.virtual_methods.end());
}

// Each node's pointer_callees: the tree's functions its pointer calls'
// types and its virtual calls' methods may reach.
void resolve_pointer_callees(std::map<std::string, CallGraphNode> &all, const PointerFacts &facts) {
  for (auto &[name, n] : all) {
    auto add = [&](const std::set<std::string> &fs) {
      for (const auto &f : fs)
        if (f != name && all.count(f)) n.pointer_callees.insert(f);
    };
    for (const auto &t : n.pointer_types)
      if (auto it = facts.address_taken.find(t); it != facts.address_taken.end()) add(it->second);
    for (const auto &m : n.virtual_methods)
      if (auto it = facts.overriders.find(m); it != facts.overriders.end()) add(it->second);
  }
}

// One unit's part of the graph: the definitions it shows, what its code
// says pointers may reach. Units' parts add up (merge_unit) in any order.
struct UnitGraph {
  std::map<std::string, CallGraphNode> nodes;
  PointerFacts facts;
};

void merge_unit(UnitGraph &into, const UnitGraph &from) {
  for (const auto &[name, node] : from.nodes) {
    // The definition named is the first by file and line, whatever order
    // the units came in: a name several programs define (frontend and
    // backend palloc) is named alike at every session.
    CallGraphNode &n = into.nodes[name];
    if (n.name.empty() || std::tie(node.file, node.line) < std::tie(n.file, n.line)) {
      n.name = node.name;
      n.file = node.file;
      n.line = node.line;
      n.header = node.header;
    } else if (node.file == n.file && node.line == n.line) {
      n.header |= node.header;  // a source file another one includes
    }
    n.files.insert(node.files.begin(), node.files.end());
    merge_body(n, node);
  }
  into.facts.merge(from.facts);
}

// The stored form of a unit's part (unit_cache.h). A unit that includes
// MariaDB's sql_class.h shows its thousands of inline functions, 3.7 MB an
// entry written out in full: paths are stored once and named by index, and
// what is empty, false or the definition's own file is left out. Bump kFormat
// when what DefinitionCollector gathers changes: other formats are other
// settings.
constexpr int kFormat = 2;

nlohmann::json to_payload(const UnitGraph &u) {
  std::map<std::string, size_t> index;
  nlohmann::json paths = nlohmann::json::array();
  auto path = [&](const std::string &p) {
    auto [it, added] = index.emplace(p, index.size());
    if (added) paths.push_back(p);
    return it->second;
  };
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto &[name, n] : u.nodes) {
    nlohmann::json e = {{"n", n.name}, {"f", path(n.file)}, {"l", n.line}, {"s", n.size}};
    if (n.header) e["h"] = true;
    if (n.files != std::set<std::string>{n.file}) {
      e["fs"] = nlohmann::json::array();
      for (const auto &f : n.files) e["fs"].push_back(path(f));
    }
    auto put = [&](const char *key, const std::set<std::string> &xs) {
      if (!xs.empty()) e[key] = xs;
    };
    put("c", n.callees);
    put("lc", n.loop_callees);
    put("oc", n.opaque_callees);
    put("pt", n.pointer_types);
    put("vm", n.virtual_methods);
    if (n.loops_call_pointers) e["lp"] = true;
    nodes.push_back(std::move(e));
  }
  return {{"paths", paths}, {"nodes", nodes}, {"address_taken", u.facts.address_taken},
          {"overriders", u.facts.overriders}};
}

// Throws (nlohmann::json::exception, std::out_of_range) on an entry of
// another shape; what it returns is whole.
UnitGraph from_payload(const nlohmann::json &j) {
  const auto paths = j.at("paths").get<std::vector<std::string>>();
  UnitGraph u;
  for (const auto &e : j.at("nodes")) {
    CallGraphNode n;
    e.at("n").get_to(n.name);
    n.file = paths.at(e.at("f").get<size_t>());
    e.at("l").get_to(n.line);
    e.at("s").get_to(n.size);
    n.header = e.value("h", false);
    if (auto fs = e.find("fs"); fs != e.end())
      for (const auto &f : *fs) n.files.insert(paths.at(f.get<size_t>()));
    else
      n.files = {n.file};
    auto get = [&](const char *key, std::set<std::string> &xs) {
      if (auto it = e.find(key); it != e.end()) it->get_to(xs);
    };
    get("c", n.callees);
    get("lc", n.loop_callees);
    get("oc", n.opaque_callees);
    get("pt", n.pointer_types);
    get("vm", n.virtual_methods);
    n.loops_call_pointers = e.value("lp", false);
    std::string key = n.name;
    u.nodes.emplace(std::move(key), std::move(n));
  }
  j.at("address_taken").get_to(u.facts.address_taken);
  j.at("overriders").get_to(u.facts.overriders);
  return u;
}

class DefinitionCollector : public RecursiveASTVisitor<DefinitionCollector> {
 public:
  DefinitionCollector(ASTContext &ast, std::map<std::string, CallGraphNode> &out, PointerFacts &facts)
      : ast_(ast), out_(out), facts_(facts) {}

  // A reference to a function anywhere but as a call's callee takes its
  // address (a pointer, a table entry, a callback argument); a cast to a
  // function pointer type, as that type too. Calls are visited before their
  // callee expressions.
  bool VisitCallExpr(CallExpr *ce) {
    if (Expr *callee = ce->getCallee()) callees_.insert(callee->IgnoreParenImpCasts());
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr *e) {
    const auto *fd = dyn_cast<FunctionDecl>(e->getDecl());
    if (fd && !callees_.count(e) && !in_system_header(e->getLocation())) take_address(fd, fd->getType());
    return true;
  }
  bool VisitExplicitCastExpr(ExplicitCastExpr *e) {
    const FunctionDecl *fd = cast_function(e);
    if (fd && !in_system_header(e->getBeginLoc())) take_address(fd, e->getType());
    return true;
  }
  bool VisitCXXMethodDecl(CXXMethodDecl *md) {
    if (!md->isVirtual() || !md->doesThisDeclarationHaveABody() || in_system_header(md->getLocation())) return true;
    const std::string name = normalize_qualified(md->getQualifiedNameAsString());
    facts_.overriders[name].insert(name);  // a virtual call of m may reach m itself
    for (const CXXMethodDecl *o : overridden_methods(md))
      facts_.overriders[normalize_qualified(o->getQualifiedNameAsString())].insert(name);
    return true;
  }

  bool VisitFunctionDecl(FunctionDecl *fd) {
    if (!fd->doesThisDeclarationHaveABody() || !fd->isThisDeclarationADefinition() || fd->isImplicit() ||
        fd->getTemplateInstantiationPattern() || isLambdaCallOperator(fd))
      return true;
    const SourceManager &sm = ast_.getSourceManager();
    SourceLocation loc = sm.getExpansionLoc(fd->getLocation());
    if (sm.isInSystemHeader(loc)) return true;
    CallGraphNode &n = out_[normalize_qualified(fd->getQualifiedNameAsString())];
    if (n.name.empty()) {
      n.name = normalize_qualified(fd->getQualifiedNameAsString());
      n.file = file_of(loc, sm);
      n.line = sm.getSpellingLineNumber(loc);
      n.header = !sm.isInMainFile(loc);
    }
    n.files.insert(file_of(loc, sm));
    CallGraphNode body;
    CalleeCollector c(ast_, body);
    c.TraverseStmt(fd->getBody());
    merge_body(n, body);
    return true;
  }

 private:
  bool in_system_header(SourceLocation loc) const {
    const SourceManager &sm = ast_.getSourceManager();
    return sm.isInSystemHeader(sm.getExpansionLoc(loc));
  }
  void take_address(const FunctionDecl *fd, QualType type) {
    if (std::string t = address_key(fd, type, ast_); !t.empty())
      facts_.address_taken[t].insert(normalize_qualified(fd->getQualifiedNameAsString()));
  }
  ASTContext &ast_;
  std::map<std::string, CallGraphNode> &out_;
  PointerFacts &facts_;
  std::set<const Expr *> callees_;
};

}  // namespace

Expected<CallGraph> graph_below(const std::map<std::string, CallGraphNode> &all, const std::string &root_text) {
  std::string root = normalize_qualified(root_text);
  if (root.rfind("::", 0) == 0) root = root.substr(2);
  if (!all.count(root)) {
    std::vector<std::string> names;
    for (const auto &[n, node] : all) names.push_back(n);
    std::string hint;
    for (const auto &c : close_matches(root, names)) hint += (hint.empty() ? "" : ", ") + c;
    return Error{"--root " + root_text + ": no definition in the tree" + (hint.empty() ? "" : "; close matches: " + hint)};
  }
  // Tarjan's algorithm, iterative (deep call chains must not overflow the stack).
  std::map<std::string, int> index, low, comp;
  std::vector<std::string> stack, order;
  std::set<std::string> on_stack;
  int next = 0, ncomp = 0;
  struct Frame {
    std::string v;
    std::vector<std::string> succ;
    size_t i;
  };
  auto successors = [&](const std::string &v) {
    std::vector<std::string> s;
    for (const auto &c : all.at(v).callees)
      if (all.count(c)) s.push_back(c);
    return s;
  };
  std::vector<Frame> dfs;
  auto push = [&](const std::string &v) {
    index[v] = low[v] = next++;
    stack.push_back(v);
    on_stack.insert(v);
    dfs.push_back({v, successors(v), 0});
  };
  push(root);
  while (!dfs.empty()) {
    Frame &f = dfs.back();
    if (f.i < f.succ.size()) {
      std::string w = f.succ[f.i++];
      if (!index.count(w)) push(w);
      else if (on_stack.count(w)) low[f.v] = std::min(low[f.v], index[w]);
      continue;
    }
    std::string v = f.v;
    dfs.pop_back();
    if (!dfs.empty()) low[dfs.back().v] = std::min(low[dfs.back().v], low[v]);
    if (low[v] == index[v]) {
      std::string w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack.erase(w);
        comp[w] = ncomp;
      } while (w != v);
      ++ncomp;
    }
  }
  // Tarjan emits components callees-first: heights in one pass.
  std::vector<int> comp_height(ncomp, 0);
  std::vector<std::vector<std::string>> members(ncomp);
  for (const auto &[v, c] : comp) members[c].push_back(v);
  for (int c = 0; c < ncomp; ++c)
    for (const auto &v : members[c])
      for (const auto &w : successors(v))
        if (comp[w] != c) comp_height[c] = std::max(comp_height[c], comp_height[comp[w]] + 1);
  CallGraph g;
  g.root = root;
  for (const auto &[v, c] : comp) {
    CallGraphNode n = all.at(v);
    n.height = comp_height[c];
    g.nodes[v] = n;
  }
  g.height = g.nodes[root].height;
  return g;
}

Expected<CallGraph> build_callgraph(const CallGraphOptions &o) {
  auto db = load_compile_db(o.build_dir);
  if (!db) return db.error();
  // An instrumented tree is read as it was originally.
  auto place = locate_tree(o.build_dir, "");
  if (!place) return place.error();
  auto journal = read_journal(place->journal_dir);
  if (!journal) return journal.error();
  auto originals = read_originals(*journal);
  if (!originals) return originals.error();
  // A unit whose files are as when it was last parsed is not parsed again
  // (unit_cache.h): a session parses the same pristine tree at every start.
  std::optional<UnitCache> cache;
  if (o.cache)
    cache.emplace(o.build_dir + "/.vprof-cache/callgraph", "callgraph " + std::to_string(kFormat) + "\n" + this_vprof(),
                  [&originals](const std::string &path) { return contents(path, *originals); });
  auto cached = [&cache](const CompileEntry &unit) -> std::optional<UnitGraph> {
    std::optional<UnitCache::Entry> e = cache ? cache->get(unit) : std::nullopt;
    if (!e) return std::nullopt;
    try {
      return from_payload(e->payload);
    } catch (const std::exception &) {
      return std::nullopt;  // another shape (a json error, a path index out of range): parsed again
    }
  };
  const size_t n = db->entries.size();
  std::vector<UnitGraph> partial(tu_workers(o.jobs, n));
  std::atomic<size_t> from_cache{0};
  Status parsed = for_each_tu(
      n, o.jobs,
      [&](size_t i, unsigned w) -> Status {
        const CompileEntry &unit = db->entries[i];
        if (std::optional<UnitGraph> stored = cached(unit)) {
          merge_unit(partial[w], *stored);
          ++from_cache;
          return Status::Ok();
        }
        UnitGraph u;
        std::vector<std::string> read;
        Status st = parse_tu(unit, &*originals, [&](ASTContext &ast) {
          DefinitionCollector c(ast, u.nodes, u.facts);
          c.TraverseDecl(ast.getTranslationUnitDecl());
          read = files_read(ast.getSourceManager());
        });
        if (!st) return st;
        if (cache) cache->put(unit, read, to_payload(u));
        merge_unit(partial[w], u);
        return Status::Ok();
      },
      [&](size_t count, size_t) {
        if (o.progress) o.progress(count, n);
      });
  if (!parsed) return Error{parsed.message()};
  UnitGraph whole_tree;
  for (const auto &p : partial) merge_unit(whole_tree, p);
  std::map<std::string, CallGraphNode> &all = whole_tree.nodes;
  resolve_pointer_callees(all, whole_tree.facts);
  if (o.whole_tree) {
    CallGraph whole;
    whole.nodes = std::move(all);
    whole.files_parsed = db->entries.size();
    whole.files_from_cache = from_cache;
    return whole;
  }
  auto g = graph_below(all, o.root);
  if (!g) return g.error();
  g->files_parsed = db->entries.size();
  g->files_from_cache = from_cache;
  return g;
}

nlohmann::json callgraph_json(const CallGraph &g) {
  nlohmann::json fns = nlohmann::json::array();
  std::vector<const CallGraphNode *> order;
  for (const auto &[n, node] : g.nodes) order.push_back(&node);
  std::stable_sort(order.begin(), order.end(),
                   [](const CallGraphNode *a, const CallGraphNode *b) { return a->height > b->height; });
  for (const CallGraphNode *n : order)
    fns.push_back({{"name", n->name}, {"height", n->height}, {"file", n->file}, {"line", n->line},
                   {"size", n->size}, {"callees", std::vector<std::string>(n->callees.begin(), n->callees.end())},
                   {"loop_callees", std::vector<std::string>(n->loop_callees.begin(), n->loop_callees.end())},
                   {"opaque_callees", std::vector<std::string>(n->opaque_callees.begin(), n->opaque_callees.end())},
                   {"pointer_callees", std::vector<std::string>(n->pointer_callees.begin(), n->pointer_callees.end())}});
  return {{"schema_version", schema::kCallGraph.version}, {"root", g.root}, {"height", g.height}, {"functions", fns}};
}

}  // namespace vprof::instr
