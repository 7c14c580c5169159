#include "analyzer/profile/profile.h"

#include "common/output_file.h"

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/pipeline/analyze.h"
#include "analyzer/util/varint.h"

namespace vprof::analyzer {
namespace {

using json = nlohmann::json;
constexpr char kMagic[8] = {'V', 'P', 'R', 'F', 'P', 'R', 'O', 'F'};
constexpr size_t kHeader = 16;

// Times are whole nanoseconds; zigzag keeps a (never expected) negative one.
void put_varint(std::vector<uint8_t> &out, double v) {
  uint8_t b[10];
  out.insert(out.end(), b, b + put_leb128(zigzag(std::llround(v)), b));
}

bool get_varint(const std::vector<uint8_t> &in, size_t &pos, double &v) {
  const uint8_t *p = in.data() + pos;
  uint64_t u = 0;
  if (pos > in.size() || !get_leb128(p, in.data() + in.size(), u)) return false;
  pos = size_t(p - in.data());
  v = double(unzigzag(u));
  return true;
}

json build_json(const BuildInfo &b) {
  return {{"commit", b.commit}, {"compiler", b.compiler}, {"cpu", b.cpu},   {"cpus", b.cpus},
          {"kernel", b.kernel}, {"host", b.host},         {"clock", b.clock}, {"created", b.created},
          {"vprof_version", b.vprof_version}};
}

json run_json(const ProfileRun &r) {
  json nodes = json::array();
  for (const ProfileNode &n : r.nodes) {
    nodes.push_back({{"key", n.key}, {"parent", n.parent}, {"leaf", n.leaf}, {"label", n.label},
                     {"factor", n.factor}, {"functions", n.functions}, {"body", n.body},
                     {"call_site", site_json(n.call_site)}});
    if (!n.cause.empty()) nodes.back()["cause"] = n.cause;  // absent in profiles before loops had one
  }
  // Version 2: each column's cells, its count then (row step, value) pairs;
  // every interval's value, zeros included, was nodes x intervals bytes
  // before zlib (24 GB for a MariaDB session's 22 runs).
  std::vector<uint8_t> cells, ids, types;
  for (const auto &c : r.cols) {
    put_varint(cells, double(c.row.size()));
    uint32_t prev = 0;
    for (size_t k = 0; k < c.row.size(); ++k) {
      put_varint(cells, double(c.row[k] - prev));
      put_varint(cells, c.value[k]);
      prev = c.row[k];
    }
  }
  uint64_t prev = 0;  // ids mostly ascend: store the differences
  for (uint64_t id : r.interval_ids) {
    put_varint(ids, double(int64_t(id - prev)));
    prev = id;
  }
  for (uint32_t t : r.types) put_varint(types, double(t));
  return {{"trace_dir", r.trace_dir},
          {"intervals", r.intervals()},
          {"nodes", std::move(nodes)},
          {"type_names", r.type_names},
          {"interval_ids", json::binary(std::move(ids))},
          {"types", json::binary(std::move(types))},
          {"cells", json::binary(std::move(cells))},
          {"dropped_records", r.dropped_records},
          {"incomplete_intervals", r.incomplete_intervals},
          {"overhead", {{"probe_ns", r.probe_ns}, {"empty_interval_ns", r.empty_interval_ns}}}};
}

Status deflate_to(const std::vector<uint8_t> &in, std::vector<uint8_t> &out) {
  uLongf len = compressBound(uLong(in.size()));
  out.resize(len);
  if (compress2(out.data(), &len, in.data(), uLong(in.size()), 6) != Z_OK)
    return Error{"zlib: compression failed"};
  out.resize(len);
  return Status::Ok();
}

Expected<std::vector<uint8_t>> inflate_all(const uint8_t *data, size_t size) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Error{"zlib: cannot start"};
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  z.next_in = const_cast<uint8_t *>(data);
  z.avail_in = uInt(size);
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = buf;
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.insert(out.end(), buf, buf + (sizeof buf - z.avail_out));
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return Error{"the compressed data is cut short or damaged"};
  return out;
}

// Reads a field, or says which one was wrong.
template <class T>
bool field(const json &j, const char *name, T &out, std::string &err, const std::string &where) {
  auto it = j.find(name);
  if (it == j.end()) {
    err = where + name + ": missing";
    return false;
  }
  try {
    out = it->get<T>();
  } catch (const json::exception &) {
    err = where + name + ": wrong type";
    return false;
  }
  return true;
}

bool read_run(const json &j, ProfileRun &r, std::string &err, const std::string &where) {
  size_t n = 0;
  if (!field(j, "trace_dir", r.trace_dir, err, where) || !field(j, "intervals", n, err, where) ||
      !field(j, "type_names", r.type_names, err, where) ||
      !field(j, "dropped_records", r.dropped_records, err, where) ||
      !field(j, "incomplete_intervals", r.incomplete_intervals, err, where))
    return false;
  const json *nodes = j.contains("nodes") && j["nodes"].is_array() ? &j["nodes"] : nullptr;
  if (!nodes || nodes->empty()) {
    err = where + "nodes: missing or empty";
    return false;
  }
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json &x = (*nodes)[i];
    std::string w = fmt::format("{}nodes[{}].", where, i);
    ProfileNode p;
    if (!field(x, "key", p.key, err, w) || !field(x, "parent", p.parent, err, w) ||
        !field(x, "leaf", p.leaf, err, w) || !field(x, "label", p.label, err, w) ||
        !field(x, "factor", p.factor, err, w) || !field(x, "functions", p.functions, err, w) ||
        !field(x, "body", p.body, err, w))
      return false;
    if (p.parent >= int(i) || (i > 0 && p.parent < 0)) {
      err = w + "parent: does not precede the node";
      return false;
    }
    if (x.contains("cause") && !field(x, "cause", p.cause, err, w)) return false;
    if (x.contains("call_site") && x["call_site"].is_object()) {
      CallSiteInfo s;
      const json &c = x["call_site"];
      if (!field(c, "file", s.file, err, w + "call_site.") || !field(c, "line", s.line, err, w + "call_site.") ||
          !field(c, "column", s.column, err, w + "call_site.") ||
          !field(c, "callee", s.callee, err, w + "call_site."))
        return false;
      p.call_site = s;
    }
    r.nodes.push_back(std::move(p));
  }
  auto bytes = [&](const char *name, std::vector<uint8_t> &out) {
    if (!j.contains(name) || !j[name].is_binary()) {
      err = where + name + ": missing or not binary";
      return false;
    }
    out = j[name].get_binary();
    return true;
  };
  std::vector<uint8_t> cols, ids, types;
  const bool by_cell = j.contains("cells");  // version 2; version 1 has every interval's value
  if (!bytes(by_cell ? "cells" : "columns", cols) || !bytes("interval_ids", ids) || !bytes("types", types))
    return false;
  size_t pos = 0;
  r.cols.assign(r.nodes.size(), {});
  for (auto &c : r.cols) {
    if (by_cell) {
      double count = 0, step = 0, v = 0;
      if (!get_varint(cols, pos, count) || count < 0 || count > double(n)) {
        err = where + "cells: cut short or a count out of range";
        return false;
      }
      uint64_t row = 0;
      for (size_t k = 0; k < size_t(count); ++k) {
        if (!get_varint(cols, pos, step) || !get_varint(cols, pos, v) || step < 0 ||
            (row += uint64_t(step)) >= n || (k && step == 0)) {
          err = where + "cells: cut short or a row out of range";
          return false;
        }
        c.row.push_back(uint32_t(row));
        c.value.push_back(v);
      }
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      double v = 0;
      if (!get_varint(cols, pos, v)) {
        err = where + "columns: shorter than its nodes x intervals";
        return false;
      }
      if (v != 0) {
        c.row.push_back(uint32_t(i));
        c.value.push_back(v);
      }
    }
  }
  pos = 0;
  size_t tpos = 0;
  uint64_t prev = 0;
  r.interval_ids.resize(n);
  r.types.resize(n);
  for (size_t i = 0; i < n; ++i) {
    double d = 0, t = 0;
    if (!get_varint(ids, pos, d)) {
      err = where + "interval_ids: cut short";
      return false;
    }
    prev += uint64_t(int64_t(d));
    r.interval_ids[i] = prev;
    if (!get_varint(types, tpos, t) || size_t(t) >= std::max<size_t>(1, r.type_names.size())) {
      err = where + "types: cut short or out of range";
      return false;
    }
    r.types[i] = uint32_t(t);
  }
  if (j.contains("overhead") && j["overhead"].is_object()) {
    r.probe_ns = j["overhead"].value("probe_ns", 0.0);
    r.empty_interval_ns = j["overhead"].value("empty_interval_ns", 0.0);
  }
  return true;
}

}  // namespace

