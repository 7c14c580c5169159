// Saved profiles merged into one variance tree (merge.h).
#include "analyzer/profile/merge.h"

#include <algorithm>

#include <cmath>
#include <functional>
#include <random>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vprof::analyzer {
namespace {

// One run of a profile, alone: its latency's and each node's sums.
MergedTree reduce_run(const Profile &p, const ProfileRun &r) {
  MergedTree t;
  t.root = p.root;
  t.build = p.build;
  t.runs = 1;
  const size_t n = r.intervals();
  t.n = double(n);
  std::vector<double> l(n, 0.0);
  if (!r.cols.empty() && n) r.column_into(0, l, 0);
  for (double v : l) t.mean += v;
  t.mean = n ? t.mean / double(n) : 0.0;
  for (double v : l) t.m2 += (v - t.mean) * (v - t.mean);
  for (size_t k = 0; k < r.nodes.size() && k < r.cols.size(); ++k) {
    const ProfileNode &pn = r.nodes[k];
    const ProfileRun::Column &c = r.cols[k];
    MergedNode m;
    m.key = pn.key;
    m.label = pn.label;
    m.factor = pn.factor;
    m.leaf = pn.leaf;
    m.parent = pn.parent >= 0 && size_t(pn.parent) < r.nodes.size() ? r.nodes[size_t(pn.parent)].key : "";
    // The column keeps its cells only: the other intervals are 0.
    double sum = 0;
    for (double v : c.value) sum += v;
    m.mean = n ? sum / double(n) : 0.0;
    for (size_t i = 0; i < c.row.size(); ++i) {
      m.m2 += (c.value[i] - m.mean) * (c.value[i] - m.mean);
      m.cxl += c.value[i] * (l[c.row[i]] - t.mean);  // Σ (L − mean L) = 0
    }
    m.m2 += double(n - c.row.size()) * m.mean * m.mean;
    if (t.index.emplace(m.key, t.nodes.size()).second) t.nodes.push_back(std::move(m));
  }
  return t;
}

}  // namespace

MergedTree reduce_profile(const Profile &p) {
  MergedTree t;
  t.root = p.root;
  t.build = p.build;
  for (const ProfileRun &r : p.runs) {
    Status s = merge_into(t, reduce_run(p, r));
    (void)s;  // one profile has one root
  }
  t.profiles = 1;
  t.commits = {p.build.commit};
  return t;
}

Status merge_into(MergedTree &a, const MergedTree &b) {
  if (a.n > 0 && b.n > 0 && a.root != b.root)
    return Error{fmt::format("one profile's root is {}, another's {}: merged profiles share their root", a.root,
                             b.root)};
  if (a.n == 0 && a.nodes.empty()) {
    const size_t profiles = a.profiles + b.profiles;
    std::vector<std::string> commits = a.commits;
    a = b;
    a.profiles = profiles;
    for (const std::string &c : b.commits)
      if (std::find(commits.begin(), commits.end(), c) == commits.end()) commits.push_back(c);
    a.commits = commits;
    return Status::Ok();
  }
  // Chan, Golub and LeVeque's pairwise update: the two sets' means and
  // centred sums, and the step between their means.
  const double na = a.n, nb = b.n, n = na + nb;
  if (nb == 0) return Status::Ok();
  const double dl = b.mean - a.mean, w = na * nb / n;
  auto add = [&](MergedNode &x, double mean_b, double m2_b, double cxl_b) {
    const double dx = mean_b - x.mean;
    x.m2 += m2_b + dx * dx * w;
    x.cxl += cxl_b + dx * dl * w;
    x.mean += dx * nb / n;
  };
  std::vector<char> seen(a.nodes.size(), 0);
  for (const MergedNode &y : b.nodes) {
    auto it = a.index.find(y.key);
    if (it == a.index.end()) {  // in b only: 0 in each of a's intervals
      MergedNode x = y;
      x.mean = 0;
      x.m2 = 0;
      x.cxl = 0;
      add(x, y.mean, y.m2, y.cxl);
      a.index.emplace(y.key, a.nodes.size());
      a.nodes.push_back(std::move(x));
      seen.push_back(1);
      continue;
    }
    seen[it->second] = 1;
    add(a.nodes[it->second], y.mean, y.m2, y.cxl);
  }
  for (size_t k = 0; k < seen.size(); ++k)
    if (!seen[k]) add(a.nodes[k], 0.0, 0.0, 0.0);  // in a only: 0 in each of b's intervals
  a.m2 += b.m2 + dl * dl * w;
  a.mean += dl * nb / n;
  a.n = n;
  a.runs += b.runs;
  a.profiles += b.profiles;
  for (const std::string &c : b.commits)
    if (std::find(a.commits.begin(), a.commits.end(), c) == a.commits.end()) a.commits.push_back(c);
  return Status::Ok();
}

