#include "analyzer/pipeline/analyze.h"

#include "analyzer/names/symbols.h"

#include <set>
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "analyzer/factors/heights.h"
#include "analyzer/factors/tail.h"
#include "analyzer/tree/merge_runs.h"
#include "analyzer/util/prefault.h"

namespace vprof::analyzer {
namespace {

std::string function_of(const StackTrie &trie, const Names &names, uint32_t node) {
  for (uint32_t n = node; n != StackTrie::kRoot; n = trie[n].parent) {
    const StackNode &s = trie[n];
    if (s.kind == FrameKind::Function) return names.function(s.id);
    if (s.kind == FrameKind::Site && s.callee_fn) return names.function(s.callee_fn);
    if (s.kind == FrameKind::Site) {
      // Inside a call of an uninstrumented callee: the caller is what we know.
      const CallSiteInfo *si = names.site(s.id);
      if (si && si->function_id) return names.function(si->function_id);
    }
  }
  return frame_label(FrameKind::Root);
}

std::string site_label(const StackTrie &trie, const Names &names, uint32_t node) {
  const StackNode &s = trie[node];
  if (s.kind != FrameKind::Site) return function_of(trie, names, node);
  if (const CallSiteInfo *si = names.site(s.id))
    return fmt::format("{} ({}:{})", si->callee, si->file, si->line);
  return names.callee(s.id);
}

}  // namespace

namespace {

// The run's columns, latency and tree, from its walk (its trie and paths)
// and the root: a trace's last steps, and a summary's (run_summary.h).
Status derive(RunAnalysis &r, uint32_t root_fn, const AnalyzeOptions &opt) {
  auto columns = build_columns(r.trie, r.paths, root_fn, opt.max_cell_bytes);
  if (!columns)
    return Error{fmt::format("{}: {}; analyze a shorter trace or instrument fewer functions", r.dir,
                             columns.error().message)};
  r.columns = std::move(*columns);
  std::vector<double> lat(r.columns.latency.data(), r.columns.latency.data() + r.columns.latency.size());
  r.latency = latency_stats(std::move(lat));
  r.tree = build_variance_tree(r.columns, r.names, opt.root.empty() ? "latency" : opt.root, r.run);
  return Status::Ok();
}

// Everything after the walk: the root, the matrices, the tree, and what the
// report shows of the trace (`meta`: the trace's data without its events).
Expected<std::unique_ptr<RunAnalysis>> finish_run(TracePaths tp, const trace::Trace &meta,
                                                  const trace::ProcessFiles &processes, Names names, uint32_t root_fn,
                                                  const AnalyzeOptions &opt, int run) {
  auto r = std::make_unique<RunAnalysis>();
  r->dir = meta.dir;
  r->run = run;
  r->names = std::move(names);
  r->trie = std::move(tp.trie);
  r->merge = tp.merge;
  r->merge_stats = tp.merge_stats;
  r->paths = std::move(tp.paths);
  if (Status d = derive(*r, root_fn, opt); !d) return Error{d.message()};
  r->overhead = meta.overhead;
  r->records = meta.total_records;
  r->labels = meta.labels;
  for (const auto &t : meta.threads) r->tid_pid.emplace(t.tid, t.pid);
  r->processes = processes;
  r->read.dropped_records = meta.dropped_records;
  r->read.lost_threads = r->processes.lost_threads;
  r->read.lost_records = r->processes.lost_records;
  r->read.ownership_misses = r->processes.ownership_misses;
  r->read.reader_errors = meta.count(trace::Severity::Error);
  r->read.reader_warnings = meta.count(trace::Severity::Warning);
  r->read.late_switches = meta.late_switches;
  r->read.off_intervals = meta.off_intervals;
  // Ids no manifest names: a report of fn#ID and site#ID is no report of code.
  std::set<std::pair<int, uint32_t>> unnamed;
  for (size_t i = 0; i < r->trie.size(); ++i) {
    const StackNode &n = r->trie[uint32_t(i)];
    if ((n.kind == FrameKind::Function && !r->names.functions.count(n.id)) ||
        (n.kind == FrameKind::Site && !r->names.sites.count(n.id)))
      unnamed.insert({int(n.kind), n.id});
  }
  r->read.unnamed_ids = unnamed.size();
  r->files = meta.files;
  r->losses = meta.losses;
  for (const auto &d : meta.diagnostics) {
    if (d.severity == trace::Severity::Info) continue;
    if (r->first_diagnostics.size() >= 5) break;
    r->first_diagnostics.push_back(d.str());
  }
  return r;
}

// The --root function's id (0: none), checked before any work is done.
Expected<uint32_t> root_id(const Names &names, const AnalyzeOptions &opt, const std::string &dir) {
  if (opt.root.empty()) return uint32_t{0};
  uint32_t id = names.function_id(opt.root);
  if (id == 0 && names.functions.empty())
    return Error{fmt::format("{}: --root {}: the trace has no manifest to find it in (no manifest.json in it; "
                             "give the instrumentation's with --manifest FILE)",
                             dir, opt.root)};
  if (id == 0)
    return Error{fmt::format("{}: --root {}: no such function in the manifest", dir, opt.root)};
  return id;
}

// Names the places wakers outside instrumented code released at, from the
// trace's maps files and the binaries (names/symbols.h), numbering the names
// into `places` (Names::places).
// The names an earlier analysis of the trace kept (places.json) come first:
// the binaries may have been rebuilt since (an iterate session's next
// iteration), and the Symbolizer then names nothing. What this analysis
// named from the binaries is kept for the next, when the trace had none.
struct PlaceNames {
  explicit PlaceNames(const std::string &dir) : dir(dir), symbols(dir) {
    for (auto &p : load_places(dir, &refused)) kept.emplace(std::make_pair(p.pid, p.pc), std::move(p.function));
    had_file = !kept.empty();
  }
  // The names, numbered as the Held leaves' ids (Names::places); what was
  // named from the binaries is kept in the trace first (a read-only trace:
  // named again next time).
  std::vector<std::string> finish() {
    if (!had_file && refused.empty() && !named.empty()) (void)save_places(dir, named);
    return std::move(places);
  }
  std::string dir;
  Symbolizer symbols;
  std::map<std::pair<uint32_t, uint64_t>, std::string> kept;
  bool had_file = false;
  std::string refused;  // a places.json there, not read (load_places)
  std::vector<NamedPlace> named;
  std::vector<std::string> places;
  std::unordered_map<std::string, uint32_t> number;
  uint32_t operator()(uint32_t pid, uint64_t pc) {
    std::string f;
    if (auto k = kept.find({pid, pc}); k != kept.end()) {
      f = k->second;
    } else if (!had_file) {
      f = symbols.function(pid, pc);  // once per address: places are per thread
      kept.emplace(std::make_pair(pid, pc), f);
      if (!f.empty()) named.push_back({pid, pc, f});
    }
    if (f.empty()) return 0;
    auto [it, fresh] = number.try_emplace(f, uint32_t(places.size() + 1));
    if (fresh) places.push_back(std::move(f));
    return it->second;
  }
};

PathOptions path_options(const AnalyzeOptions &opt, const DirectCalls &direct, PlaceNames &places) {
  PathOptions po;
  po.threads = opt.threads;
  po.workers = opt.workers;
  po.epoch_records = opt.epoch_records;
  po.direct_calls = &direct;
  po.name_place = [&places](uint32_t pid, uint64_t pc) { return places(pid, pc); };
  return po;
}

// The manifest's direct calls: a site whose callee is an instrumented
// function's name (merge/timeline.h).
DirectCalls direct_calls(const Names &names) {
  DirectCalls d;
  // v[id] = value, v grown with zeros.
  auto put = [](auto &v, uint32_t id, auto value) {
    if (id >= v.size()) v.resize(size_t(id) + 1, 0);
    v[id] = value;
  };
  std::unordered_map<std::string, uint32_t> number;
  for (const auto &[id, f] : names.functions)
    put(d.fn_name, id, number.emplace(f.name, uint32_t(number.size() + 1)).first->second);
  for (const auto &[id, site] : names.sites) {
    if (names.schema_version >= 2) put(site.indirect ? d.indirect : d.named, id, uint8_t{1});
    if (site.sync) put(d.sync, id, uint8_t{1});
    if (site.to_full_expression) put(d.to_full_expression, id, uint8_t{1});
    if (auto it = number.find(site.callee); it != number.end()) put(d.site_callee, id, it->second);
  }
  return d;
}

// The merge and the walk, from streams or a trace in memory, with the
// release places named into names.places.
template <class Input>
TracePaths paths_of(const Input &input, const std::string &dir, const AnalyzeOptions &opt, Names &names,
                    std::string &places_refused) {
  const DirectCalls direct = direct_calls(names);
  PlaceNames places(dir);
  TracePaths tp = compute_critical_paths(input, path_options(opt, direct, places));
  names.places = places.finish();
  names.looped_sites = tp.looped_sites;
  places_refused = places.refused;
  return tp;
}

// A refused places.json is said first among what the reader said.
Expected<std::unique_ptr<RunAnalysis>> said(Expected<std::unique_ptr<RunAnalysis>> r, const std::string &refused) {
  if (r && !refused.empty()) (*r)->first_diagnostics.insert((*r)->first_diagnostics.begin(), refused);
  return r;
}

}  // namespace

Expected<std::unique_ptr<RunAnalysis>> analyze_run(trace::TraceStream &stream, Names names,
                                                   const AnalyzeOptions &opt, int run) {
  auto root = root_id(names, opt, stream.dir());
  if (!root) return root.error();
  std::string refused;
  TracePaths tp = paths_of(stream.sources(), stream.dir(), opt, names, refused);
  return said(finish_run(std::move(tp), stream.summary(), stream.trace_dir().processes(), std::move(names), *root, opt,
                         run),
              refused);
}

Expected<std::unique_ptr<RunAnalysis>> analyze_run(const trace::Trace &trace, Names names,
                                                   const AnalyzeOptions &opt, int run) {
  auto root = root_id(names, opt, trace.dir);
  if (!root) return root.error();
  std::string refused;
  TracePaths tp = paths_of(trace, trace.dir, opt, names, refused);
  return said(finish_run(std::move(tp), trace, trace::read_process_files(trace.dir), std::move(names), *root, opt, run),
              refused);
}

DataLost data_lost(const RunAnalysis &r) {
  DataLost d;
  d.files = r.files;
  d.incomplete_intervals = r.paths.counters.incomplete_intervals;
  for (const trace::FileLoss &l : r.losses) {
    d.damaged += l.lost_anything();
    d.unreadable += l.unreadable;
    d.bytes += l.bytes;
    d.missing_bytes += l.missing_bytes;
    d.records += l.records;
    d.clamped += l.clamped;
  }
  return d;
}

DataLost &DataLost::operator+=(const DataLost &o) {
  files += o.files;
  damaged += o.damaged;
  unreadable += o.unreadable;
  bytes += o.bytes;
  missing_bytes += o.missing_bytes;
  records += o.records;
  clamped += o.clamped;
  incomplete_intervals += o.incomplete_intervals;
  return *this;
}

DataLost data_lost(const Analysis &a) {
  DataLost d;
  for (const auto &r : a.runs) d += data_lost(*r);
  return d;
}

Level worst_level(const RunAnalysis &r) {
  Level w = data_lost(r).any() ? Level::loss : Level::info;
  for_each_quality(r, [&](const Counter &c) {
    if (c.value && c.level > w) w = c.level;
  });
  return w;
}

Level worst_level(const Analysis &a) {
  Level w = Level::info;
  for (const auto &r : a.runs) w = std::max(w, worst_level(*r));
  return w;
}

std::unique_ptr<Analysis> combine(std::vector<std::unique_ptr<RunAnalysis>> runs,
                                  const AnalyzeOptions &opt) {
  auto a = std::make_unique<Analysis>();
  a->runs = std::move(runs);
  a->k = opt.factors.k;
  a->d = opt.factors.d;
  a->e = opt.factors.e;
  a->paper = opt.factors.paper;
  a->root_label = opt.root.empty() ? "latency" : opt.root;
  std::vector<VarNode> trees;
  for (const auto &r : a->runs) trees.push_back(r->repeat ? VarNode{} : r->tree);  // a repeat grafts nothing
  std::vector<Graft> grafts;
  a->tree = merge_runs(trees, &grafts);
  for (const Graft &g : grafts)
    if (runs_disagree(g)) a->disagreements.push_back(g);
  Heights h = compute_heights(a->tree, opt.callgraph, opt.root);
  a->height_root = h.root;
  // Selected against the code's part of Var(root) (factors.h).
  FactorOptions sel = opt.factors;
  if (!sel.paper) sel.d = selection_threshold(a->tree, sel.d);
  a->d_selected = sel.d;
  a->factors = rank_factors(a->tree, h, sel);
  const RunAnalysis &base = *a->runs.front();
  FactorOptions fo = sel;
  std::unique_ptr<Workers> own;
  if (!opt.workers && opt.threads > 1) own = std::make_unique<Workers>(opt.threads);
  fo.workers = opt.workers ? opt.workers : own.get();
  // Each candidate is assessed in the run that measured it, against that
  // run's own root (a later run instruments the whole chain up to the root),
  // before the final ranking demotes the fragile ones.
  std::vector<const VarNode *> run_trees;
  for (const auto &r : a->runs) run_trees.push_back(&r->tree);
  // The causes that cannot be a factor's twin are assessed in the factors'
  // pass (one set of weights and one root column for both: the causes' own
  // pass was 13.7% of an analysis' instructions on the 16x files).
  a->causes = rank_causes(a->tree, sel);
  const std::vector<Factor *> early_causes = place_own_causes(a->causes, a->factors, run_trees, fo);
  auto assess = [&] {
    place_in_runs(a->factors, run_trees, sel.paper);
    std::vector<Factor *> all;
    for (Factor &f : a->factors) all.push_back(&f);
    all.insert(all.end(), early_causes.begin(), early_causes.end());
    for (size_t r = 0; r < a->runs.size(); ++r) bootstrap_factors(all, a->runs[r]->columns, int(r), fo);
  };
  assess();
  if (widen_candidates(a->factors, sel)) assess();
  rerank_fragile(a->factors, sel);
  for (size_t r = 0; r < a->runs.size(); ++r)
    tail_shares(a->factors, a->runs[r]->columns, int(r));
  between_runs(a->factors, run_trees, sel.paper);
  std::vector<const Columns *> run_columns;
  for (const auto &r : a->runs) run_columns.push_back(&r->columns);
  assess_causes(a->causes, a->factors, run_trees, run_columns, fo);
  a->types = split_by_type(base.paths, base.columns, base.labels);
  std::vector<TypeRun> type_runs;
  for (const auto &r : a->runs) type_runs.push_back({&r->paths, &r->columns, &r->labels, &r->names});
  type_trees(a->types, type_runs, a->root_label);
  a->clients = client_fairness(base.paths, base.labels);
  for (const Blame &b : base.paths.blame) {
    NamedBlame nb;
    nb.wait_site = site_label(base.trie, base.names, b.wait_node);
    nb.waker_tid = b.waker_tid;
    if (auto it = base.tid_pid.find(b.waker_tid); it != base.tid_pid.end()) nb.waker_pid = it->second;
    nb.waker_function = function_of(base.trie, base.names, b.waker_node);
    // A waker in no instrumented frame, named by where it released, as its Held part is.
    if (std::string f = base.names.place_label(b.place & ~kHeldPlace); b.place && !f.empty())
      nb.waker_function = std::move(f);
    nb.waker_interval = b.waker_label;
    nb.ns = double(b.ns);
    a->blame.push_back(std::move(nb));
  }
  return a;
}

Status derive_run(RunAnalysis &r, const AnalyzeOptions &opt) {
  auto root = root_id(r.names, opt, r.dir);
  if (!root) return Status(root.error());
  return derive(r, *root, opt);
}

void reduce_run(RunAnalysis &r) {
  std::vector<PathCell>().swap(r.paths.cells);
  std::vector<size_t>{0}.swap(r.paths.row_start);
}

void drop(std::unique_ptr<Analysis> &a) {
  a.reset();
  give_back_freed_memory();
}

}  // namespace vprof::analyzer