void ProfileRun::column_into(size_t n, std::vector<double> &out, size_t at) const {
  std::fill(out.begin() + long(at), out.begin() + long(at + intervals()), 0.0);
  const Column &c = cols[n];
  for (size_t k = 0; k < c.row.size(); ++k) out[at + c.row[k]] = c.value[k];
}

Profile make_profile(const Analysis &a, BuildInfo build, std::optional<int> only_run) {
  Profile p;
  p.root = a.root_label;
  p.build = std::move(build);
  for (const Factor &f : a.factors) {
    if (f.rank <= 0) continue;
    ProfileFactor pf{f.rank, f.name, ranked_value(f, a.paper), ""};
    if (!f.call_sites.empty() && f.call_sites.front().call_site)
      pf.where = fmt::format("{}:{}", f.call_sites.front().call_site->file, f.call_sites.front().call_site->line);
    p.factors.push_back(std::move(pf));
  }
  for (const auto &run : a.runs) {
    if (only_run && run->run != *only_run) continue;
    ProfileRun r;
    r.trace_dir = run->dir;
    r.dropped_records = run->read.dropped_records;
    r.incomplete_intervals = run->paths.counters.incomplete_intervals;
    r.probe_ns = run->overhead.probe_pair_ns;
    r.empty_interval_ns = run->overhead.empty_interval_ns;
    const Columns &c = run->columns;
    const auto rows = c.rows();
    // The parts of the run's own tree (Var and Leaf terms), pre-order.
    std::function<void(const VarNode &, int)> walk = [&](const VarNode &v, int parent) {
      if (v.kind == VarNode::Kind::Cov) return;
      ProfileNode n;
      n.key = v.key;
      n.parent = parent;
      n.leaf = v.kind == VarNode::Kind::Leaf;
      n.label = v.label;
      n.factor = v.factor;
      n.cause = v.cause;
      n.functions = v.functions;
      n.body = v.body;
      n.call_site = v.call_site;
      if (n.call_site) n.call_site->function_id = 0;
      ProfileRun::Column &kept = r.cols.emplace_back();
      auto keep = [&](Eigen::Index row, double value) {
        if (value == 0) return;
        kept.row.push_back(uint32_t(row));
        kept.value.push_back(value);
      };
      const NodeTotals &t = c.total;
      const size_t node = size_t(v.a.node);
      if (!v.a.self || c.nodes[node].children.empty()) {
        // A node's total is its column's cells as they are (rows
        // ascending); a dense pass per node was most of saving a wide run.
        t.for_each(int(node), keep);
      } else {  // a body: its total less its children's
        Eigen::VectorXd col(rows);
        if (rows) c.part_into(v.a.node, true, col);
        for (Eigen::Index i = 0; i < rows; ++i) keep(i, col(i));
      }
      int me = int(r.nodes.size());
      r.nodes.push_back(std::move(n));
      for (const VarNode &ch : v.children) walk(ch, me);
    };
    walk(run->tree, -1);
    // The root's column is the latency (or the root function's time).
    r.type_names = run->labels.empty() ? std::vector<std::string>{""} : run->labels;
    for (const IntervalRow &row : run->paths.rows) {
      r.interval_ids.push_back(row.id);
      r.types.push_back(row.type_label < r.type_names.size() ? row.type_label : 0);
    }
    p.runs.push_back(std::move(r));
  }
  return p;
}