PartSums part_sums(const MergedTree &t, const MergedTree &part) {
  PartSums p;
  p.n = part.n;
  p.mean = part.mean;
  p.m2 = part.m2;
  for (const MergedNode &y : part.nodes) {
    auto it = t.index.find(y.key);
    if (it == t.index.end()) continue;
    p.node.push_back(uint32_t(it->second));
    p.mean_x.push_back(y.mean);
    p.cxl.push_back(y.cxl);
  }
  return p;
}

void between_run_intervals(MergedTree &t, const std::vector<PartSums> &parts, size_t resamples, uint64_t seed) {
  const size_t np = parts.size(), nk = t.nodes.size();
  if (np < 2 || resamples == 0) return;
  // Each part's sums, aligned with t's nodes (0 where it lacks one).
  struct Part {
    double n = 0, mean = 0, m2 = 0;
    std::vector<double> mx, cxl;
  };
  std::vector<Part> ps(np);
  for (MergedNode &x : t.nodes) x.parts_with = 0;
  for (size_t p = 0; p < np; ++p) {
    ps[p].n = parts[p].n;
    ps[p].mean = parts[p].mean;
    ps[p].m2 = parts[p].m2;
    ps[p].mx.assign(nk, 0.0);
    ps[p].cxl.assign(nk, 0.0);
    for (size_t i = 0; i < parts[p].node.size(); ++i) {
      const uint32_t k = parts[p].node[i];
      if (k >= nk) continue;
      ps[p].mx[k] = parts[p].mean_x[i];
      ps[p].cxl[k] = parts[p].cxl[i];
      ++t.nodes[k].parts_with;
    }
  }
  std::map<std::string, std::vector<size_t>> leaves;  // a factor's leaves
  for (size_t k = 0; k < nk; ++k)
    if (t.nodes[k].leaf && !t.nodes[k].factor.empty()) leaves[t.nodes[k].factor].push_back(k);
  std::vector<std::vector<double>> share(nk);
  std::map<std::string, std::vector<double>> factor_share;
  std::mt19937_64 rng(seed);
  std::vector<double> mx(nk), cx(nk);
  for (size_t b = 0; b < resamples; ++b) {
    double n = 0, mean = 0, m2 = 0;
    for (size_t i = 0; i < np; ++i) {
      const Part &q = ps[rng() % np];
      if (q.n == 0) continue;
      if (n == 0) {
        n = q.n, mean = q.mean, m2 = q.m2;
        mx = q.mx;
        cx = q.cxl;
        continue;
      }
      // Chan's update, as merge_into.
      const double nn = n + q.n, dl = q.mean - mean, w = n * q.n / nn;
      for (size_t k = 0; k < nk; ++k) {
        const double dx = q.mx[k] - mx[k];
        cx[k] += q.cxl[k] + dx * dl * w;
        mx[k] += dx * q.n / nn;
      }
      m2 += q.m2 + dl * dl * w;
      mean += dl * q.n / nn;
      n = nn;
    }
    for (size_t k = 0; k < nk; ++k) share[k].push_back(m2 > 0 ? cx[k] / m2 : 0.0);
    for (const auto &[f, ks] : leaves) {
      double s = 0;
      for (size_t k : ks) s += m2 > 0 ? cx[k] / m2 : 0.0;
      factor_share[f].push_back(s);
    }
  }
  auto ci = [](std::vector<double> &v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(q * double(v.size())))]; };
    return std::pair<double, double>{at(0.025), at(0.975)};
  };
  for (size_t k = 0; k < nk; ++k) std::tie(t.nodes[k].lo, t.nodes[k].hi) = ci(share[k]);
  for (auto &[f, v] : factor_share) t.factor_ci[f] = ci(v);
  t.parts = np;
  t.resamples = resamples;
}

