#include "analyzer/pipeline/run_summary.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include "common/output_file.h"
#include "common/trace_dir_rules.h"

#include "analyzer/util/varint.h"

namespace vprof::analyzer {

namespace {

// "VPRS" and the version: a file of another version is refused (written
// again from its trace where the trace is still there). Version 2 writes
// the leaf cells, most of a summary, as varints (below); version 1's, 8
// bytes each, are still read.
constexpr char kMagic[4] = {'V', 'P', 'R', 'S'};
constexpr uint32_t kVersion = 2;
// From this version a cell is two varints (util/varint.h): its node less the
// cell before's, zigzag, then its ns (a row's cells are in node order, so
// most take 1 byte and 2-3; PostgreSQL's took 8).
constexpr uint32_t kVarintCells = 2;

// One list of fields (fields(), below) visited in both directions: Out
// writes each, In reads each back. Containers are a count and their
// elements; a map's or set's in key order, an unordered map's sorted.
class Out {
 public:
  Out(std::ostream &o, uint32_t version) : o_(o), version_(version) {}
  template <class T>
  void operator()(const T &v) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      o_.write(reinterpret_cast<const char *>(&v), sizeof v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      (*this)(uint64_t(v.size()));
      o_.write(v.data(), std::streamsize(v.size()));
    } else {
      fields(*this, const_cast<T &>(v));  // fields() only reads through an Out
    }
  }
  template <class T>
  void operator()(const std::vector<T> &v) {
    sequence(v);
  }
  void operator()(const std::vector<PathCell> &v) {
    if (version_ < kVarintCells) return sequence(v);
    (*this)(uint64_t(v.size()));
    uint32_t prev = 0;
    uint8_t b[10];
    for (const PathCell &c : v) {
      o_.write(reinterpret_cast<const char *>(b), std::streamsize(put_leb128(zigzag(int64_t(c.node) - prev), b)));
      o_.write(reinterpret_cast<const char *>(b), std::streamsize(put_leb128(c.ns, b)));
      prev = c.node;
    }
  }
  template <class T>
  void operator()(const std::set<T> &v) {
    sequence(v);
  }
  template <class K, class V>
  void operator()(const std::map<K, V> &m) {
    (*this)(uint64_t(m.size()));
    for (const auto &[k, v] : m) {
      (*this)(k);
      (*this)(v);
    }
  }
  template <class K, class V>
  void operator()(const std::unordered_map<K, V> &m) {
    (*this)(std::map<K, V>(m.begin(), m.end()));
  }

 private:
  template <class C>
  void sequence(const C &c) {
    (*this)(uint64_t(c.size()));
    for (const auto &x : c) (*this)(x);
  }
  std::ostream &o_;
  uint32_t version_;
};

class In {
 public:
  In(const char *p, const char *end) : p_(p), end_(end) {}
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }
  template <class T>
  void operator()(T &v) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      if (size_t(end_ - p_) < sizeof v) {
        ok_ = false;
        return;
      }
      std::memcpy(&v, p_, sizeof v);
      p_ += sizeof v;
    } else if constexpr (std::is_same_v<T, std::string>) {
      const uint64_t n = count();
      v.assign(p_, p_ + n);
      p_ += n;
    } else {
      fields(*this, v);
    }
  }
  template <class T>
  void operator()(std::vector<T> &v) {
    const uint64_t n = count();
    v.reserve(v.size() + n);  // at most one element a byte left: count() checked
    for (uint64_t k = n; k > 0 && ok_; --k) (*this)(v.emplace_back());
  }
  void operator()(std::vector<PathCell> &v) {
    if (version_ < kVarintCells) return operator()<PathCell>(v);
    const uint64_t n = count();
    v.reserve(v.size() + n);
    uint32_t prev = 0;
    for (uint64_t k = n; k > 0 && ok_; --k) {
      uint64_t z = 0, ns = 0;
      const auto *p = reinterpret_cast<const uint8_t *>(p_), *end = reinterpret_cast<const uint8_t *>(end_);
      ok_ = get_leb128(p, end, z) && get_leb128(p, end, ns);
      p_ = reinterpret_cast<const char *>(p);
      const int64_t node = int64_t(prev) + unzigzag(z);
      if (node < 0 || node > int64_t(UINT32_MAX) || ns > UINT32_MAX) ok_ = false;
      prev = uint32_t(node);
      v.push_back({prev, uint32_t(ns)});
    }
  }
  void set_version(uint32_t v) { version_ = v; }
  template <class T>
  void operator()(std::set<T> &v) {
    for (uint64_t n = count(); n > 0 && ok_; --n) {
      T x{};
      (*this)(x);
      v.insert(std::move(x));
    }
  }
  template <class M>
  void map(M &m) {
    for (uint64_t n = count(); n > 0 && ok_; --n) {
      typename M::key_type k{};
      (*this)(k);
      (*this)(m[k]);
    }
  }
  template <class K, class V>
  void operator()(std::map<K, V> &m) {
    map(m);
  }
  template <class K, class V>
  void operator()(std::unordered_map<K, V> &m) {
    map(m);
  }

 private:
  // A count of elements, each at least a byte: one that the rest of the
  // file cannot hold is damage, not an allocation.
  uint64_t count() {
    uint64_t n = 0;
    (*this)(n);
    if (!ok_ || n > uint64_t(end_ - p_)) {
      ok_ = false;
      return 0;
    }
    return n;
  }
  const char *p_, *end_;
  bool ok_ = true;
  uint32_t version_ = kVersion;
};

