#include "iterate/decide.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

namespace vprof::iterate {

namespace {

const analyzer::Factor *find_factor(const analyzer::Analysis &a, const std::string &name) {
  for (const auto &f : a.factors)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace

const char *decision_word(const Suggestion &g) {
  return g.break_down ? "break down" : g.unreached ? "unreached" : "explained";
}

// The function holding a call site: named by the site's own manifest (ids
// are renumbered by every instrumentation), else looked up in the run the
// instance came from.
static std::string caller_name(const analyzer::Analysis &a, const analyzer::CallSiteInfo &site, int run) {
  if (!site.caller.empty()) return site.caller;
  return a.runs[run]->names.function(site.function_id);
}

std::string caller_of(const analyzer::Analysis &a, const analyzer::Factor &f) {
  // Function ids are renumbered by every instrumentation: resolve the largest
  // call site in the run of the instance it came from.
  for (const auto &site : f.call_sites) {
    if (!site.call_site) continue;
    for (const auto *inst : f.instances) {
      if (inst->label != site.label || inst->run < 0 || inst->run >= (int)a.runs.size()) continue;
      return caller_name(a, *site.call_site, inst->run);
    }
  }
  return "";
}

namespace {

void add_once(std::vector<std::string> &out, const std::string &name) {
  if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
}

// The nodes on the merged tree's path from below n down to `target` (target
// included); false when target is not below n.
bool path_to(const analyzer::VarNode &n, const analyzer::VarNode *target,
             std::vector<const analyzer::VarNode *> &path) {
  if (&n == target) return true;
  for (const auto &c : n.children) {
    path.push_back(&c);
    if (path_to(c, target, path)) return true;
    path.pop_back();
  }
  return false;
}

// The function holding a call site node's site ("" when its run is unknown).
std::string site_caller(const analyzer::Analysis &a, const analyzer::VarNode &c) {
  if (!c.call_site) return "";
  if (!c.call_site->caller.empty()) return c.call_site->caller;
  return c.run >= 0 && c.run < (int)a.runs.size() ? caller_name(a, *c.call_site, c.run) : "";
}

// The functions holding the call sites on the merged tree's path from the
// root down to `target` (target's own included), nearest last; false when
// target is not below n.
bool path_callers(const analyzer::Analysis &a, const analyzer::VarNode &n,
                  const analyzer::VarNode *target, std::vector<std::string> &path) {
  std::vector<const analyzer::VarNode *> nodes;
  if (!path_to(n, target, nodes)) return false;
  for (const analyzer::VarNode *c : nodes)
    if (std::string caller = site_caller(a, *c); !caller.empty()) path.push_back(caller);
  return true;
}

}  // namespace

std::vector<std::string> callers_of(const analyzer::Analysis &a, const analyzer::Factor &f) {
  std::vector<std::string> out;
  std::vector<const analyzer::VarNode *> reached;  // the instances whose callers count
  const double whole = std::abs(analyzer::ranked_value(f, a.paper));
  for (const auto &site : f.call_sites) {  // largest first
    const double v = std::abs(analyzer::ranked_value(site, a.paper));
    if (!site.call_site || v < std::max(0.01, 0.1 * whole)) continue;
    for (const auto *inst : f.instances) {
      if (inst->label != site.label || inst->run < 0 || inst->run >= (int)a.runs.size()) continue;
      add_once(out, caller_name(a, *site.call_site, inst->run));
      reached.push_back(inst);
      break;
    }
  }
  if (out.empty())
    if (std::string c = caller_of(a, f); !c.empty()) out.push_back(c);
  for (const auto *inst : reached) {
    std::vector<std::string> path;
    if (!path_callers(a, a.tree, inst, path)) continue;
    for (auto it = path.rbegin(); it != path.rend(); ++it) add_once(out, *it);
  }
  return out;
}

std::vector<std::string> cause_chain(const analyzer::Analysis &a, const analyzer::Factor &c) {
  std::vector<std::string> out;
  for (const auto *inst : c.instances) {
    if (!analyzer::is_held_part(*inst)) continue;
    if (inst->call_site && inst->run >= 0 && inst->run < (int)a.runs.size())
      add_once(out, caller_name(a, *inst->call_site, inst->run));
    std::vector<std::string> path;  // the waiter's: down to the wait it held up
    if (!path_callers(a, a.tree, inst, path)) continue;
    for (const auto &f : path) add_once(out, f);
  }
  return out;
}

std::vector<std::string> cause_callers(const analyzer::Analysis &a, const analyzer::Factor &c) {
  std::vector<std::string> out;
  for (const auto *inst : c.instances) {
    if (!inst->call_site || inst->run < 0 || inst->run >= (int)a.runs.size()) continue;
    // A Held part's site is the holder's call (in the holder's function);
    // a part of its own, its call site on the interval's path.
    add_once(out, caller_name(a, *inst->call_site, inst->run));
    if (analyzer::is_held_part(*inst)) continue;
    std::vector<std::string> path;
    if (!path_callers(a, a.tree, inst, path)) continue;
    for (auto it = path.rbegin(); it != path.rend(); ++it) add_once(out, *it);
  }
  return out;
}

namespace {

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The factor's largest call site when it is a call through a pointer, a
// virtual call or a template's dependent call, with the union of the targets
// of all its indirect sites.
// A cause has no such list: its instances are the tree's nodes, and a Held
// part's site is the holder's call (MariaDB: log_write_up_to's
// log_sys.writer(), which held up 16-27% of Var(root), read "no definition
// in the tree" and was left unreached).
const analyzer::CallSiteInfo *indirect_site(const analyzer::Factor &f, std::vector<std::string> &targets) {
  const analyzer::CallSiteInfo *first = nullptr;
  auto take = [&](const std::optional<analyzer::CallSiteInfo> &site) {
    if (!site || !site->indirect) return;
    if (!first) first = &*site;
    for (const auto &t : site->targets)
      if (std::find(targets.begin(), targets.end(), t) == targets.end()) targets.push_back(t);
  };
  for (const auto &site : f.call_sites) take(site.call_site);
  if (f.call_sites.empty())
    for (const analyzer::VarNode *v : f.instances) take(v->call_site);
  return first;
}

// The functions of `targets` a run can instrument, into g.functions (a
// target with no calls of its own too: it may be the one); those already
// broken down into `already`; the first reason one cannot be, into why_not.
void instrumentable(Suggestion &g, const std::vector<std::string> &targets, const State &s,
                    const CanBreakDown &probe, const ProbeMany &probe_many, std::vector<std::string> &already,
                    std::string &why_not) {
  if (probe_many) {
    std::vector<std::string> ask;
    for (const auto &t : targets)
      if (!s.is_broken_down(t)) ask.push_back(t);
    probe_many(ask);
  }
  for (const auto &t : targets) {
    if (s.is_broken_down(t)) {
      already.push_back(t);
      continue;
    }
    if (std::find(g.functions.begin(), g.functions.end(), t) != g.functions.end()) continue;
    Probe p = probe(t);
    if (p.why_not.empty() || p.why_not == kNoCalls) g.functions.push_back(t);
    else if (why_not.empty()) why_not = t + ": " + p.why_not;
  }
}

// How factor f gets below itself: a call through a pointer (its targets,
// which the manifest lists), or a function vprof cannot open (what its body
// calls or may reach: Apache's ap_run_handler, which APR's macros write,
// through the handlers registered with ap_hook_handler).
struct Way {
  std::string what;  // "called through a pointer", or why vprof cannot open f
  const char *verb;  // "may reach", "calls or may reach"
  std::string none;  // said when nothing is reached (appended to `what`)
  const std::vector<std::string> &reaches;
};

// Breaks f down through what it reaches: instruments those a run can, all
// in one iteration, so the next run tells which one ran. When nothing more
// can be instrumented and some of it is broken down, what is still at f is
// outside the tree if f is its own part ("g (uninstrumented part)": g's time
// less what it reached) or still a leaf (none of what it reaches ran in it:
// Apache's apr_bucket_read reached libaprutil's file bucket): unreached.
// Otherwise true: its parts are ranked on their own.
bool break_down_through(Suggestion &g, const analyzer::Factor &f, const Way &w, const State &s,
                        const CanBreakDown &probe, const ProbeMany &probe_many) {
  std::vector<std::string> already;
  std::string why_not;
  instrumentable(g, w.reaches, s, probe, probe_many, already, why_not);
  const size_t n = w.reaches.size();
  if (!g.functions.empty()) {
    g.break_down = true;
    // A few names: the whole list is what the next iteration instruments
    // (its instrumented.txt, state.json, the final report).
    g.reason = fmt::format("{}: instrument the {} function{} it {} ({})", w.what, g.functions.size(),
                           g.functions.size() == 1 ? "" : "s", w.verb, some_names(g.functions));
    return false;
  }
  if (already.empty()) {
    g.unreached = true;
    g.reason = n == 0 ? w.what + w.none
                      : w.what + "; nothing it reaches can be instrumented (" + why_not + ")";
    return false;
  }
  const bool leaf = !f.instances.empty() && std::all_of(f.instances.begin(), f.instances.end(),
                                                         [](const analyzer::VarNode *v) { return v->children.empty(); });
  if (leaf) {
    g.unreached = true;
    g.reason = fmt::format("{}; none of the {} function{} of the tree it {} ran in it (all are instrumented): it "
                           "went outside the tree (a library's function)",
                           w.what, n, n == 1 ? "" : "s", w.verb);
    return false;
  }
  if (ends_with(f.name, " (uninstrumented part)")) {
    g.unreached = true;
    g.reason = w.what + "; what it reaches in the tree is broken down, and this is its time elsewhere, which "
                        "vprof cannot time inside";
    return false;
  }
  g.reason = w.what + "; what it reaches is broken down: its parts are ranked on their own";
  return true;
}

// The share of Var(root) the recorder's own pauses hold under f's instances:
// its (recorder) leaves, and the Held parts of a holder it paused.
double recorder_share(const analyzer::Factor &f) {
  double out = 0;
  std::vector<const analyzer::VarNode *> todo(f.instances.begin(), f.instances.end());
  while (!todo.empty()) {
    const analyzer::VarNode *v = todo.back();
    todo.pop_back();
    if (ends_with(v->key, "/recorder") || ends_with(v->key, "/held:recorder")) out += v->share.value_or(0.0);
    for (const auto &c : v->children)
      if (c.kind != analyzer::VarNode::Kind::Cov) todo.push_back(&c);
  }
  return out;
}

// A gap on the way to f's largest part: a direct call site of an
// instrumented function (`caller`) whose callee (`callee`), not
// instrumented, re-entered a function turned on ahead (state.h's
// BrokenDown::ahead: minidb's inject_delay, turned on below write_row, ran
// inside read_row's call of BufferPool::fetch, two calls down). The part's
// place is inside the callee, a level the session has not measured: it is
// broken down first. A call through a pointer or a virtual call reaches its
// targets so by design, and a function a decision broke down keeps its place
// through such calls (a hook dispatcher a macro writes, found through its
// `reaches`).
struct Gap {
  std::string caller, callee;
};
std::optional<Gap> gap_above(const analyzer::Analysis &a, const analyzer::Factor &f, const State &s) {
  const analyzer::VarNode *largest = nullptr;
  for (const auto *inst : f.instances)
    if (!largest || std::fabs(inst->contribution) > std::fabs(largest->contribution)) largest = inst;
  std::vector<const analyzer::VarNode *> nodes;
  if (!largest || !path_to(a.tree, largest, nodes)) return std::nullopt;
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    const analyzer::VarNode &site = *nodes[i], &below = *nodes[i + 1];
    if (!site.call_site || site.call_site->indirect || !site.call_site->dependent_name.empty()) continue;
    // A function's own node (no call site of its own): entered inside the call.
    if (below.call_site || below.functions.empty() || below.functions[0] == site.call_site->callee) continue;
    const size_t last = below.key.rfind('/');
    if (below.key.compare(last == std::string::npos ? 0 : last + 1, 3, "fn:") != 0) continue;
    const std::string &fn = below.functions[0];
    if (std::any_of(s.broken_down.begin(), s.broken_down.end(),
                    [&](const BrokenDown &b) { return b.function == fn && b.ahead; }))
      return Gap{site_caller(a, site), site.call_site->callee};
  }
  return std::nullopt;
}

}  // namespace

std::vector<Suggestion> suggest(const analyzer::Analysis &a, const State &s, double m,
                                const CanBreakDown &probe, const ProbeMany &probe_many) {
  auto one = [&](const analyzer::Factor &f, bool &parts_hidden) {
    Suggestion g;
    g.factor = f.name;
    g.contribution = analyzer::ranked_value(f, a.paper);  // what the factor was ranked by
    g.fragile = f.fragile;
    // A call through a pointer is named by its expression, which may start
    // with '(' as the leaves that are no function do: PostgreSQL's index
    // scan, (*accessMtd)(node), was left "not a function".
    if (!f.covariance)
      if (std::optional<Gap> gap = gap_above(a, f, s); gap && !s.is_broken_down(gap->callee)) {
        Probe p = probe(gap->callee);
        if (p.why_not.empty() && !p.opaque && p.sync_pack.empty()) {
          g.function = gap->callee;
          g.functions = {gap->callee};
          g.parents = {gap->caller};
          g.break_down = true;
          g.reason = fmt::format("its largest part ran inside {}'s call of {}, which is not instrumented: break "
                                 "that down to place it",
                                 gap->caller, gap->callee);
          return g;
        }
      }
    std::vector<std::string> targets;
    const analyzer::CallSiteInfo *site = f.covariance ? nullptr : indirect_site(f, targets);
    const bool indirect = site != nullptr;
    if (f.covariance) {
      g.reason = "a covariance: read both functions together";
    } else if (ends_with(f.name, " (body)")) {
      g.reason = "the function's own code (its body) varies";
    } else if (f.functions.empty() || f.functions[0].empty() || (f.functions[0][0] == '(' && !indirect)) {
      g.reason = "not a function";
    } else {
      g.function = f.functions[0];
      if (!s.is_broken_down(g.function) && indirect) {
        // Every target already broken down: as for a broken-down function,
        // its parts may sit unlisted inside it (PostgreSQL: node->ExecProcNode
        // outranked ExecUpdate's table_tuple_lock and ExecUpdateAct, and the
        // session stopped there).
        const bool by_name = !site->dependent_name.empty();
        parts_hidden = break_down_through(
            g, f,
            {by_name ? "a template's call of " + site->dependent_name + ", which its arguments decide"
                     : std::string("called through a pointer"),
             "may reach",
             by_name ? ", and no function in the tree has that name: vprof cannot tell where it goes"
                     : ", and no function in the tree has its type and its address taken: vprof cannot tell "
                       "where it goes",
             targets},
            s, probe, probe_many);
        if (g.break_down) g.parents = callers_of(a, f);
      } else if (s.is_broken_down(g.function)) {
        const analyzer::Factor *body = find_factor(a, g.function + " (body)");
        double share = body && f.contribution != 0 ? body->contribution / f.contribution : 0;
        g.reason = share >= m ? fmt::format("its body holds {:.0f}% of its variance", 100 * share)
                              : "already broken down: its parts are ranked on their own";
        parts_hidden = share < m;
      } else {
        Probe p = probe(g.function);
        g.parents = callers_of(a, f);
        if (!p.sync_pack.empty()) {
          g.break_down = true;
          g.sync_pack = p.sync_pack;
          g.reason = p.why_not;
        } else if (p.opaque) {
          parts_hidden =
              break_down_through(g, f, {p.why_not, "calls or may reach", "", p.reaches}, s, probe, probe_many);
        } else {
          g.break_down = p.why_not.empty();
          g.reason = p.why_not.empty() ? "it has calls to break down" : p.why_not;
          if (g.break_down) g.functions = {g.function};
        }
      }
    }
    // Where the recorder's own pauses already hold as much as the code's
    // time, a level deeper would time vprof (following a stall into
    // its spin loop timed every clock_gettime, the trace grew 46 -> 267 MB and
    // the pauses held up to 10% of Var under it): not broken down.
    if (g.break_down && !f.covariance) {
      const double rec = recorder_share(f);
      if (rec > 0 && rec >= std::fabs(f.share)) {
        g.break_down = false;
        g.functions.clear();
        g.reason = fmt::format("the recorder's own pauses under it hold {:.1f}% of Var(root), as much as its "
                               "code's {:.1f}%: a level deeper would time vprof, not the program (larger rings, "
                               "VPROF_CHUNK_KB, or a faster disk under the trace, lower them)",
                               100 * rec, 100 * f.share);
      }
    }
    return g;
  };
  std::vector<Suggestion> out;
  for (const auto &f : a.factors) {
    if (f.rank <= 0) continue;
    bool parts_hidden = false;
    out.push_back(one(f, parts_hidden));
    if (!parts_hidden) continue;
    // A broken-down function outranked its own parts, and those are listed
    // once (inside it: Factor::nested_with), so none of them was selected.
    // "Its parts are ranked on their own" must hold: take its first part in
    // ranking order that is not itself broken down, as if it were selected.
    // A part that is itself a pointer call with every target broken down
    // hides its parts too (they nest in f as well): pass it by, as a
    // broken-down function is passed by (PostgreSQL: ExecProcNode outranked
    // node->ExecProcNode, whose target ExecModifyTable held ExecUpdate).
    // Its parts at any depth, by the tree: selection marks a factor nested
    // only until it has k, so a part ranked after the k-th is not marked
    // (Apache: default_handler 27% > ap_pass_brigade, broken down >
    // next->frec->filter_func.out_func 27%, never decided); a part broken
    // down already is passed by, and what nests in it is f's as well.
    auto inside = [&](const analyzer::Factor &part) {
      if (part.nested_with == f.name) return true;
      if (&part == &f) return false;
      for (const auto *pi : part.instances)
        for (const auto *fi : f.instances)
          if (pi->key != fi->key && analyzer::key_within(pi->key, fi->key)) return true;
      return false;
    };
    for (const auto &part : a.factors) {
      if (!inside(part) || part.covariance || ends_with(part.name, " (body)")) continue;
      if (part.functions.empty() || part.functions[0].empty() || part.functions[0][0] == '(') continue;
      if (s.is_broken_down(part.functions[0])) continue;
      bool hidden = false;
      Suggestion g = one(part, hidden);
      if (hidden) continue;
      g.reason += fmt::format(" (a part of {}, which outranked it)", f.name);
      // An unreached part is a dead end: the next part is decided too (Apache:
      // apr_bucket_read into libaprutil, then writev_nonblocking beside it).
      const bool dead_end = g.unreached;
      out.push_back(std::move(g));
      if (!dead_end) break;
    }
  }
  // Causes: a wait the sync packs name is explained by its Held
  // parts, but what they name may be no deeper than the holder's call site
  // (minidb: "held by run_transaction at Database::commit"). A cause that
  // held up d of Var(root) in others' waits is followed: its place is broken
  // down as a factor would be, and from then on every run instruments it
  // beside the waits it held up (Suggestion::keep), for a Held part names the
  // holder only as deep as the run that measured the wait instruments it.
  const std::vector<std::string> last_run =
      s.iterations.empty() ? std::vector<std::string>{} : s.iterations.back().instrumented;
  for (const auto &c : a.causes.ranked) {
    if (c.rank <= 0 || c.share - c.own_share < a.d_selected || c.functions.empty() || c.functions[0].empty() ||
        c.functions[0][0] == '(')
      continue;
    const std::string &fn = c.functions[0];
    const bool body = ends_with(c.name, " (body)");
    std::vector<std::string> keep = cause_chain(a, c);
    if (!body) add_once(keep, fn);
    Suggestion g;
    if (!body) g.place = fn;
    g.factor = "cause " + c.name;
    g.contribution = c.share;
    g.holder = true;
    g.keep = keep;
    auto taker = std::find_if(out.begin(), out.end(), [&](const Suggestion &o) {
      return o.function == fn || std::find(o.functions.begin(), o.functions.end(), fn) != o.functions.end();
    });
    const bool taken = taker != out.end();
    if (taken && taker->break_down) {  // a factor's decision breaks it down: kept from now on too
      taker->holder = true;
      for (const auto &k : keep) add_once(taker->keep, k);
      taker->place = g.place;
      continue;
    }
    if (!body && !s.is_broken_down(fn) && !taken) {
      bool hidden = false;
      Suggestion b = one(c, hidden);
      if (b.break_down || b.unreached) {
        g.function = b.function;
        g.functions = b.functions;
        g.break_down = b.break_down;
        g.unreached = b.unreached;
        g.parents = cause_callers(a, c);
        g.reason = fmt::format("a cause: it held up {:.1f}% of Var(root) in others' waits; {}",
                               100 * (c.share - c.own_share), b.reason);
        out.push_back(std::move(g));
        continue;
      }
    }
    // Its place is broken down (or needs nothing below it): the waits it held
    // up and it must be measured in one run. Once, when the latest did not.
    std::vector<std::string> missing;
    for (const auto &k : keep)
      if (s.is_broken_down(k) && std::find(last_run.begin(), last_run.end(), k) == last_run.end())
        missing.push_back(k);
    if (missing.empty() || taken) continue;
    g.break_down = true;
    g.reason = fmt::format("a cause: it held up {:.1f}% of Var(root) in others' waits; the latest run did not "
                           "instrument {} beside them: instrument them again",
                           100 * (c.share - c.own_share), some_names(missing));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace vprof::iterate