namespace {

// Each factor's share, its leaves summed; the largest k.
std::vector<std::pair<std::string, double>> top_factors(const MergedTree &t, size_t k) {
  std::map<std::string, double> by;
  for (const MergedNode &x : t.nodes)
    if (x.leaf && !x.factor.empty()) by[x.factor] += t.share(x);
  std::vector<std::pair<std::string, double>> out(by.begin(), by.end());
  std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  if (out.size() > k) out.resize(k);
  return out;
}

std::string ms(double ns) { return fmt::format("{:.3f} ms", ns / 1e6); }

}  // namespace

std::string merged_text(const MergedTree &t, size_t k, double min_share) {
  std::string out = fmt::format(
      "vprof analyze: {} saved profile{} merged: {} run{}, {:.0f} intervals; root {}; {} build{} ({})\n", t.profiles,
      t.profiles == 1 ? "" : "s", t.runs, t.runs == 1 ? "" : "s", t.n, t.root, t.commits.size(),
      t.commits.size() == 1 ? "" : "s",
      fmt::format("commit {}", t.commits.empty() || t.commits.front().empty() ? "?" : t.commits.front().substr(0, 12)) +
          (t.commits.size() > 1 ? " and others" : ""));
  out += fmt::format("latency: mean {}  stddev {}  (over every interval of every run)\n", ms(t.mean),
                     ms(std::sqrt(t.variance())));
  out += fmt::format("\nvariance tree (shares >= {:.0f}%; share = Cov(part, L) / Var(L) over all the intervals{}):\n",
                     100 * min_share,
                     t.resamples ? fmt::format("; [ci95] from {} resamples of the {} profiles, and how many hold the "
                                               "part: how runs differ",
                                               t.resamples, t.parts)
                                 : "");
  std::map<std::string, std::vector<size_t>> children;
  for (size_t i = 0; i < t.nodes.size(); ++i) children[t.nodes[i].parent].push_back(i);
  for (auto &[parent, v] : children)
    std::stable_sort(v.begin(), v.end(), [&](size_t a, size_t b) { return t.share(t.nodes[a]) > t.share(t.nodes[b]); });
  std::function<void(const std::string &, int)> walk = [&](const std::string &key, int depth) {
    auto it = children.find(key);
    if (it == children.end()) return;
    for (size_t i : it->second) {
      const MergedNode &x = t.nodes[i];
      if (std::fabs(t.share(x)) < min_share) continue;
      const std::string ci = t.resamples && !std::isnan(x.lo)
                                 ? fmt::format(" [{:5.1f}, {:5.1f}] {:>4}", 100 * x.lo, 100 * x.hi,
                                               fmt::format("{}/{}", x.parts_with, t.parts))
                                 : "";
      out += fmt::format("  {:6.1f}%{} {:{}}{}\n", 100 * t.share(x), ci, "", 2 * depth, x.label);
      walk(x.key, depth + 1);
    }
  };
  walk("", 0);
  const auto top = top_factors(t, k);
  out += fmt::format("\ntop factors (k={}; a factor's leaves summed):\n", k);
  for (size_t i = 0; i < top.size(); ++i) {
    auto it = t.factor_ci.find(top[i].first);
    out += fmt::format("  {:4}  {:6.1f}%{}  {}\n", i + 1, 100 * top[i].second,
                       it == t.factor_ci.end()
                           ? ""
                           : fmt::format(" [{:5.1f}, {:5.1f}]", 100 * it->second.first, 100 * it->second.second),
                       top[i].first);
  }
  out += "(merged from sums: quantiles, causes, \"if fixed\" and intervals need the intervals; analyze the runs' "
         "trace directories for those)\n";
  return out;
}

