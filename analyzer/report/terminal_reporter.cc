// The table `vprof analyze` prints: latency summary, the measurement floor,
// the selected factors, the top of the variance tree (and with --by-type the
// tree within each type), per-client fairness, blame and data quality.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "analyzer/report/preemption.h"
#include "analyzer/report/reporter.h"
#include "analyzer/util/percent.h"

namespace vprof::analyzer {
namespace {

std::string dur(double ns) {
  double a = std::abs(ns);
  if (a >= 1e9) return fmt::format("{:.3f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string pct(double f) { return fmt::format("{:6.1f}%", 100.0 * f); }

std::string site_text(const std::optional<CallSiteInfo> &s) {
  return s ? fmt::format("{}:{}:{}", s->file, s->line, s->column) : std::string("-");
}

// Terms below 1% of Var(L) are left to the JSON. Every level is printed: on
// PostgreSQL the path below exec_simple_query is longer than 8 calls, and a
// cap of 8 levels hid its bottom, where the answer is (only a pathological
// depth is cut, and says so).
// With shares the tree is the parts' shares (they add up under each node;
// the covariance terms are inside them); with the paper's terms, the terms.
void tree_lines(const VarNode &n, int depth, bool paper, std::string &out) {
  constexpr int kMaxDepth = 64;
  if (!paper && !n.share) return;
  double v = paper ? n.contribution : *n.share;
  if (depth > 0 && std::abs(v) < 0.01) return;
  std::string indent(size_t(depth) * 2, ' ');
  if (depth > kMaxDepth) {
    out += fmt::format("  {}... (deeper levels: --json)\n", indent);
    return;
  }
  out += fmt::format("  {}{} {}{}\n", indent, pct(v), n.label,
                     n.run ? fmt::format("  [run {}]", n.run + 1) : "");
  for (const auto &c : n.children) tree_lines(c, depth + 1, paper, out);
}

// The headline's account of damage: nothing when there was none.
// Several runs: summed over them (the details name each run).
std::string lost_clause(const DataLost &d, size_t runs) {
  if (!d.any()) return std::string();
  std::string s = fmt::format("; LOST to damage: {} of {} trace files", d.damaged, d.files);
  if (runs > 1) s += fmt::format(" of {} runs", runs);
  if (d.unreadable) s += fmt::format(" ({} unreadable)", d.unreadable);
  if (d.records || d.bytes) s += fmt::format(", {} records and {} bytes not read", d.records, d.bytes);
  if (d.missing_bytes)
    s += fmt::format(", {} or more bytes cut off (up to {} more records)", d.missing_bytes,
                     d.missing_bytes / VPROF_SLOT_BYTES);
  s += fmt::format(", {} intervals incomplete (details under \"data lost\")", d.incomplete_intervals);
  return s;
}

// Runs as the report numbers them: "run 21", "runs 21-28", "runs 3, 21-28".
std::string run_list(const std::vector<size_t> &runs) {
  std::string s;
  for (size_t i = 0; i < runs.size();) {
    size_t j = i;
    while (j + 1 < runs.size() && runs[j + 1] == runs[j] + 1) ++j;
    s += fmt::format("{}{}", s.empty() ? "" : ", ", runs[i]);
    if (j > i) s += fmt::format("-{}", runs[j]);
    i = j + 1;
  }
  return (runs.size() == 1 ? "run " : "runs ") + s;
}

// The "data quality:" line, from the counters' lists, over every run: the
// verdict, then damaged files and each counter of level loss or warning that
// counted anything, worst first, summed over the runs (a merged report names
// the runs that counted it), and a line per such counter saying what it
// counts. Info counters (edges followed, late ring switches) are in the JSON
// only. It was the first run's alone: MariaDB's session 3 read "ok" while
// its runs 21-28 had each dropped 6-48 M records at the trace's budget.
std::string quality_lines(const Analysis &a) {
  struct Sum {
    Level level;
    const char *name, *what;
    uint64_t value;
    std::vector<size_t> runs;
  };
  std::vector<Sum> sums;  // in the lists' order
  for (size_t i = 0; i < a.runs.size(); ++i)
    for_each_quality(*a.runs[i], [&](const Counter &c) {
      auto it = std::find_if(sums.begin(), sums.end(), [&](const Sum &s) { return std::strcmp(s.name, c.name) == 0; });
      if (it == sums.end()) it = sums.insert(sums.end(), Sum{c.level, c.name, c.what, 0, {}});
      it->value += c.value;
      if (c.value) it->runs.push_back(i + 1);
    });
  std::string head, why;
  for (Level level : {Level::loss, Level::warning}) {
    std::string part;
    if (const DataLost d = data_lost(a); level == Level::loss && d.any())
      part = fmt::format("{} damaged trace files (\"data lost to damage\" above)", d.damaged);
    for (const Sum &s : sums) {
      if (s.level != level || s.value == 0) continue;
      part += fmt::format("{}{} {}", part.empty() ? "" : ", ", s.value, s.name);
      if (a.runs.size() > 1) part += " (" + run_list(s.runs) + ")";
      why += fmt::format("  {}: {}\n", s.name, s.what);
    }
    if (!part.empty()) head += fmt::format("{}{}: {}", head.empty() ? "" : "; ", level_name(level), part);
  }
  if (head.empty()) return "\ndata quality: ok (no counter of a loss or a warning counted anything)\n";
  // What the reader said, not only how often: "1 reader_warnings" alone hid
  // that a worker was killed mid-run (the sentence was in the JSON only).
  std::string said;
  for (size_t i = 0; i < a.runs.size() && said.size() < 4000; ++i)
    for (const std::string &d : a.runs[i]->first_diagnostics)
      said += fmt::format("  {}{}\n", a.runs.size() > 1 ? fmt::format("run {}: ", i + 1) : std::string(), d);
  return fmt::format("\ndata quality: {}\n{}{}", head, why, said);
}

std::string file_loss_line(const trace::FileLoss &l) {
  std::string s = l.file + ": ";
  if (l.unreadable) {
    s += fmt::format("unreadable, {} bytes", l.bytes);
  } else {
    s += fmt::format("{} records and {} bytes not read", l.records, l.bytes);
    if (l.missing_bytes) s += fmt::format(", {} or more bytes cut off", l.missing_bytes);
    if (l.clamped) s += fmt::format(", {} times clamped", l.clamped);
  }
  return s + " (first: " + l.first + ")";
}

// Text from the traced program (a type or client label) on one table line:
// control characters escaped ("a\nb" broke the heading in two), and cut to
// at most `max` bytes at a character's boundary with a '~'.
std::string one_line(const std::string &text, size_t max = std::string::npos) {
  std::string s;
  for (unsigned char c : text) {
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else if (c < 0x20 || c == 0x7f) s += fmt::format("\\x{:02x}", c);
    else s += char(c);
  }
  if (s.size() <= max) return s;
  size_t cut = max - 1;
  while (cut > 0 && (uint8_t(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "~";
}

// The tree within each type (--by-type), largest type first.
std::string type_trees_text(const Analysis &a) {
  std::string o;
  for (const TypeStats &t : a.types.types) {
    o += fmt::format("\nvariance tree within type {} ({} intervals, mean {}, stddev {}):\n",
                     t.type.empty() ? "(none)" : one_line(t.type), t.intervals, dur(t.mean_ns),
                     dur(std::sqrt(std::max(0.0, t.variance_ns2))));
    tree_lines(t.tree, 0, a.paper, o);
  }
  return o;
}

// Per-client fairness (tree/by_client.h): the clients with most intervals.
std::string clients_text(const Fairness &f) {
  constexpr size_t kShown = 10;
  std::string o = fmt::format(
      "\nby client: {} client{}, unfairness U_f {:.3f} (largest deviation of one client's interval "
      "count\n  from the clients' mean, over it; equal weights), mean CV of latency {:.3f}",
      f.clients.size(), f.clients.size() == 1 ? "" : "s", f.unfairness, f.mean_cv);
  if (f.unlabeled_intervals) o += fmt::format("; {} intervals without a client", f.unlabeled_intervals);
  o += fmt::format("\n  {:<24} {:>9} {:>7} {:>12} {:>6}\n", "client", "intervals", "share",
                   "mean", "cv");
  for (size_t i = 0; i < f.clients.size() && i < kShown; ++i) {
    const ClientStats &c = f.clients[i];
    std::string name = one_line(c.client, 24);
    o += fmt::format("  {:<24} {:>9} {} {:>12} {:>6.3f}\n", name, c.intervals, pct(c.share),
                     dur(c.mean_ns), c.cv);
  }
  if (f.clients.size() > kShown)
    o += fmt::format("  ... and {} more clients (--json)\n", f.clients.size() - kShown);
  return o;
}

// A factor's (or cause's) ci95 beside `value`, what it is ranked by. One
// measured in a later run has its interval there, around its value there:
// scaled to the merged value beside it (the same relative width), so the
// column never excludes the value it stands by. "*": not significant.
std::string ci_text(const Factor &f, double value) {
  if (!f.ci95) return "-";
  const auto ci = *shown_ci95(f, value);
  return fmt::format("[{:.3f}, {:.3f}]{}", ci.first, ci.second, f.significant ? "" : "*");
}

// What fixing it would buy (tail.h), a line, or "" when not computed. It is
// of the run that measured the factor; where the factor held another part
// of that run than of the merged tree beside it (a cause of the base run
// whose place later runs broke down: LevelDB's AddRecord 4.6% merged, 29.4%
// in run 1, "Var -47.1%"), the line says which run and how much there.
std::string if_fixed_line(const Factor &f, double value, size_t runs) {
  if (!f.fixed_var_change || !f.fixed_p99_change) return "";
  std::string where;
  if (runs > 1 && f.run >= 0 && f.run_value && std::fabs(*f.run_value - value) >= 0.0005)
    where = fmt::format(" in run {}, where it held {:.1f}%", f.run + 1, 100.0 * *f.run_value);
  return fmt::format("        if fixed{} (its time at its mean, the rest as measured): Var {}, p99 {}\n", where,
                     percent_change(*f.fixed_var_change, f.fixed_var_ci95),
                     percent_change(*f.fixed_p99_change, f.fixed_p99_ci95));
}

// The causes (causes.h), when some wait's blocked time is tiled by where its
// holder was (else they are the factors' leaves again): each place's share
// with its own part and the waits it held up.
std::string causes_text(const Analysis &a) {
  std::string o =
      "top causes (a place's own time plus the waits it held up, every part of the tree counted once):\n"
      "  rank  cause                                 share ci95                   own  held up\n";
  size_t shown = 0;
  for (const Factor &f : a.causes.ranked) {
    if (f.rank <= 0) continue;
    ++shown;
    o += fmt::format("  {:>4}  {:<36} {} {:<17} {} {}\n", f.rank, one_line(f.name, 36), pct(f.share),
                     ci_text(f, f.share),
                     pct(f.own_share), pct(f.share - f.own_share));
    // The waits it held up that carry 0.5% of Var or more, up to 3, a line
    // each; the rest summed.
    double rest = 0;
    size_t listed = 0, more = 0;
    for (const Factor::HeldUp &h : f.held_up) {
      if (listed < 3 && h.share >= 0.005) {
        o += fmt::format("        held up {} in {}{}\n", pct(h.share), h.wait,
                         h.site ? " at " + site_text(h.site) : std::string());
        ++listed;
      } else {
        rest += h.share;
        ++more;
      }
    }
    if (more && std::fabs(rest) >= 0.005)
      o += fmt::format("        held up {} in {} more wait{}\n", pct(rest), more, more == 1 ? "" : "s");
    o += if_fixed_line(f, f.share, a.runs.size());
  }
  if (!shown) o += "  (none reaches the threshold)\n";
  o += fmt::format("  (held up = the waits' blocked time while its holder was at this place, in other threads'\n"
                   "   intervals, through convoys; {} of the latency's variance is in no cause: (outside),\n"
                   "   (untracked), (queue wait), (preempted), (recorder), held by (outside))\n\n",
                   pct(a.causes.none));
  return o;
}

class TerminalReporter : public Reporter {
 public:
  explicit TerminalReporter(const TerminalOptions &opt) : opt_(opt) {}
  Status write(const Analysis &a, std::ostream &os) const override {
    const RunAnalysis &r = *a.runs.front();
    const LatencyStats &l = r.latency;
    const PathCounters &pc = r.paths.counters;
    std::string o;
    // A merged analysis (an iterate session's) names its runs; the figures
    // on this line and the next are the first run's.
    std::string runs = a.runs.size() > 1 ? fmt::format(" and {} more run{} (the last: {}); run 1", a.runs.size() - 1,
                                                       a.runs.size() == 2 ? "" : "s", a.runs.back()->dir)
                                         : std::string();
    o += fmt::format("vprof analyze {}{}: {} intervals ({} incomplete), {} dropped records", r.dir, runs,
                     r.paths.rows.size(), pc.incomplete_intervals, r.read.dropped_records);
    if (r.read.lost_threads)
      o += fmt::format(", {} threads with no trace file ({} records lost)", r.read.lost_threads,
                       r.read.lost_records);
    o += lost_clause(data_lost(a), a.runs.size()) + "\n";
    for (const auto &line : trace::refused_lines(r.processes, r.dir)) o += "warning: " + line + "\n";
    if (const Sampling &w = r.merge_stats.sampling; w.sampled && w.span_ns > 0)
      o += fmt::format("windowed recording: {} windows, counting {:.1f}% and recording {:.1f}% of {}; {} intervals "
                       "counted, {} left out (begun outside a window){}\n",
                       w.windows, 100.0 * double(w.on_ns) / double(w.span_ns),
                       100.0 * double(w.recording_ns) / double(w.span_ns), dur(double(w.span_ns)),
                       r.paths.rows.size(), intervals_left_out(r),
                       r.merge.windows_capped ? fmt::format(", {} windows capped", r.merge.windows_capped)
                                              : std::string());
    o += fmt::format("latency: mean {}  stddev {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
                     dur(l.mean_ns), dur(l.stddev_ns), dur(l.p50_ns), dur(l.p90_ns), dur(l.p99_ns),
                     dur(l.p999_ns), dur(l.max_ns));
    o += fmt::format("measurement floor: probe pair {:.1f} ns, empty interval {:.1f} ns\n",
                     r.overhead.probe_pair_ns, r.overhead.empty_interval_ns);
    const std::optional<double> preempted = preemption_share(r);
    o += preemption_line(preempted) + "\n";
    // With --root the tree is the root's time alone: what it leaves out of the
    // latency ((outside), (queue wait), (untracked)) is said, since every share
    // below is of the root's variance (Redis: aeProcessEvents held 14.9% of
    // Var(latency), its fsync's 86.8% read as the client's).
    if (auto cover = a.root_label != "latency" ? root_share(r) : std::nullopt)
      o += fmt::format("root: {} holds {:.1f}% of Var(latency); the shares below are of its own variance\n",
                       a.root_label, 100.0 * *cover);
    if (a.types.labeled)
      o += fmt::format("by type: {} within types (to explain), {} between types (requested work)\n",
                       pct(a.types.within_fraction), pct(a.types.between_fraction));
    o += "\n";
    // Beside preemption, d is of the code's part of the variance (factors.h).
    const std::string d = a.d_selected < a.d
                              ? fmt::format("{} of the code's part: {:.4f} of Var", a.d, a.d_selected)
                              : fmt::format("{}", a.d);
    o += fmt::format("top factors (k={}, d={}, e={}, root {} at height {}):\n", a.k, d, a.e, a.root_label,
                     a.height_root);
    // 110 columns: the largest call site goes on a line of its own.
    o += fmt::format("  {:>4}  {:<36} {:>7} {:<17} {:>7} {:>7} {:>6} {:>7}\n", "rank", "factor",
                     a.paper ? "contrib" : "share", "ci95", "p99", "top.1%", "height", "score");
    int shown = 0;
    bool unplaced = false;
    for (const auto &f : a.factors) {
      if (f.rank == 0) continue;
      ++shown;
      unplaced |= f.run < 0 && a.runs.size() > 1;
      std::string name = one_line(f.name, 36);
      std::string tail = f.tail99 ? pct(*f.tail99) : std::string("-");
      std::string top = f.top_share ? pct(*f.top_share) : std::string("-");
      // ci95, p99 and top.1% of a factor from a later run are of its value in
      // that run, which the line says beside the merged one it is ranked by.
      // So is one of the base run whose value there is not the merged one.
      const bool elsewhere =
          f.run_value && (f.run > 0 || (f.run == 0 && a.runs.size() > 1 &&
                                        std::fabs(*f.run_value - ranked_value(f, a.paper)) >= 0.0005));
      std::string run = elsewhere ? fmt::format("; measured in run {}: {:.1f}% there", f.run + 1,
                                                100.0 * *f.run_value)
                                  : std::string();
      // How many runs its interval rests on, when there were several.
      if (a.runs.size() > 1 && f.runs_measured() > 0)
        run += f.runs_measured() == 1 ? std::string("; in 1 run") : fmt::format("; in {} runs", f.runs_measured());
      o += fmt::format("  {:>4}  {:<36} {} {:<17} {:>7} {:>7} {:>6} {:>7.3f}{}\n", f.rank, name,
                       pct(ranked_value(f, a.paper)), ci_text(f, ranked_value(f, a.paper)), tail, top, f.height,
                       f.score,
                       f.fragile ? "  fragile" : "");
      // The other call sites that carry a tenth of the factor (and 1% of
      // Var), up to 3; where two are at one place (a wait inside a wrapper
      // called from several places), each says the call site above it.
      std::vector<const FactorSite *> listed;
      const double whole = std::fabs(ranked_value(f, a.paper));
      for (size_t i = 0; i < f.call_sites.size() && listed.size() < 4; ++i) {
        double v = std::fabs(ranked_value(f.call_sites[i], a.paper));
        if (i == 0 || (v >= 0.1 * whole && v >= 0.01)) listed.push_back(&f.call_sites[i]);
      }
      bool same_place = false;
      for (size_t i = 0; i < listed.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          same_place |= site_text(listed[i]->call_site) == site_text(listed[j]->call_site);
      auto via = [&](const FactorSite &s) {
        // A function entered with no call site of its own (reached through a
        // pointer or a hook dispatcher vprof cannot open) says where it was entered.
        std::string where = !s.call_site && s.parent_site
                                ? fmt::format("{} (entered in the call at {})", s.parent_site->callee,
                                              site_text(s.parent_site))
                                : site_text(s.call_site);
        std::string t = fmt::format("{} ({})", where, pct(ranked_value(s, a.paper)));
        if (same_place && s.parent_site) t += " from " + site_text(s.parent_site);
        return t;
      };
      if (!f.call_sites.empty() || !run.empty())
        o += fmt::format("        {}{}\n",
                         f.call_sites.empty() ? std::string("no call site")
                                              : "via " + via(*listed[0]),
                         run);
      for (size_t i = 1; i < listed.size(); ++i) o += "        and " + via(*listed[i]) + "\n";
      o += if_fixed_line(f, 0, 1);  // the line above says where it was measured
    }
    if (!shown) o += "  (none reaches the threshold)\n";
    // Not ranked (no function's doing), but where a reader of the table sees
    // it. A broken-down function's share is net of its (preempted) leaves; a
    // call site not broken down yet is a leaf, its preemption inside it.
    if (preempted && *preempted >= kPreemptionTopCause && !a.paper)
      o += fmt::format("  {:>4}  {:<36} {}  not a factor (of Var(latency)): more runnable threads than cores; in "
                       "the shares of call sites not broken down yet, not in broken-down functions'\n",
                       "-", frame_label(FrameKind::Preempted), pct(*preempted));
    o += a.paper ? "  (contrib = the factor's var/2cov terms over Var(L);"
                 : "  (share = Cov(factor, L) / Var(L): shares of parts add up to their whole's;";
    o += fmt::format(
        " * = the 95% interval\n"
        "   touches zero: not significant; p99 = the factor's share of the p99 tail's excess over "
        "the mean;\n"
        "   top.1% = the part of the {0} the largest 0.1% of intervals carry; fragile = ci95 wider "
        "than the\n"
        "   {0} or one interval carries over half of it (ranked as if its score were half); "
        "measured in\n"
        "   run r: p99 and top.1% are of its {0} in run r alone, ci95 is run r's scaled to the "
        "merged {0}{1}{2})\n\n",
        a.paper ? "contribution" : "share",
        // A factor whose call sites were first timed in different runs, none
        // of which holds them all (MariaDB's buf_page_get_gen), has no run to
        // measure it in: its columns read "-".
        unplaced ? ";\n   - = no one run holds all of the factor's call sites: no ci95, p99, top.1% or if fixed"
                 : "",
        a.runs.size() > 1 ? fmt::format(";\n   in N runs: N runs hold it alike; from 2, its ci95 has the spread of its {} "
                                        "between them",
                                        a.paper ? "contribution" : "share")
                          : std::string());
    // The merge scales what a later run measured below a node to the node's
    // merged share: when the two runs disagree about that node, say so.
    for (const Graft &g : a.disagreements) {
      auto sd = [&](int run) {
        return run >= 0 && size_t(run) < a.runs.size()
                   ? dur(std::sqrt(std::max(0.0, a.runs[size_t(run)]->tree.value_ns2)))
                   : std::string("-");
      };
      o += fmt::format(
          "runs disagree: {} carries {:.1f}% of Var(root) in the merged tree (run {}) but {:.1f}% "
          "in run {}\n  (root stddev {} and {}): its parts are run {}'s shares, moved to add up to "
          "{:.1f}%; compare the runs alone\n  (vprof analyze DIR) or rerun on a quieter machine\n",
          g.label, 100.0 * g.merged_share, g.from_run + 1, 100.0 * g.run_share, g.run + 1, sd(g.from_run),
          sd(g.run), g.run + 1, 100.0 * g.merged_share);
    }
    if (!a.disagreements.empty()) o += "\n";
    if (a.causes.held) o += causes_text(a);
    o += a.paper ? "variance tree (terms >= 1%):\n"
                 : "variance tree (shares >= 1%; --contribution paper for the var/cov terms):\n";
    tree_lines(a.tree, 0, a.paper, o);
    if (opt_.by_type) {
      if (a.types.labeled) o += type_trees_text(a);
      else o += "\n(--by-type: no interval has a type label)\n";
    }
    if (a.clients.labeled) o += clients_text(a.clients);
    if (!a.blame.empty()) {
      o += "\nblocked on other work (blame):\n";
      for (size_t i = 0; i < a.blame.size() && i < 5; ++i) {
        const NamedBlame &b = a.blame[i];
        o += fmt::format("  {:>12}  in {}  <- pid {} tid {} in {} ({})\n", dur(b.ns), b.wait_site,
                         b.waker_pid, b.waker_tid, b.waker_function,
                         b.waker_interval ? fmt::format("for interval {}", b.waker_interval)
                                          : std::string("for no interval"));
      }
    }
    for (const auto &run : a.runs) {
      if (run->losses.empty()) continue;
      o += fmt::format("\ndata lost to damage{}:\n",
                       a.runs.size() > 1 ? fmt::format(" in {}", run->dir) : std::string());
      for (const trace::FileLoss &l : run->losses) o += "  " + file_loss_line(l) + "\n";
    }
    o += quality_lines(a);
    os << o;
    if (!os) return Error{"cannot write the report"};
    return Status::Ok();
  }

 private:
  TerminalOptions opt_;
};

}  // namespace

std::unique_ptr<Reporter> make_terminal_reporter(const TerminalOptions &opt) {
  return std::make_unique<TerminalReporter>(opt);
}

}  // namespace vprof::analyzer
