#include "iterate/session.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "analyzer/names/names.h"
#include "analyzer/profile/profile.h"
#include "analyzer/pipeline/trace_dirs.h"
#include "analyzer/read/recording.h"
#include "analyzer/read/trace_dir.h"
#include "analyzer/report/preemption.h"
#include "analyzer/report/reporter.h"
#include "common/output_file.h"
#include "common/process.h"
#include "instrumenter/callgraph.h"
#include "instrumenter/instrument.h"
#include "instrumenter/names.h"
#include "instrumenter/sync_pack.h"
#include "instrumenter/tree.h"
#include "iterate/prebuild.h"
#include <vprof/trace_format.h>

namespace fs = std::filesystem;

namespace vprof::iterate {

namespace {

// Rounds of `runs` runs an iteration makes, at most, when recording in
// windows and no window opened (Session::run's loop).
constexpr int kWindowRounds = 5;

// VPROF_SAMPLE_WINDOW_MS's default, from the runtime's one list of options.
constexpr uint64_t kDefaultWindowMs = [] {
  uint64_t ms = 0;
#define VPROF_OPTION_STR(field, env, def, help)
#define VPROF_OPTION_U64(field, env, def, lo, hi, step, help) \
  if (std::string_view(#field) == "sample_window_ms") ms = def;
#include "common/runtime_options.def"
#undef VPROF_OPTION_STR
#undef VPROF_OPTION_U64
  return ms;
}();

// Recorded in windows, with intervals begun and no window opened.
bool no_window_opened(const analyzer::RunAnalysis &r) {
  return r.paths.rows.empty() && r.merge_stats.sampling.sampled && r.merge_stats.sampling.windows == 0 &&
         analyzer::intervals_left_out(r) > 0;
}

std::vector<std::string> read_lines(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(l);
  return all;
}

std::string tail(const std::string &path, size_t lines) {
  std::vector<std::string> all = read_lines(path);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += "    " + all[i] + "\n";
  return out;
}

// A compiler's or linker's error: "file:line:col: error:", "fatal error:",
// "undefined reference to", "ld returned 1 exit status", "ld.lld: error:".
bool is_error_line(const std::string &l) {
  for (const char *what : {": error:", ": fatal error:", "undefined reference to", "ld returned"})
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// Why a build failed, from its log: the first errors (a failed build's last
// lines are often other files' warnings, or make's summary), then the last
// lines, each part saying what it is.
std::string build_failure(const std::string &log, int status) {
  const size_t kErrors = 5, kLast = 10;
  std::vector<std::string> all = read_lines(log);
  std::vector<size_t> errors;
  for (size_t i = 0; i < all.size() && errors.size() < kErrors; ++i)
    if (is_error_line(all[i])) errors.push_back(i);
  std::string out = fmt::format("{}: the build failed (exit {})", log, status);
  size_t from = all.size() > kLast ? all.size() - kLast : 0;
  if (errors.empty()) {
    out += "; no compiler or linker error in its log; its last lines:\n";
  } else {
    out += fmt::format("; its first error{}:\n", errors.size() == 1 ? "" : "s");
    for (size_t i : errors) out += fmt::format("    {}\n", all[i]);
    if (errors.back() >= from) from = errors.back() + 1;  // shown already
    if (from < all.size()) out += "  and its last lines:\n";
  }
  for (size_t i = from; i < all.size(); ++i) out += fmt::format("    {}\n", all[i]);
  return out;
}

std::string plural(size_t n, const char *one, const char *many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

class Session {
 public:
  Session(const Config &c, const SessionOptions &o, const Hooks &h)
      : c_(c), o_(o), h_(h), dir_(c.abs(c.session_dir)), build_dir_(c.abs(c.build_dir)) {}

  // One step per phase of the current iteration (state.h), until the
  // session is done or stopped.
  Expected<Outcome> run();

 private:
  // The steps, in order. Each saves the state it changed.
  Status open_session();                    // the state loaded (or begun), a resumed session said
  Status plan_next(int n);                  // iteration n: its functions chosen (Planned)
  Status run_planned(Iteration &it);        // instrumented, built, run (Ran)
  // Analyzed with every run before it, recorded again while no window
  // opened, its reports written (still Ran).
  Expected<std::unique_ptr<analyzer::Analysis>> analyze_ran(Iteration &it);
  Status decide(Iteration &it, const analyzer::Analysis &a);  // its factors decided (Decided)
  // At a fixed point: whether the last set runs again (config `again`), said.
  bool run_again(const Iteration &it, const analyzer::Analysis &a);
  Expected<Outcome> finish(std::unique_ptr<analyzer::Analysis> analysis);  // the final reports
  void log(const std::string &s) const {
    if (h_.log) h_.log(s);
  }
  bool interrupted() const { return h_.interrupted && h_.interrupted(); }
  std::string state_path() const { return dir_ + "/state.json"; }
  instr::InstrumentOptions instrument_options(std::vector<std::string> functions) const;
  Status run_iteration(Iteration &it);
  // Runs the workload `count` times into the iteration's trace, numbered
  // from `first`.
  Status run_workload(Iteration &it, const std::vector<std::pair<std::string, std::string>> &env, int first,
                      int count);
  // Every analyzed run, those in analyzed_ taken from there (the current
  // iteration's never is: it may still be recorded into).
  Expected<std::unique_ptr<analyzer::Analysis>> analyze();
  // stem.{json,txt,vprof}; with `session` (the final reports) also stem.html,
  // and the JSON and the page carry the session's iterations.
  Status write_reports(const analyzer::Analysis &a, const std::string &stem, bool session = false) const;
  // analyzer::keep_runs with each run's summary written first, and the
  // summarized runs' traces deleted unless the config keeps them.
  void keep_runs(std::unique_ptr<analyzer::Analysis> &analysis, const Iteration &it);
  Probe can_break_down(const std::string &f);
  std::map<std::string, Probe> dry_runs(const std::vector<std::string> &fs) const;
  void probe_many(const std::vector<std::string> &fs);
  // The sync packs the session wraps: the config's, then those it added.
  std::vector<std::string> sync_packs() const;
  // f's rule when the session's sync packs name f, else null.
  const instr::SyncRule *sync_rule(const std::string &f);
  // The shipped pack (annotations/) that names f as a wait, "" when none does.
  std::string shipped_wait_pack(const std::string &f);

  const Config &c_;
  const SessionOptions &o_;
  const Hooks &h_;
  std::string dir_, build_dir_;
  State s_;
  std::optional<instr::SyncRules> sync_rules_;  // loaded on first use; dropped when a pack is added
  std::optional<std::map<std::string, std::string>> shipped_waits_;  // normalized name -> pack
  std::map<std::string, Probe> probes_;          // can_break_down's, by function
  // Each run analysed once (docs/iterate.md): the runs of the iterations
  // decided in this process, reduced, combined again with each new run.
  analyzer::AnalyzedRuns analyzed_;

  // Build once (iterate/prebuild.h). The build the tree holds, made by this
  // process (a resumed session builds again: its tree was restored): the
  // iteration that made it, its functions, its sync packs, its manifest.
  struct Build {
    int iteration = 0;
    std::vector<std::string> functions, packs;
    std::string manifest;
  };
  std::optional<Build> build_;
  // Does the tree's build hold every function of fs, with the session's sync packs?
  bool build_holds(const std::vector<std::string> &fs) const {
    return build_ && build_->packs == sync_packs() && std::all_of(fs.begin(), fs.end(), [&](const std::string &f) {
             return std::find(build_->functions.begin(), build_->functions.end(), f) != build_->functions.end();
           });
  }
  bool prebuild_failed_ = false;  // a build ahead failed once: each iteration builds its set alone
  std::optional<instr::CallGraph> graph_;  // the whole tree's, for building ahead (reach_of)
  bool graph_failed_ = false;              // it could not be read: nothing is built ahead
  // What the last run's probes cost: its records times half a probe pair
  // over its intervals' time (unknown for a resumed session's first plan).
  // More than one level a run while it is within the config's lookahead_budget.
  std::optional<double> last_probe_cost_;
  // The level below `fresh` the build holds, turned on in iteration n's run
  // with `need` (prebuild.h's next_level), when the last run's probes allow.
  void look_ahead(int n, const std::vector<std::string> &fresh, std::vector<std::string> &need);
  // Instruments and builds for `it`: its set, and with `ahead` what
  // prebuild.h's widen adds; build_ becomes it.
  Status build(Iteration &it, bool ahead);
  Status instrument_and_build(Iteration &it, const std::vector<std::string> &functions);
  // The build's manifest cut to the iteration's set, and what its run leaves dormant.
  Expected<RunProbes> run_probes_of(const Iteration &it) const;
  std::map<std::string, Reach> reach_of(const std::vector<std::string> &fs);
};

instr::InstrumentOptions Session::instrument_options(std::vector<std::string> functions) const {
  instr::InstrumentOptions io;
  io.build_dir = build_dir_;
  io.source_root = c_.abs_source_root();
  io.functions = std::move(functions);
  io.sync_packs = sync_packs();
  io.annotations_dir = o_.annotations_dir;
  if (!o_.include_dir.empty()) io.excluded_dirs.push_back(o_.include_dir);
  io.all_files = c_.sync_everywhere;
  io.dormant = c_.prebuild_depth > 0;  // builds ahead: each run leaves the rest dormant
  io.root = c_.root;                    // recorded from its entry in every window
  io.cancelled = [this] { return interrupted(); };
  return io;
}

std::vector<std::string> Session::sync_packs() const {
  std::vector<std::string> packs = c_.sync_packs;
  for (const std::string &p : s_.sync_packs_added)
    if (std::find(packs.begin(), packs.end(), p) == packs.end()) packs.push_back(p);
  return packs;
}

const instr::SyncRule *Session::sync_rule(const std::string &f) {
  if (!sync_rules_) {
    sync_rules_.emplace();
    for (const std::string &p : sync_packs())  // a pack that fails has failed the instrumenter
      (void)instr::load_sync_pack(p, o_.annotations_dir, *sync_rules_);
  }
  auto it = sync_rules_->by_name.find(instr::normalize_qualified(f));
  return it != sync_rules_->by_name.end() ? &it->second : nullptr;
}

std::string Session::shipped_wait_pack(const std::string &f) {
  if (!shipped_waits_) {
    shipped_waits_.emplace();
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(o_.annotations_dir, ec))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());  // the first pack in name order names a wait
    for (const fs::path &file : files) {
      instr::SyncRules rules;
      if (!instr::load_sync_pack(file.string(), o_.annotations_dir, rules)) continue;
      for (const auto &[name, rule] : rules.by_name)
        if (rule.op == instr::SyncOp::Acquire) shipped_waits_->emplace(name, file.stem().string());
    }
  }
  auto it = shipped_waits_->find(instr::normalize_qualified(f));
  return it != shipped_waits_->end() ? it->second : "";
}

Probe Session::can_break_down(const std::string &f) {
  // A wait the sync packs name (WaitLatch, LWLockAcquire): inside is only
  // the waiting (PostgreSQL: WaitLatch -> WaitEventSetWait -> epoll_wait, a
  // run each); what it waited for is the waker's work, in its blame and its
  // Held parts, and on the path when the waker worked for the same interval.
  if (const instr::SyncRule *w = sync_rule(f)) {
    if (w->op == instr::SyncOp::Acquire)
      return fmt::format("a wait of the {} sync pack: its time is another thread's work, in its Held parts "
                         "and blame",
                         w->pack);
    // An unlock or a signal (Apache's apr_thread_mutex_unlock read "cannot be
    // instrumented: no definition"): the call itself, waking a waiter.
    if (w->op == instr::SyncOp::Release)
      return fmt::format("a release of the {} sync pack (an unlock, a signal): its time is the call itself, "
                         "waking whoever waits",
                         w->pack);
  }
  // A wait of a shipped pack the session does not wrap (memcached's
  // pthread_mutex_lock in a session started with no --sync read "no
  // definition in the tree", and the session ended on it, 58% of Var, with
  // no word of who held the locks): the next run wraps the pack.
  if (std::string pack = shipped_wait_pack(f); !pack.empty()) {
    Probe p(fmt::format("a wait of the {} sync pack, which this session did not wrap: the next run wraps it, "
                        "so that the wait's time goes to who held what it waited for",
                        pack));
    p.sync_pack = pack;
    return p;
  }
  // The tree's originals do not change during a session: one dry run a function.
  if (auto it = probes_.find(f); it != probes_.end()) return it->second;
  Probe p = dry_runs({f}).at(f);
  if (!interrupted()) probes_[f] = p;  // a cancelled dry run says nothing of f
  return p;
}

// A dry run on fs: cheap (only the files that name them are parsed) and
// exact about whether each one's body holds calls vprof can time. A function
// no file's text names, or one vprof cannot open, needs the whole tree: the
// session's scan cache has it (the packs are kept so that the cache's
// settings are the iterations' own), and only the units whose stored scans
// do not hold for fs are parsed (scan_cache.h). Empty when a dry run of
// several fails: each is then asked alone.
std::map<std::string, Probe> Session::dry_runs(const std::vector<std::string> &fs) const {
  instr::InstrumentOptions io = instrument_options(fs);
  io.all_files = false;
  io.dry_run = true;
  auto r = instr::instrument(io);
  std::map<std::string, Probe> out;
  if (!r) {
    // A dry run that failed (a unit that does not parse) is a dead end, not
    // an explanation: f is unreached (decide.cc), its reason the error.
    if (fs.size() == 1) {
      Probe &p = out[fs.front()];
      p.opaque = true;
      p.why_not = "cannot be instrumented here: " + r.error().message;
    }
    return out;
  }
  auto has = [](const std::vector<std::string> &v, const std::string &f) {
    return std::find(v.begin(), v.end(), f) != v.end();
  };
  for (const auto &f : fs) {
    Probe &p = out[f];
    auto op = std::find_if(r->opaque.begin(), r->opaque.end(),
                           [&](const instr::OpaqueFunction &o) { return o.pattern == f; });
    if (has(r->undefined_patterns, f)) {
      p.opaque = true;
      p.why_not = kNoDefinition;
    } else if (op != r->opaque.end()) {
      p.opaque = true;
      p.why_not = op->why;
      p.reaches = op->reaches;
      if (p.reaches.empty()) p.why_not += ", and it calls no function defined in the tree";
    } else if (has(r->without_calls, f)) {
      p.why_not = kNoCalls;
    }
  }
  return out;
}

// One dry run for many functions (decide.h, ProbeMany), each answer kept as
// that function's probe.
void Session::probe_many(const std::vector<std::string> &fs) {
  std::vector<std::string> ask;
  for (const auto &f : fs)
    if (!probes_.count(f) && !sync_rule(f) && std::find(ask.begin(), ask.end(), f) == ask.end()) ask.push_back(f);
  if (ask.size() < 2) return;  // one alone is can_break_down's
  auto probes = dry_runs(ask);
  if (interrupted()) return;  // a cancelled dry run says nothing
  for (auto &[f, p] : probes) probes_[f] = std::move(p);
}

Status Session::run_iteration(Iteration &it) {
  std::string idir = fmt::format("{}/iter-{}", dir_, it.number);
  fs::create_directories(idir);
  it.failed.clear();
  // The whole list goes to a file; the progress line names a few (a call
  // through a pointer may reach hundreds of functions).
  std::string list = idir + "/instrumented.txt";
  {
    std::ofstream out(list);
    for (const auto &f : it.instrumented) out << f << "\n";
  }
  if (it.instrumented.size() <= 6)
    log(fmt::format("iteration {}: instrumenting {}", it.number, fmt::join(it.instrumented, ", ")));
  else
    log(fmt::format("iteration {}: instrumenting {} functions: {} (all of them: {})", it.number,
                    it.instrumented.size(), some_names(it.instrumented), list));
  std::error_code ec;
  fs::remove(idir + "/dormant.txt", ec);
  // A level whose functions the tree's build holds needs no build: its run
  // turns on their probes and leaves the rest dormant.
  const bool held = build_holds(it.instrumented);
  if (held) {
    it.files_changed = -1;
    it.build_seconds = -1;
    it.prebuilt.clear();
    it.ran_on_build_of = build_->iteration;
    log(fmt::format("iteration {}: no build: iteration {}'s build holds its functions (its run turns on their "
                    "probes; the other {} dormant)",
                    it.number, build_->iteration, plural(build_->functions.size() - it.instrumented.size(),
                                                        "function stays", "functions stay")));
  } else if (Status b = build(it, c_.prebuild_depth > 0 && !prebuild_failed_); !b) {
    return b;
  }
  if (interrupted()) return Error{"interrupted"};
  // The run's own manifest (its set's functions and call sites) and the
  // probes it leaves dormant.
  auto probes = run_probes_of(it);
  if (!probes) return probes.error();
  const bool too_many = probes->largest_dormant >= VPROF_DORMANT_IDS;
  if (!probes->missing.empty() || too_many) {
    // Not expected: a name the build's manifest does not answer to, or more
    // probes than the runtime's bits. This iteration builds its set alone.
    log(fmt::format("iteration {}: {}; building its functions alone", it.number,
                    too_many ? fmt::format("the build has probe ids past {}", VPROF_DORMANT_IDS)
                             : fmt::format("the build holds no function named {}", probes->missing.front())));
    if (Status b = build(it, false); !b) return b;
    probes = run_probes_of(it);
    if (!probes) return probes.error();
  }
  std::string run_manifest = build_->manifest;
  if (!probes->dormant.empty()) {
    run_manifest = idir + "/manifest.json";
    std::ofstream m(run_manifest), d(idir + "/dormant.txt");
    m << probes->manifest.dump(2) << "\n";
    for (const auto &l : probes->dormant) d << l << "\n";
    if (!m.flush() || !d.flush()) return Error{fmt::format("{}: cannot write the run's manifest and dormant probes", idir)};
  }
  if (interrupted()) return Error{"interrupted"};

  fs::remove_all(it.trace_dir, ec);
  // Prepared, locked and summed up as `vprof run` does (analyzer/read/recording.h),
  // with this iteration's manifest.
  auto rec = trace::Recording::start(it.trace_dir, run_manifest);
  if (!rec) return Error{rec.error().message};
  // A repeat says so in its trace: every analysis of it, the session's and
  // `vprof analyze` by hand, reads it there (RunAnalysis::repeat).
  if (it.again_of > 0 && size_t(it.again_of) <= s_.iterations.size() &&
      !(*rec)->mark_repeat_of(s_.iterations[size_t(it.again_of) - 1].trace_dir)) {
    const int err = errno;
    (*rec)->abandon();
    return Error{fmt::format("{}/repeat-of: cannot write it ({}): this run repeats iteration {}'s and would be "
                             "grafted as a new level",
                             it.trace_dir, std::strerror(err), it.again_of)};
  }
  if (Status ran = run_workload(it, (*rec)->env(c_.sample), 1, c_.runs); !ran) return ran;
  const trace::Recording::Outcome out =
      (*rec)->finish([&](const std::string &line) { log(fmt::format("iteration {}: {}", it.number, line)); });
  if (out.moved) return Error{fmt::format("{}: moved or replaced while the workload ran", it.trace_dir)};
  // Probes of another iteration's instrumentation would be read under this
  // one's names: stop, saying why, rather than analyse them.
  auto names = analyzer::load_manifest(it.trace_dir + "/manifest.json");
  if (!names) return Error{names.error().message};
  if (!out.trace) return Error{fmt::format("{}: cannot open the trace directory after the run", it.trace_dir)};
  const trace::ProcessFiles &procs = out.trace->processes();
  if (std::string e = trace::build_mismatch(procs, it.trace_dir, names->ids); !e.empty()) return Error{e};
  // A server that dropped root and could not write its threads' files: say
  // which process, as whom, before an analysis finds nothing to read.
  for (const std::string &line : trace::refused_lines(procs, it.trace_dir))
    log(fmt::format("iteration {}: warning: {}", it.number, line));
  it.phase = Phase::Ran;
  return Status::Ok();
}

Expected<RunProbes> Session::run_probes_of(const Iteration &it) const {
  std::ifstream in(build_->manifest);
  nlohmann::json built = nlohmann::json::parse(in, nullptr, false);
  if (built.is_discarded()) return Error{fmt::format("{}: cannot read the build's manifest", build_->manifest)};
  return run_probes(built, it.instrumented);
}

// What each of fs calls, for a build ahead, from the tree's call graph
// (read once a session: one parse of every unit, 55 s on PostgreSQL; a dry
// run a level parsed every file naming a level's functions, minutes a
// build). A function can be built ahead when the tree defines it in one
// file, it makes calls, and no sync pack names it; whether vprof can open
// its body, the instrument says (optional_functions). A name several files
// define is left to the level that asks for it: PostgreSQL's frontend
// programs define their own palloc and write_stderr, and a build ahead
// instrumented pg_ctl, which the session's build does not install, so a
// later run carried another build's probes. A call through a pointer or a
// virtual call reaches what the graph's pointer_callees say (the functions
// whose address the tree takes as its type, the method's overriders): a
// level that breaks one down asks for those, and at PostgreSQL's
// node->ExecProcNode every later level had left the build.
std::map<std::string, Reach> Session::reach_of(const std::vector<std::string> &fs) {
  if (!graph_ && !graph_failed_) {
    instr::CallGraphOptions go;
    go.build_dir = build_dir_;
    go.whole_tree = true;
    auto g = instr::build_callgraph(go);
    if (g) {
      graph_ = std::move(*g);
    } else {
      graph_failed_ = true;
      log("warning: cannot read the tree's call graph (" + g.error().message + "); nothing is built ahead");
    }
  }
  std::map<std::string, Reach> out;
  if (!graph_) return out;
  for (const auto &f : fs) {
    auto p = instr::parse_pattern(f);
    if (!p) continue;
    auto n = graph_->nodes.find(p->name);
    if (n == graph_->nodes.end()) continue;
    const bool waits = sync_rule(f) || !shipped_wait_pack(f).empty();
    std::set<std::string> calls = n->second.callees;
    calls.insert(n->second.pointer_callees.begin(), n->second.pointer_callees.end());
    out[f] = Reach{!calls.empty() && n->second.files.size() == 1 && !waits &&
                       left_out_ahead(n->second, graph_->nodes, unsigned(c_.prebuild_min_size)).empty(),
                   std::move(calls), n->second.size, n->second.header};
  }
  return out;
}

Status Session::build(Iteration &it, bool ahead) {
  std::vector<std::string> functions = it.instrumented;
  if (ahead) {
    log(fmt::format("iteration {}: finding what its functions reach, {} calls deep, to build ahead", it.number,
                    c_.prebuild_depth));
    const auto from = std::chrono::steady_clock::now();
    // The budget is of the functions ahead, dormant in this run: a set of
    // 42 functions (PostgreSQL's lock waits) left 18 ahead of 60 in all.
    functions = widen(it.instrumented, build_ ? build_->functions : std::vector<std::string>{}, c_.prebuild_depth,
                      it.instrumented.size() + size_t(c_.prebuild_functions),
                      [this](const std::vector<std::string> &fs) { return reach_of(fs); });
    if (interrupted()) return Error{"interrupted"};
    log(fmt::format("iteration {}: {} ahead, found in {:.0f} s", it.number,
                    plural(functions.size() - it.instrumented.size(), "function", "functions"),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count()));
  }
  Status built = instrument_and_build(it, functions);
  if (!built && ahead && functions.size() > it.instrumented.size() && !interrupted()) {
    // The probes of a function no level asked for yet broke the instrument
    // or the build: this session builds each set alone from now on.
    log(fmt::format("iteration {}: the build ahead ({} functions) failed: {}; building its functions alone from now "
                    "on",
                    it.number, functions.size(), built.message().substr(0, built.message().find('\n'))));
    prebuild_failed_ = true;
    functions = it.instrumented;
    built = instrument_and_build(it, functions);
  }
  if (!built) return built;
  it.prebuilt.clear();
  for (const auto &f : build_->functions)
    if (std::find(it.instrumented.begin(), it.instrumented.end(), f) == it.instrumented.end())
      it.prebuilt.push_back(f);
  it.ran_on_build_of = 0;
  return Status::Ok();
}

Status Session::instrument_and_build(Iteration &it, const std::vector<std::string> &functions) {
  const std::string idir = fmt::format("{}/iter-{}", dir_, it.number);
  build_.reset();  // the tree is about to change
  // The iteration's own functions must be instrumented; those ahead are
  // left out where vprof cannot open them.
  instr::InstrumentOptions io = instrument_options(it.instrumented);
  for (const auto &f : functions)
    if (std::find(it.instrumented.begin(), it.instrumented.end(), f) == it.instrumented.end())
      io.optional_functions.push_back(f);
  // The ids of the last build: a file whose selection did not change is
  // rewritten to the bytes that build compiled, and the build leaves it and
  // its includers alone (a header of the selection rebuilt 236-303 of
  // MariaDB's units each iteration before). A build's whole manifest is
  // built-manifest.json (a run's trace keeps its own set's part).
  for (auto p = s_.iterations.rbegin(); p != s_.iterations.rend(); ++p) {
    if (p->number >= it.number) continue;
    const std::string whole = fmt::format("{}/iter-{}/built-manifest.json", dir_, p->number);
    if (fs::exists(whole)) {
      io.keep_ids_from = whole;
      break;
    }
    if (p->ran_on_build_of == 0 && fs::exists(p->trace_dir + "/manifest.json")) {
      io.keep_ids_from = p->trace_dir + "/manifest.json";  // a session from before builds ahead
      break;
    }
  }
  auto ir = instr::instrument(io);
  if (!ir) {
    it.failed = "instrument";
    return Error{ir.error().message};
  }
  std::vector<std::string> built = it.instrumented;
  for (const auto &f : io.optional_functions)
    if (std::none_of(ir->left_out.begin(), ir->left_out.end(),
                     [&](const std::string &l) { return l.rfind(f + ": ", 0) == 0; }))
      built.push_back(f);
  if (built.size() > it.instrumented.size())
    log(fmt::format("iteration {}: building {} functions: its {} and {} that later levels may ask for{}", it.number,
                    built.size(), it.instrumented.size(), built.size() - it.instrumented.size(),
                    ir->left_out.empty() ? ""
                                         : fmt::format(" ({} left out: vprof cannot instrument {})",
                                                       ir->left_out.size(), ir->left_out.size() == 1 ? "it" : "them")));
  // Files with instrumented functions and files with sync sites alone are
  // counted apart: a sync pack applied to the whole tree rewrites many files
  // that hold no instrumented function.
  std::string where = fmt::format("iteration {}: {}, {} and {} in {}", it.number,
                                  plural(ir->functions, "function", "functions"),
                                  plural(ir->call_sites, "call site", "call sites"),
                                  plural(ir->sync_sites - ir->syncs_in_sync_only_files, "sync site", "sync sites"),
                                  plural(ir->function_files, "file", "files"));
  if (ir->sync_only_files)
    where += fmt::format("; {} in {} more {} no instrumented function",
                         plural(ir->syncs_in_sync_only_files, "sync site", "sync sites"), ir->sync_only_files,
                         ir->sync_only_files == 1 ? "file that holds" : "files that hold");
  // What the build will recompile follows from the files whose bytes changed
  // (and their includers): with the ids kept, only those the new selection touched.
  where += fmt::format("; {} changed on disk", plural(ir->files_changed, "file", "files"));
  log(where);
  if (interrupted()) return Error{"interrupted"};

  std::string build_log = idir + "/build.log";
  log(fmt::format("iteration {}: building ({})", it.number, c_.build_command));
  const auto built_from = std::chrono::steady_clock::now();
  auto b = run_shell(c_.build_command, c_.dir, build_log, {});
  if (!b) return Error{b.error().message};
  it.files_changed = int(ir->files_changed);
  it.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - built_from).count();
  if (*b != 0) {
    it.failed = "build";
    return Error{build_failure(build_log, *b)};
  }
  std::error_code ec;
  fs::copy_file(ir->manifest_path, idir + "/built-manifest.json", fs::copy_options::overwrite_existing, ec);
  if (ec) return Error{fmt::format("{}/built-manifest.json: cannot copy the build's manifest: {}", idir, ec.message())};
  build_ = Build{it.number, built, sync_packs(), idir + "/built-manifest.json"};
  return Status::Ok();
}

Status Session::run_workload(Iteration &it, const std::vector<std::pair<std::string, std::string>> &env, int first,
                             int count) {
  const std::string idir = fmt::format("{}/iter-{}", dir_, it.number);
  // The probes this iteration's run leaves dormant (run_iteration).
  std::vector<std::pair<std::string, std::string>> run_env = env;
  if (fs::exists(idir + "/dormant.txt")) run_env.emplace_back("VPROF_DORMANT", idir + "/dormant.txt");
  // `runs` runs (vprof.json), one after another into the one trace directory:
  // their processes' files side by side, read as one run's.
  const int last = first + count - 1;
  for (int k = first; k <= last; ++k) {
    std::string run_log = idir + (last == 1 ? "/run.log" : fmt::format("/run-{}.log", k));
    log(last == 1 ? fmt::format("iteration {}: running ({})", it.number, c_.run_command)
                  : fmt::format("iteration {}: running, {} of {} ({})", it.number, k, last, c_.run_command));
    auto r = run_shell(c_.run_command, c_.dir, run_log, run_env);
    if (!r) return Error{r.error().message};
    if (*r != 0) {
      it.failed = "run";
      return Error{fmt::format("{}: the workload failed (exit {}); its last lines:\n{}", run_log, *r,
                               tail(run_log, 15))};
    }
    if (k < last && interrupted()) return Error{"interrupted"};
  }
  return Status::Ok();
}

Expected<std::unique_ptr<analyzer::Analysis>> Session::analyze() {
  analyzer::AnalyzeOptions opt;
  opt.root = c_.root;
  opt.factors.k = c_.k;
  opt.factors.d = c_.d;
  opt.factors.e = c_.exponent;
  opt.threads = 2;
  opt.run_summaries = true;  // a run summarized before is taken from its summary
  analyzer::Workers pool(opt.threads);  // one for every stage of every run
  opt.workers = &pool;
  std::vector<std::string> dirs;
  for (const auto &it : s_.iterations)
    if (it.analyzed()) dirs.push_back(it.trace_dir);  // a repeat's trace says so (repeat-of)
  if (dirs.empty()) return Error{fmt::format("{}: no analyzed run in this session", dir_)};
  // As `vprof analyze` reads them (analyzer/pipeline/trace_dirs.h): each
  // run's own manifest.json names it, damage is said and left out.
  return analyzer::analyze_dirs(dirs, opt, "", [this](const std::string &line) { log(line); }, &analyzed_);
}

Status Session::write_reports(const analyzer::Analysis &a, const std::string &stem, bool session) const {
  // Each whole or not at all (common/output_file.h).
  nlohmann::json extra = session ? report_json(s_, dir_) : nlohmann::json::object();
  Status s = write_output(stem + ".json",
                          [&](std::ostream &out) { return analyzer::make_json_reporter(extra)->write(a, out); });
  if (!s) return s;
  if (session) {
    s = write_output(stem + ".html",
                     [&](std::ostream &out) { return analyzer::make_html_reporter(extra)->write(a, out); });
    if (!s) return s;
  }
  // The saved profile, for `vprof diff` and `vprof gate` (docs/gate.md): an
  // iteration's holds its own run (the runs before it are in theirs; all of
  // them in it, saved again at every iteration, took 15 s of PostgreSQL's
  // 20th), the session's every run.
  std::optional<int> only;
  if (!session) only = a.runs.back()->run;
  s = analyzer::save_profile(analyzer::make_profile(a, analyzer::build_info(), only), stem + ".vprof");
  if (!s) return s;
  return write_output(stem + ".txt",
                      [&](std::ostream &out) { return analyzer::make_terminal_reporter()->write(a, out); });
}

Expected<Outcome> Session::run() {
  if (Status opened = open_session(); !opened) return Error{opened.message()};
  const int max_it = o_.max_iterations > 0 ? o_.max_iterations : c_.max_iterations;
  std::unique_ptr<analyzer::Analysis> analysis;
  while (!s_.done) {
    if (interrupted()) return Error{"interrupted"};
    // Resume an iteration that was stopped before its decisions (in its
    // run, or after it), else start the next.
    if (s_.iterations.empty() || s_.iterations.back().decided()) {
      const int n = int(s_.iterations.size()) + 1;
      if (n > max_it) {  // not done: a later run with a higher limit goes on from here
        s_.stop_reason = fmt::format("stopped at the limit of {} iterations", max_it);
        break;
      }
      if (Status planned = plan_next(n); !planned) return Error{planned.message()};
    }
    Iteration &it = s_.iterations.back();
    if (it.phase == Phase::Planned) {
      if (Status ran = run_planned(it); !ran) return Error{ran.message()};
    } else {
      log(fmt::format("iteration {}: its run is complete; analyzing it again", it.number));
    }
    if (h_.after_run) h_.after_run(it);
    // The last iteration's analysis is not needed for this one's, but its
    // runs are, reduced: the rest was kept through it on MariaDB's session
    // 3 (17.5 GB after 27 runs, and the 28th analysis beside it reached
    // 24 GB and the OOM killer). What it freed goes back to the system too:
    // kept by the allocator for reuse (keep_freed_memory), it stayed
    // resident under the next analysis' peak.
    keep_runs(analysis, it);
    auto a = analyze_ran(it);
    if (!a) return Error{a.error().message};
    analysis = std::move(*a);
    if (Status decided = decide(it, *analysis); !decided) return Error{decided.message()};
  }
  return finish(std::move(analysis));
}

Status Session::open_session() {
  if (o_.fresh) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::create_directories(dir_);
  auto loaded = load_state(state_path());
  if (!loaded) return loaded.error();
  s_ = std::move(*loaded);
  if (s_.iterations.empty() && s_.pending.empty() && !s_.done) {
    s_.pending = {c_.root};
    s_.broken_down.push_back({c_.root, {}, 1});
  } else if (!s_.done) {
    // Completed iterations are those decided; an unfinished one is resumed
    // under its number (a failed build completed nothing).
    size_t completed = std::count_if(s_.iterations.begin(), s_.iterations.end(),
                                     [](const Iteration &i) { return i.decided(); });
    std::string line = fmt::format("resuming the session in {} after {}", dir_,
                                   plural(completed, "completed iteration", "completed iterations"));
    if (!s_.iterations.empty() && !s_.iterations.back().decided()) {
      const Iteration &last = s_.iterations.back();
      std::string why = last.phase == Phase::Ran     ? "its run is complete; its factors are not decided yet"
                        : last.failed == "build"      ? "its build failed last time"
                        : last.failed == "run"        ? "its run failed last time"
                        : last.failed == "instrument" ? "instrumenting it failed last time"
                                                      : "it was stopped before its run finished";
      line += fmt::format(", at iteration {} ({})", last.number, why);
    }
    log(line);
  }
  return Status::Ok();
}

Status Session::plan_next(int n) {
  if (s_.again > 0 && size_t(s_.again) <= s_.iterations.size()) {  // the same set, run again
    Iteration next;
    next.number = n;
    next.instrumented = s_.iterations[size_t(s_.again) - 1].instrumented;
    next.again_of = s_.again;
    next.trace_dir = fmt::format("{}/iter-{}/trace", dir_, n);
    s_.again = 0;
    s_.iterations.push_back(std::move(next));
    return save_state(s_, state_path());
  }
  // What this run needs: each function to break down and the chain of
  // broken-down functions above it, so its nodes sit where the earlier
  // runs' trees expect them (runs are merged by node path).
  std::vector<std::string> need{c_.root};
  // A cause's functions stay instrumented (state.h): those kept with it,
  // and what was broken down below its place.
  std::vector<std::string> wanted = s_.pending;
  std::vector<std::string> places;
  for (const auto &b : s_.broken_down)
    if (b.cause_place && b.function != c_.root) places.push_back(b.function);
  for (const auto &b : s_.broken_down) {
    bool below = false;
    for (const auto &g : s_.chain(b.function))
      below = below || std::find(places.begin(), places.end(), g) != places.end();
    if (b.holder || below) wanted.push_back(b.function);
  }
  for (const auto &f : wanted)
    for (const auto &g : s_.chain(f)) {
      // An id no manifest named ("fn#78") is no function to instrument:
      // a state saved by an older vprof may hold one (a merged report
      // looked a caller's id up in another run's names).
      if (g.rfind("fn#", 0) == 0 && g.size() > 3 && g.find_first_not_of("0123456789", 3) == std::string::npos) {
        log(fmt::format("iteration {}: warning: {} names no function (an id no manifest named); left out", n, g));
        continue;
      }
      if (std::find(need.begin(), need.end(), g) == need.end()) need.push_back(g);
    }
  look_ahead(n, s_.pending, need);
  Iteration next;
  next.number = n;
  next.instrumented = need;
  next.trace_dir = fmt::format("{}/iter-{}/trace", dir_, n);
  s_.iterations.push_back(std::move(next));
  return save_state(s_, state_path());
}

void Session::look_ahead(int n, const std::vector<std::string> &fresh, std::vector<std::string> &need) {
  // Only where the run needs no build: building the level below with a set
  // that builds anyway made PostgreSQL's builds twice as long (157 functions
  // joined at once) for 12 runs instead of 20, a slower session in all
  // (docs/performance.md, "Build once").
  if (c_.lookahead_budget <= 0 || !last_probe_cost_ || !build_holds(need)) return;
  if (100 * *last_probe_cost_ > c_.lookahead_budget) {
    log(fmt::format("iteration {}: one level this run: the last run's probes cost {:.2f}% of its intervals' time, "
                    "over the lookahead budget of {:g}%",
                    n, 100 * *last_probe_cost_, c_.lookahead_budget));
    return;
  }
  std::vector<std::string> from;
  for (const auto &f : fresh)
    if (f != c_.root) from.push_back(f);
  // What an earlier run broke down is not again (as a decision would not:
  // "already broken down").
  std::vector<std::string> skip = need;
  for (const auto &b : s_.broken_down) skip.push_back(b.function);
  const std::vector<NextLevel> more =
      next_level(from, skip, build_->functions, [this](const std::vector<std::string> &fs) { return reach_of(fs); });
  if (more.empty()) return;
  std::vector<std::string> names;
  for (const NextLevel &l : more) {
    need.push_back(l.function);
    names.push_back(l.function);
    BrokenDown b{l.function, {l.parent}, n};
    b.ahead = true;
    s_.broken_down.push_back(std::move(b));
  }
  log(fmt::format("iteration {}: and the level below, which the build holds: {} (the last run's probes cost "
                  "{:.2f}% of its intervals' time; the lookahead budget is {:g}%)",
                  n, some_names(names), 100 * *last_probe_cost_, c_.lookahead_budget));
}

void Session::keep_runs(std::unique_ptr<analyzer::Analysis> &analysis, const Iteration &it) {
  auto say = [&](const std::string &line) { log(fmt::format("iteration {}: {}", it.number, line)); };
  analyzer::keep_runs(analysis, analyzed_, it.trace_dir, say, true);
  if (c_.keep_traces) return;
  // Summarized runs need their traces no more (config.h, keep_traces).
  for (const auto &[dir, r] : analyzed_) {
    if (!r->summarized) continue;
    const trace::Deleted gone = trace::delete_recorded_data(dir);
    if (gone.files)
      say(fmt::format("{}: its trace's {} files deleted ({:.1f} MB; keep_traces is false), its summary kept", dir,
                      gone.files, double(gone.bytes) / 1e6));
  }
}

Status Session::run_planned(Iteration &it) {
  analyzed_.erase(it.trace_dir);  // recorded afresh
  Status st = run_iteration(it);
  if (!st) {
    // Which step failed, for the resumed session to say (an unsaved state
    // only costs that message).
    if (!it.failed.empty()) (void)save_state(s_, state_path());
    return st;
  }
  return save_state(s_, state_path());
}

Expected<std::unique_ptr<analyzer::Analysis>> Session::analyze_ran(Iteration &it) {
  auto a = analyze();
  if (!a) return a.error();
  std::unique_ptr<analyzer::Analysis> analysis = std::move(*a);
  // Recording in windows, runs shorter than the windows' period may see
  // none open (the minidb demo's 0.16 s runs at 10%: windows of 100 ms
  // about once a second). Intervals were begun, none counted: the workload
  // runs again, `runs` times a round, into the same trace, up to
  // kWindowRounds rounds in all.
  for (int round = 1; windowed(c_.sample) && round < kWindowRounds && no_window_opened(*analysis->runs.back());
       ++round) {
    const int done = round * c_.runs;
    log(fmt::format("iteration {}: no recording window opened in {} {} ({} intervals begun outside one); "
                    "running {} more",
                    it.number, done, done == 1 ? "run" : "runs",
                    analyzer::intervals_left_out(*analysis->runs.back()), c_.runs));
    auto rec = trace::Recording::add_to(it.trace_dir);
    Status ran = rec ? run_workload(it, (*rec)->env(c_.sample), done + 1, c_.runs) : Status(rec.error());
    if (rec) (void)(*rec)->finish([&](const std::string &line) { log(fmt::format("iteration {}: {}", it.number, line)); });
    if (!ran) {
      it.phase = Phase::Planned;
      (void)save_state(s_, state_path());
      return Error{ran.message()};
    }
    keep_runs(analysis, it);  // its own run is read again
    auto again = analyze();
    if (!again) return Error{again.error().message};
    analysis = std::move(*again);
  }
  // A run with no interval measured nothing: with no factor to decide, it
  // read "fixed point: every selected factor is explained" (Apache's tree
  // without its interval patch). It is a failed run, redone on resume.
  if (analysis->runs.back()->paths.rows.empty()) {
    it.phase = Phase::Planned;
    it.failed = "run";
    (void)save_state(s_, state_path());
    if (no_window_opened(*analysis->runs.back()))
      return Error{fmt::format(
          "{}: no recording window opened in {} runs of the workload: {} intervals were begun, all outside "
          "one. At --sample {} a window of VPROF_SAMPLE_WINDOW_MS ({} ms unless set) opens about once "
          "every 100/{} of that; make a run longer than that period, or the windows shorter",
          it.trace_dir, kWindowRounds * c_.runs, analyzer::intervals_left_out(*analysis->runs.back()), c_.sample,
          kDefaultWindowMs, c_.sample)};
    return Error{fmt::format("{}: the run recorded no interval: nothing called vprof_interval_begin and "
                             "vprof_interval_end (are the program's transactions annotated, and did the "
                             "workload reach them? docs/interfaces.md)",
                             it.trace_dir)};
  }
  // What its probes cost: its records, half a probe pair each, over its
  // intervals' time (records outside an interval count too: an upper bound).
  {
    const analyzer::RunAnalysis &r = *analysis->runs.back();
    const double in_intervals = double(r.paths.rows.size()) * r.latency.mean_ns;
    last_probe_cost_.reset();
    if (r.records > 0 && in_intervals > 0 && r.overhead.probe_pair_ns > 0)
      last_probe_cost_ = 0.5 * r.overhead.probe_pair_ns * double(r.records) / in_intervals;
  }
  Status w = write_reports(*analysis, fmt::format("{}/iter-{}/report", dir_, it.number));
  if (!w) return Error{w.message()};
  // A run that lost records says so where the session is watched: MariaDB's
  // runs 21-28 each dropped 6-48 M at the trace's budget as the set grew,
  // and only the run's own report said it.
  // Why, as `vprof run` says it, with the budget the program read.
  if (const analyzer::RunAnalysis &r = *analysis->runs.back(); r.read.dropped_records) {
    const std::string cause =
        trace::lost_records_cause(r.read.dropped_records, r.processes, it.trace_dir);
    log(fmt::format("iteration {}: the run dropped {} records and kept {} intervals{}{}", it.number,
                    r.read.dropped_records, r.paths.rows.size(), cause.empty() ? "" : ": ", cause));
  }
  // Not a factor, so no decision names it: a line says it when it is a top cause.
  if (auto p = analyzer::preemption_share(*analysis->runs.back()); p && *p >= analyzer::kPreemptionTopCause)
    log(fmt::format("iteration {}: {}", it.number, analyzer::preemption_line(p)));
  return analysis;
}

Status Session::decide(Iteration &it, const analyzer::Analysis &a) {
  auto suggestions = suggest(
      a, s_, c_.m, [this](const std::string &f) { return can_break_down(f); },
      [this](const std::vector<std::string> &fs) { probe_many(fs); });
  // Stopped during the dry runs: their verdicts are the interrupt's, not the
  // functions'. Nothing is decided; a resumed session decides this
  // iteration again (a kill of a MariaDB session recorded its top factor as
  // "explained: cannot be instrumented here: interrupted", and the resumed
  // session stopped there).
  if (interrupted()) return Error{"interrupted"};
  if (h_.decide && !h_.decide(suggestions, a)) {
    s_.done = true;
    s_.stop_reason = "stopped by the user";
  }
  s_.pending.clear();
  std::vector<std::string> unreached;
  for (const auto &g : suggestions) {
    s_.decisions.push_back({it.number, g.factor, decision_word(g), g.reason, g.contribution, g.fragile});
    log(fmt::format("  {:<48} {:>6.1f}%{}  {}: {}", g.factor, 100 * g.contribution,
                    g.fragile ? " (fragile)" : "", decision_word(g), g.reason));
    if (g.unreached) unreached.push_back(g.factor);
    if (!g.break_down) continue;
    for (const auto &f : g.functions)
      if (!s_.is_broken_down(f)) {
        s_.pending.push_back(f);
        s_.broken_down.push_back({f, g.parents, it.number + 1, g.holder});
      }
    // A cause's: kept instrumented from now on; a run to measure them
    // together when nothing else is broken down.
    for (auto &b : s_.broken_down) {
      if (std::find(g.keep.begin(), g.keep.end(), b.function) != g.keep.end()) b.holder = true;
      if (!g.place.empty() && b.function == g.place) b.cause_place = true;
    }
    if (g.functions.empty() && !g.keep.empty()) s_.pending.push_back(g.keep.front());
    // A pack to wrap: the wait's callers run again with it, their waits
    // where the earlier runs measured them.
    if (!g.sync_pack.empty()) {
      const std::vector<std::string> packs = sync_packs();
      if (std::find(packs.begin(), packs.end(), g.sync_pack) == packs.end()) {
        s_.sync_packs_added.push_back(g.sync_pack);
        sync_rules_.reset();
        log(fmt::format("iteration {}: the next runs wrap the {} sync pack ({} is one of its waits)", it.number,
                        g.sync_pack, g.factor));
      }
      for (const auto &f : g.parents.empty() ? std::vector<std::string>{c_.root} : g.parents)
        if (std::find(s_.pending.begin(), s_.pending.end(), f) == s_.pending.end()) s_.pending.push_back(f);
    }
  }
  const bool fixed_point = !s_.done && s_.pending.empty();
  if (fixed_point && run_again(it, a)) {
    s_.again = it.number;
  } else if (fixed_point) {
    s_.done = true;
    // A dead end is no explanation: say which factors vprof could not get below.
    s_.stop_reason = suggestions.empty()
                         ? fmt::format("fixed point: no factor reaches d = {} of {}; nothing was selected", c_.d,
                                       a.d_selected < c_.d ? fmt::format("the code's part of Var(root) ({:.4f} of "
                                                                         "Var(root): the rest is preemption)",
                                                                         a.d_selected)
                                                           : std::string("Var(root)"))
                     : unreached.empty()
                         ? "fixed point: every selected factor is explained"
                         : fmt::format("fixed point: nothing more vprof can break down; {} unreached ({}), "
                                       "the rest explained",
                                       plural(unreached.size(), "selected factor is", "selected factors are"),
                                       some_names(unreached, 3));
  }
  it.phase = Phase::Decided;
  return save_state(s_, state_path());
}

bool Session::run_again(const Iteration &it, const analyzer::Analysis &a) {
  int done = 0;
  for (const Iteration &i : s_.iterations) done += i.again_of > 0;
  const int max_it = o_.max_iterations > 0 ? o_.max_iterations : c_.max_iterations;
  if (done >= c_.again || it.number >= max_it) return false;
  std::vector<std::string> alone;
  for (const analyzer::Factor &f : a.factors)
    if (f.rank > 0 && f.run >= 0 && f.runs_measured() < 2) alone.push_back(f.name);
  if (alone.empty()) return false;
  log(fmt::format("iteration {}: a fixed point, but {} {} on one run: iteration {}'s set runs again, for the "
                  "spread between runs in {} interval",
                  it.number, some_names(alone, 3), alone.size() == 1 ? "rests" : "rest", it.number,
                  alone.size() == 1 ? "its" : "their"));
  return true;
}

Expected<Outcome> Session::finish(std::unique_ptr<analyzer::Analysis> analysis) {
  if (!analysis) {  // a finished session, reopened: report it again
    auto a = analyze();
    if (!a) return Error{a.error().message};
    analysis = std::move(*a);
  }
  Outcome out;
  out.final_json = dir_ + "/final-report.json";
  out.final_text = dir_ + "/final-report.txt";
  out.final_html = dir_ + "/final-report.html";
  Status w = write_reports(*analysis, dir_ + "/final-report", true);
  if (!w) return Error{w.message()};
  out.analysis = std::move(analysis);
  out.state = s_;
  return out;
}

}  // namespace

Expected<Outcome> run_session(const Config &c, const SessionOptions &o, const Hooks &h) {
  // One vprof at a time on the tree, for the whole session: no `vprof
  // instrument` slips in between two iterations (instrument and restore take
  // the lock again, re-entrantly). A build directory with no compile db yet
  // has no tree to lock; the first instrument says so.
  std::optional<Expected<instr::TreeLock>> lock;
  if (auto place = instr::locate_tree(c.abs(c.build_dir), c.abs_source_root()); place) {
    lock.emplace(instr::TreeLock::acquire(place->journal_dir));
    if (!*lock) return lock->error();
  }
  Session s(c, o, h);
  // No exception may skip the restore below (a label that was not UTF-8 once
  // aborted a session after its first run, leaving the tree instrumented).
  // What a signal kills, `vprof iterate`'s supervisor restores (cmd_iterate.cc).
  Expected<Outcome> out = Error{"the session did not run"};
  try {
    out = s.run();
  } catch (const std::exception &e) {
    out = Error{fmt::format("internal error: {}; the tree is restored", e.what())};
  } catch (...) {
    out = Error{"internal error: an unknown exception; the tree is restored"};
  }
  // Whatever happened, the target tree goes back to its pristine bytes.
  instr::RestoreOptions ro;
  ro.build_dir = c.abs(c.build_dir);
  ro.source_root = c.abs_source_root();
  auto restored = instr::restore(ro);
  if (!restored && out) return Error{restored.error().message};
  return out;
}

}  // namespace vprof::iterate