template <class IO>
void fields(IO &io, StackNode &n) {
  io(n.parent), io(n.kind), io(n.id), io(n.callee_fn), io(n.not_direct), io(n.vouched);
}
template <class IO>
void fields(IO &io, IntervalRow &r) {
  io(r.id), io(r.begin_ts), io(r.latency_ns), io(r.type_label), io(r.client_label);
}
template <class IO>
void fields(IO &io, PathCell &c) {
  io(c.node), io(c.ns);
}
template <class IO>
void fields(IO &io, Blame &b) {
  io(b.wait_node), io(b.waker_tid), io(b.waker_node), io(b.waker_label), io(b.ns), io(b.place);
}
template <class IO>
void fields(IO &io, FunctionInfo &f) {
  io(f.name), io(f.file), io(f.line);
}
template <class IO>
void fields(IO &io, CallSiteInfo &s) {
  io(s.function_id), io(s.callee), io(s.file), io(s.line), io(s.column), io(s.indirect), io(s.targets), io(s.sync),
      io(s.to_full_expression), io(s.dependent_name), io(s.through), io(s.caller);
}
template <class IO>
void fields(IO &io, Names &n) {
  io(n.functions), io(n.sites), io(n.manifest_id), io(n.ids), io(n.schema_version), io(n.places), io(n.looped_sites);
}
template <class IO>
void fields(IO &io, trace::ProcessFiles::Refused &r) {
  io(r.pid), io(r.euid), io(r.err), io(r.comm), io(r.processes);
}
template <class IO>
void fields(IO &io, trace::ProcessFiles &p) {
  io(p.files), io(p.lost_threads), io(p.lost_records), io(p.ownership_misses), io(p.budget_mb), io(p.chunk_bytes),
      io(p.budget_mb_by_pid), io(p.manifests), io(p.ids_overflow), io(p.preemption), io(p.refused), io(p.warnings),
      io(p.thread_owners), io(p.pids);
}
template <class IO>
void fields(IO &io, trace::FileLoss &l) {
  io(l.file), io(l.unreadable), io(l.bytes), io(l.missing_bytes), io(l.records), io(l.clamped), io(l.first);
}

// The run: the walk (its trie as `nodes`, its paths, counters) and what the
// report says of its trace. Sizes are written as 64 bits.
template <class IO>
void run_fields(IO &io, RunAnalysis &r, std::vector<StackNode> &nodes, uint64_t &path_nodes,
                std::vector<uint64_t> &row_start, uint64_t &files) {
  io(r.programs), io(nodes);
  CriticalPaths &p = r.paths;
  io(p.rows), io(path_nodes), io(row_start), io(p.cells), io(p.blame);
#define VPROF_PATH_COUNTER(name, per_walker, level, what) io(p.counters.name);
#include "analyzer/critpath/path_counters.def"
#undef VPROF_PATH_COUNTER
#define VPROF_MERGE_COUNTER(name, per_thread, level, what) io(r.merge.name);
#include "analyzer/merge/merge_counters.def"
#undef VPROF_MERGE_COUNTER
  auto &sampling = r.merge_stats.sampling;
  io(r.merge_stats.epochs), io(r.merge_stats.peak_window_entries), io(sampling.sampled), io(sampling.windows),
      io(sampling.on_ns), io(sampling.recording_ns), io(sampling.span_ns);
  io(r.overhead.probe_pair_ns), io(r.overhead.empty_interval_ns), io(r.records), io(r.labels), io(r.tid_pid);
  io(r.names);
#define VPROF_READ_COUNTER(name, level, what) io(r.read.name);
#include "analyzer/read/read_counters.def"
#undef VPROF_READ_COUNTER
  io(r.processes), io(r.first_diagnostics), io(files), io(r.losses);
}

}  // namespace

