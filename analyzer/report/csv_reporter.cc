// The per-interval matrix of the base run: one row per complete interval, one
// column per leaf of the tree (a node's self time) that is non-zero somewhere.
// Rows sum to latency_ns (the tiling), except with --root, where the time
// outside the root function is not a column.
#include <fmt/format.h>

#include <string_view>

#include "analyzer/report/reporter.h"

namespace vprof::analyzer {
namespace {

// A text cell: quoted when it holds a comma, a quote or a newline; and a
// label a client chose that starts as a formula would (= + - @, a tab, a
// carriage return) gets a ' in front, so that a spreadsheet shows it
// rather than evaluating it.
std::string quote(const std::string &raw) {
  const std::string s = !raw.empty() && std::string_view("=+-@\t\r").find(raw[0]) != std::string_view::npos
                            ? "'" + raw
                            : raw;
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string held_name(const Names &n, uint32_t id) {
  if (id == 0) return "(held: outside)";
  if (id == kHeldUnrecorded) return "(held: unrecorded thread)";
  if (id == kHeldRecorder) return "(held: recorder)";
  if (held_preempted(id)) {
    std::string s = held_name(n, id & ~kHeldPreempted);
    return s.insert(s.size() - 1, ", preempted");
  }
  if (id & kHeldFunction) return "(held: " + n.function(id & ~kHeldFunction) + ")";
  if (id & kHeldPlace) return "(held: outside in " + n.place(id & ~kHeldPlace) + ")";
  if (const CallSiteInfo *si = n.site(id)) return fmt::format("(held: {}@{}:{})", si->callee, si->file, si->line);
  return "(held: " + n.callee(id) + ")";
}

std::string node_name(const Columns &c, const Names &n, int i) {
  const ShapeNode &s = c.nodes[i];
  if (s.kind == FrameKind::Root) return "";  // a path's outermost frame is no column of it
  if (const char *label = frame_label(s.kind)) return label;  // the frame kinds' table
  if (s.kind == FrameKind::Held) return held_name(n, s.id);
  if (s.kind == FrameKind::Function) return n.function(s.id);
  if (s.callee_fn && n.functions.count(s.callee_fn)) return n.function(s.callee_fn);
  if (const CallSiteInfo *si = n.site(s.id)) return fmt::format("{}@{}:{}", si->callee, si->file, si->line);
  return n.callee(s.id);
}

std::string leaf_label(const Columns &c, const Names &n, int i) {
  const ShapeNode &s = c.nodes[i];
  if (i == 0 && s.kind == FrameKind::Root) return frame_label(FrameKind::Root);
  if (s.kind == FrameKind::Queue || s.kind == FrameKind::Untracked) return node_name(c, n, i);
  std::string path;
  for (int p = i; p >= 0; p = c.nodes[p].parent) {
    std::string part = node_name(c, n, p);
    if (part.empty()) continue;
    path = path.empty() ? part : part + " > " + path;
  }
  return c.nodes[i].children.empty() ? path : path + " (body)";
}

class CsvReporter : public Reporter {
 public:
  Status write(const Analysis &a, std::ostream &out) const override {
    const RunAnalysis &r = *a.runs.front();
    const Columns &c = r.columns;
    std::vector<int> cols;
    for (size_t i = 0; i < c.has_self.size(); ++i)
      if (c.has_self[i]) cols.push_back(int(i));
    out << "interval_id,type,client,latency_ns";
    for (int i : cols) out << ',' << quote(leaf_label(c, r.names, i));
    out << '\n';
    for (size_t row = 0; row < r.paths.rows.size(); ++row) {
      const IntervalRow &iv = r.paths.rows[row];
      auto label = [&](uint32_t l) { return l < r.labels.size() ? r.labels[l] : std::string(); };
      out << iv.id << ',' << quote(label(iv.type_label)) << ',' << quote(label(iv.client_label))
          << ',' << iv.latency_ns;
      for (int i : cols) out << ',' << int64_t(c.self_at(Eigen::Index(row), i));
      out << '\n';
    }
    if (!out) return Error{"cannot write the CSV report"};
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Reporter> make_csv_reporter() { return std::make_unique<CsvReporter>(); }

}  // namespace vprof::analyzer