// The JSON's marker and version: a merged tree's JSON is also an input of a
// later merge (its sums are exact), which the reader checks it by.
constexpr const char *kMergedFormat = "vprof merged tree";
constexpr int kMergedVersion = 1;

std::string merged_json(const MergedTree &t, size_t k) {
  nlohmann::json j;
  j["format"] = kMergedFormat;
  j["version"] = kMergedVersion;
  j["profiles"] = t.profiles;
  j["runs"] = t.runs;
  j["intervals"] = t.n;
  j["root"] = t.root;
  j["commits"] = t.commits;
  j["latency"] = {{"mean_ns", t.mean}, {"variance_ns2", t.variance()}, {"m2", t.m2}};
  j["nodes"] = nlohmann::json::array();
  for (const MergedNode &x : t.nodes)
    j["nodes"].push_back({{"key", x.key}, {"parent", x.parent}, {"label", x.label}, {"factor", x.factor},
                          {"leaf", x.leaf}, {"share", t.share(x)}, {"mean_ns", x.mean},
                          {"variance_ns2", t.n > 1 ? x.m2 / (t.n - 1) : 0.0}, {"m2", x.m2}, {"cxl", x.cxl},
                          {"ci95", std::isnan(x.lo) ? nlohmann::json(nullptr) : nlohmann::json{x.lo, x.hi}},
                          {"profiles_with", x.parts_with}});
  j["resamples"] = t.resamples;
  j["factors"] = nlohmann::json::array();
  for (const auto &[name, share] : top_factors(t, k)) {
    auto it = t.factor_ci.find(name);
    j["factors"].push_back({{"factor", name},
                            {"share", share},
                            {"ci95", it == t.factor_ci.end() ? nlohmann::json(nullptr)
                                                             : nlohmann::json{it->second.first, it->second.second}}});
  }
  return j.dump(2) + "\n";
}

bool is_merged_json(const std::string &text) {
  const size_t at = text.find_first_not_of(" \t\r\n");
  if (at == std::string::npos || text[at] != '{') return false;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  return !j.is_discarded() && j.is_object() && j.value("format", "") == kMergedFormat;
}

Expected<MergedTree> parse_merged_json(const std::string &text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kMergedFormat)
    return Error{"not a merged tree's JSON (vprof analyze PROFILES --json)"};
  if (j.value("version", 0) != kMergedVersion)
    return Error{fmt::format("a merged tree's JSON of version {}; this vprof reads version {}", j.value("version", 0),
                             kMergedVersion)};
  try {
    MergedTree t;
    t.profiles = j.at("profiles").get<size_t>();
    t.runs = j.at("runs").get<size_t>();
    t.n = j.at("intervals").get<double>();
    t.root = j.at("root").get<std::string>();
    t.commits = j.at("commits").get<std::vector<std::string>>();
    t.mean = j.at("latency").at("mean_ns").get<double>();
    t.m2 = j.at("latency").at("m2").get<double>();
    for (const auto &n : j.at("nodes")) {
      MergedNode x;
      x.key = n.at("key").get<std::string>();
      x.parent = n.at("parent").get<std::string>();
      x.label = n.at("label").get<std::string>();
      x.factor = n.at("factor").get<std::string>();
      x.leaf = n.at("leaf").get<bool>();
      x.mean = n.at("mean_ns").get<double>();
      x.m2 = n.at("m2").get<double>();
      x.cxl = n.at("cxl").get<double>();
      if (!t.index.emplace(x.key, t.nodes.size()).second) return Error{fmt::format("node {} twice", x.key)};
      t.nodes.push_back(std::move(x));
    }
    if (t.n < 0 || t.m2 < 0) return Error{"a negative count or sum of squares"};
    return t;
  } catch (const nlohmann::json::exception &e) {
    return Error{fmt::format("a merged tree's JSON without what it needs: {}", e.what())};
  }
}

}  // namespace vprof::analyzer
