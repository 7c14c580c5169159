// Critical-path stage (docs/method.md, "The critical path", the paper's
// Algorithm 2): for every complete interval, walks back from its end across
// threads along wake-up and created-by edges and tiles [begin, end] exactly
// onto stack-trie nodes ("leaves": a node's self time is its call-site path /
// function body, the root's is "(outside)", plus the "(queue wait)" and
// "(untracked)" nodes).
//
// The tiling invariant (a row sums to end - begin, to the nanosecond) is
// checked for every interval; a violating interval is counted and dropped
// from the statistics rather than silently skewing them.
#ifndef VPROF_ANALYZER_CRITPATH_CRITICAL_PATH_H
#define VPROF_ANALYZER_CRITPATH_CRITICAL_PATH_H

#include <functional>
#include <cstdint>
#include <limits>
#include <vector>

#include "analyzer/merge/timeline.h"

namespace vprof::analyzer {

struct IntervalRow {
  uint64_t id;
  int64_t begin_ts, latency_ns;
  uint32_t type_label, client_label;
};

// The interval waited (wait_node) while a thread that worked for another
// interval, or for none, held or signalled the object.
struct Blame {
  uint32_t wait_node;     // the wait's stack node on the critical path
  uint32_t waker_tid;
  uint32_t waker_node;    // the waker's innermost frame at release time
  uint64_t waker_label;   // what the waker worked for (0 = nothing)
  int64_t ns;             // blocked time attributed to the wait call site
  // A waker in no instrumented frame (waker_node the root): where it
  // released, kHeldPlace | n (Names::place(n)), or 0 when not named.
  uint32_t place = 0;
};

struct PathCounters {
#define VPROF_PATH_COUNTER(name, per_walker, level, what) uint64_t name = 0;
#include "analyzer/critpath/path_counters.def"
#undef VPROF_PATH_COUNTER
};

// f(Counter) for every counter, in the list's order.
template <class F>
void for_each_counter(const PathCounters &c, F &&f) {
#define VPROF_PATH_COUNTER(name, per_walker, level, what) f(Counter{#name, c.name, Level::level, what});
#include "analyzer/critpath/path_counters.def"
#undef VPROF_PATH_COUNTER
}

// One leaf's time in one interval, in ns. The cells are the largest array an
// analysis writes, so a cell is 8 bytes: a leaf's time of 2^32 ns (4.3 s) or
// more takes several cells of the same node, side by side in its row.
struct PathCell {
  uint32_t node;
  uint32_t ns;
  bool operator==(const PathCell &o) const { return node == o.node && ns == o.ns; }
};

struct CriticalPaths {
  std::vector<IntervalRow> rows;  // in order of (end, id)
  size_t nodes = 0;               // stack-trie nodes (columns of the dense view)
  // Row r's non-zero leaves, by node (and a node's cells by ns):
  // cells[row_start[r] .. row_start[r+1]). Sparse because an interval
  // touches few of the trie's nodes.
  std::vector<size_t> row_start{0};
  std::vector<PathCell> cells;
  std::vector<Blame> blame;    // aggregated per (wait_node, waker_tid, waker_node, label, place)
  PathCounters counters;
  const PathCell *row_begin(size_t r) const { return cells.data() + row_start[r]; }
  const PathCell *row_end(size_t r) const { return cells.data() + row_start[r + 1]; }
  // ns of one leaf in one row (0 when the interval never spent time there).
  double at(size_t r, uint32_t node) const;
  // Appends a leaf's time (ns > 0, an integer) as cells.
  static void append(std::vector<PathCell> &out, uint32_t node, double ns) {
    constexpr uint32_t kMax = std::numeric_limits<uint32_t>::max();
    auto left = static_cast<uint64_t>(ns);
    for (; left > kMax; left -= kMax) out.push_back({node, kMax});
    out.push_back({node, static_cast<uint32_t>(left)});
  }
};

struct PathOptions {
  unsigned threads = 1;       // worker threads for the merge and the walk
  Workers *workers = nullptr; // a pool to use (its size overrides threads); null: start threads
  int max_wake_depth = 64;    // wake-up chains followed this deep; beyond, time stays put
  // Records per thread per merge epoch (timeline.h); 0: 1024 on one thread,
  // 2048 on more (each epoch hands work to the workers twice).
  size_t epoch_records = 0;
  // Window entries (segments, stack changes, dequeues) held for open
  // intervals before the oldest is abandoned (merge/timeline.h); ~50 bytes each.
  uint64_t max_window = uint64_t{1} << 24;
  // The manifest's direct calls (merge/timeline.h): the merge keeps them in
  // their sites' nodes as it reads. Null: every direct call is told apart
  // from its site while reading and folded at the end (more stack changes to
  // walk; the same result wherever every call of a site entered its callee).
  const DirectCalls *direct_calls = nullptr;
  // Names where a waker in no instrumented frame released (its process, an
  // address there): a number for the name, the same for every address of
  // one function (the Held leaf's id is kHeldPlace | it); 0 when it cannot
  // be named (the leaf is `held by (outside)`). Empty: never named.
  std::function<uint32_t(uint32_t pid, uint64_t pc)> name_place;
};

// The merge and the walk, epoch by epoch: what an analysis keeps of a trace.
struct TracePaths {
  StackTrie trie;
  MergeCounters merge;
  MergeStats merge_stats;
  CriticalPaths paths;
  std::vector<uint32_t> looped_sites;  // sites some thread called in a row (a loop), sorted
};

// From streams (trace_stream.h), one per thread in (pid, tid) order.
TracePaths compute_critical_paths(const std::vector<trace::EventSource *> &sources,
                                  const PathOptions &opt = {});
// From a trace in memory.
TracePaths compute_critical_paths(const trace::Trace &trace, const PathOptions &opt = {});

// One interval's critical path as the walk took it, for showing it
// (report/perfetto.h); the analysis keeps only the tiling. The same walk as
// compute_critical_paths' (a template over what it records: the analysis's
// instance records nothing and costs nothing more).
struct PathPiece {
  static constexpr int64_t kQueue = -1;      // "(queue wait)": no thread ran it
  static constexpr int64_t kUntracked = -2;  // "(untracked)": no edge explains it
  int64_t begin, end;
  int64_t thread;  // index into Timeline::threads, or kQueue / kUntracked
};
// A wake-up edge (the waker released at from_ts, the waiter woke at to_ts)
// or a created-by edge (enqueued at from_ts, dequeued at to_ts) the walk
// followed; threads are indices into Timeline::threads.
struct PathEdge {
  bool created_by;
  uint32_t from_thread;
  int64_t from_ts;
  uint32_t to_thread;
  int64_t to_ts;
};
struct RecordedPath {
  std::vector<PathPiece> pieces;  // in time order, tiling [begin, end]; a thread's adjacent ones joined
  std::vector<PathEdge> edges;    // in time order
};

// Walks one interval on a merged timeline that still holds its window (a
// Merger's timeline between next_epoch() and trim(), for an interval that
// completed in that epoch).
RecordedPath record_path(const Timeline &tl, const IntervalInfo &iv, const PathOptions &opt = {});

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_CRITPATH_CRITICAL_PATH_H