Status save_profile(const Profile &p, const std::string &path) {
  json doc = {{"root", p.root}, {"build", build_json(p.build)}};
  json factors = json::array();
  for (const ProfileFactor &f : p.factors)
    factors.push_back({{"rank", f.rank}, {"name", f.name}, {"share", f.share}, {"where", f.where}});
  doc["factors"] = std::move(factors);
  doc["runs"] = json::array();
  for (const ProfileRun &r : p.runs) doc["runs"].push_back(run_json(r));
  std::vector<uint8_t> cbor = json::to_cbor(doc), z;
  if (Status s = deflate_to(cbor, z); !s.ok()) return Error{path + ": " + s.message()};
  uint8_t head[kHeader];
  std::memcpy(head, kMagic, 8);
  const uint32_t v = kProfileVersion, min_v = 2;  // a version-1 reader knows no cells
  for (int i = 0; i < 4; ++i) {
    head[8 + i] = uint8_t(v >> (8 * i));
    head[12 + i] = uint8_t(min_v >> (8 * i));
  }
  // Whole or not at all: a baseline refreshed in place on a full disk keeps
  // its old bytes (output_file.h).
  return write_output(path, [&](std::ostream &out) {
    out.write(reinterpret_cast<const char *>(head), kHeader);
    out.write(reinterpret_cast<const char *>(z.data()), std::streamsize(z.size()));
    return Status::Ok();
  });
}

