// record_path (critical_path.h): the analysis's walk, recording the path.
#include <algorithm>

#include "analyzer/critpath/critical_path.h"
#include "analyzer/critpath/walker.h"

namespace vprof::analyzer {
namespace {

// The path as walked, for record_path.
struct Recorder {
  RecordedPath path;
  void on_thread(uint32_t thread, int64_t a, int64_t b) {
    path.pieces.push_back({a, b, int64_t(thread)});
  }
  void on_queue(int64_t a, int64_t b) {
    if (a < b) path.pieces.push_back({a, b, PathPiece::kQueue});
  }
  void on_untracked(int64_t a, int64_t b) { path.pieces.push_back({a, b, PathPiece::kUntracked}); }
  void on_edge(bool created_by, uint32_t from, int64_t from_ts, uint32_t to, int64_t to_ts) {
    path.edges.push_back({created_by, from, from_ts, to, to_ts});
  }
};

}  // namespace

RecordedPath record_path(const Timeline &tl, const IntervalInfo &iv, const PathOptions &opt) {
  Walker<Recorder> w(tl, opt);
  w.prepare(tl.trie.size());
  std::vector<PathCell> cells;
  w.walk(iv, cells);
  RecordedPath p = std::move(w.path);
  // Walked backwards, in small steps: in time order, a thread's adjacent
  // stretches joined.
  std::sort(p.pieces.begin(), p.pieces.end(),
            [](const PathPiece &a, const PathPiece &b) { return a.begin < b.begin; });
  std::vector<PathPiece> joined;
  for (const PathPiece &x : p.pieces) {
    if (!joined.empty() && joined.back().thread == x.thread && joined.back().end == x.begin)
      joined.back().end = x.end;
    else
      joined.push_back(x);
  }
  p.pieces = std::move(joined);
  std::stable_sort(p.edges.begin(), p.edges.end(),
                   [](const PathEdge &a, const PathEdge &b) { return a.to_ts < b.to_ts; });
  return p;
}

}  // namespace vprof::analyzer