Status save_run_summary(const RunAnalysis &r, const std::string &path) { return save_run_summary_as(r, path, kVersion); }

Status save_run_summary_as(const RunAnalysis &r, const std::string &path, uint32_t version) {
  return write_output(path, [&](std::ostream &os) {
    RunAnalysis &run = const_cast<RunAnalysis &>(r);  // run_fields() only reads through an Out
    std::vector<StackNode> nodes;
    for (uint32_t i = 0; i < r.trie.size(); ++i) nodes.push_back(r.trie[i]);
    uint64_t path_nodes = r.paths.nodes, files = r.files;
    std::vector<uint64_t> row_start(r.paths.row_start.begin(), r.paths.row_start.end());
    Out o(os, version);
    os.write(kMagic, sizeof kMagic);
    o(version);
    run_fields(o, run, nodes, path_nodes, row_start, files);
    os.write(kMagic, sizeof kMagic);  // the end: a file cut short has none
    return Status::Ok();
  });
}

Expected<std::unique_ptr<RunAnalysis>> load_run_summary(const std::string &path, const std::string &dir, int run,
                                                        const AnalyzeOptions &opt) {
  // As places.json (trace_dir_rules.h): never through a link, never a FIFO,
  // only a file of this user's or root's: a run another user wrote would be
  // read as the program's.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | tracedir::kReopen);
  if (fd < 0) return Error{fmt::format("{}: cannot read: {}", path, std::strerror(errno))};
  struct stat st {};
  const char *foreign = fstat(fd, &st) == 0 ? tracedir::foreign_file(st) : "cannot be read";
  std::string bytes;
  if (!foreign) {
    bytes.reserve(size_t(st.st_size));  // a file that grows meanwhile appends past it
    char buf[1 << 16];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) bytes.append(buf, size_t(n));
  }
  close(fd);
  if (foreign) return Error{fmt::format("{}: {}: not a summary a session of yours wrote; not read", path, foreign)};
  auto bad = [&](const char *why) { return Error{fmt::format("{}: not a run summary this vprof reads: {}", path, why)}; };
  if (bytes.size() < 2 * sizeof kMagic + 4 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return bad("no VPRS header");
  if (std::memcmp(bytes.data() + bytes.size() - sizeof kMagic, kMagic, sizeof kMagic) != 0)
    return bad("cut short");
  In in(bytes.data() + sizeof kMagic, bytes.data() + bytes.size() - sizeof kMagic);
  uint32_t version = 0;
  in(version);
  if (version < 1 || version > kVersion) return bad("another version");
  in.set_version(version);
  auto r = std::make_unique<RunAnalysis>();
  r->dir = dir;
  r->run = run;
  std::vector<StackNode> nodes;
  uint64_t path_nodes = 0, files = 0;
  std::vector<uint64_t> row_start;
  run_fields(in, *r, nodes, path_nodes, row_start, files);
  if (!in.ok() || !in.at_end()) return bad("damaged");
  CriticalPaths &p = r->paths;
  p.nodes = size_t(path_nodes);
  p.row_start.assign(row_start.begin(), row_start.end());
  r->files = size_t(files);
  auto trie = StackTrie::from_nodes(std::move(nodes));
  if (!trie) return bad("damaged (its call tree)");
  r->trie = std::move(*trie);
  // Cells must name the trie's nodes and the rows' bounds the cells.
  if (p.row_start.size() != p.rows.size() + 1 || p.row_start.front() != 0 || p.row_start.back() != p.cells.size() ||
      !std::is_sorted(p.row_start.begin(), p.row_start.end()))
    return bad("damaged (its rows)");
  for (const PathCell &c : p.cells)
    if (c.node >= r->trie.size()) return bad("damaged (its cells)");
  bytes = std::string();  // the file's copy, before the columns are made
  if (Status d = derive_run(*r, opt); !d) return Error{d.message()};
  // The columns hold the cells' sums up the tree; nothing reads the cells
  // again (the summary is already written), so they are let go at once, as
  // a session's kept run's are.
  reduce_run(*r);
  return r;
}

}  // namespace vprof::analyzer