bool is_profile_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char m[8];
  return in.read(m, 8) && std::memcmp(m, kMagic, 8) == 0;
}

Expected<Profile> load_profile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open"};
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < kHeader || std::memcmp(data.data(), kMagic, 8) != 0)
    return Error{path + ": not a saved vprof profile (no VPROFPRF magic)"};
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(data[at + i]) << (8 * i);
    return v;
  };
  const uint32_t version = u32(8), min_v = u32(12);
  if (min_v > kProfileVersion || (version < 1))
    return Error{fmt::format("{}: saved profile format version {} (readable from version {}); this "
                             "vprof reads version {}: save it again with this vprof",
                             path, version, min_v, kProfileVersion)};
  auto raw = inflate_all(data.data() + kHeader, data.size() - kHeader);
  if (!raw) return Error{path + ": " + raw.error().message};
  json doc;
  try {
    doc = json::from_cbor(*raw);
  } catch (const json::exception &e) {
    return Error{path + ": damaged (its contents are not CBOR)"};
  }
  Profile p;
  p.version = version;
  p.source = path;
  std::string err;
  if (!doc.is_object() || !field(doc, "root", p.root, err, "")) return Error{path + ": " + err};
  if (doc.contains("build") && doc["build"].is_object()) {
    const json &b = doc["build"];
    BuildInfo &bi = p.build;
    bi.commit = b.value("commit", "");
    bi.compiler = b.value("compiler", "");
    bi.cpu = b.value("cpu", "");
    bi.cpus = b.value("cpus", 0u);
    bi.kernel = b.value("kernel", "");
    bi.host = b.value("host", "");
    bi.clock = b.value("clock", "");
    bi.created = b.value("created", "");
    bi.vprof_version = b.value("vprof_version", "");
  }
  if (doc.contains("factors") && doc["factors"].is_array())
    for (const json &f : doc["factors"])
      p.factors.push_back({f.value("rank", 0), f.value("name", ""), f.value("share", 0.0), f.value("where", "")});
  if (!doc.contains("runs") || !doc["runs"].is_array() || doc["runs"].empty())
    return Error{path + ": runs: missing or empty"};
  for (size_t i = 0; i < doc["runs"].size(); ++i) {
    ProfileRun r;
    if (!read_run(doc["runs"][i], r, err, fmt::format("runs[{}].", i))) return Error{path + ": " + err};
    p.runs.push_back(std::move(r));
  }
  return p;
}

}  // namespace vprof::analyzer
