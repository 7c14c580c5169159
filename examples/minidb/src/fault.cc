#include "fault.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

namespace minidb {
namespace {

constexpr int kPoints = static_cast<int>(InjectPoint::Count);

struct Slot {
  bool enabled = false;
  DelayDist dist;
  std::atomic<uint64_t> count{0};
};

Slot g_slots[kPoints];
std::atomic<bool> g_any{false};
std::atomic<uint64_t> g_seed{1};
std::atomic<uint64_t> g_thread_counter{0};

// Parses "<number><unit>"; `unit_ns` carries the unit from a previous bound.
bool parse_duration(const std::string &s, int64_t *out, int64_t *unit_ns) {
  if (s.empty()) return false;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || v < 0) return false;
  std::string unit(end);
  if (unit == "ns") *unit_ns = 1;
  else if (unit == "us") *unit_ns = 1000;
  else if (unit == "ms") *unit_ns = 1000000;
  else if (unit == "s") *unit_ns = 1000000000;
  else if (!unit.empty()) return false;
  *out = static_cast<int64_t>(v * static_cast<double>(*unit_ns));
  return true;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

std::mt19937_64 &thread_rng() {
  // Seeded per thread from the run seed and the order threads first inject, so
  // a run is reproducible as far as thread scheduling allows.
  thread_local std::mt19937_64 rng(g_seed.load() * 0x9E3779B97F4A7C15ull +
                                   g_thread_counter.fetch_add(1));
  return rng;
}

int64_t sample(const DelayDist &d) {
  switch (d.kind) {
    case DelayDist::Fixed:
      return d.a_ns;
    case DelayDist::Uniform:
      return std::uniform_int_distribution<int64_t>(d.a_ns, d.b_ns)(thread_rng());
    case DelayDist::Exponential:
      if (d.a_ns <= 0) return 0;
      return static_cast<int64_t>(
          std::exponential_distribution<double>(1.0 / static_cast<double>(d.a_ns))(
              thread_rng()));
  }
  return 0;
}

}  // namespace

const std::vector<std::string> &injectable_functions() {
  static const std::vector<std::string> names = {
      "run_transaction",         "execute_step",          "Database::read_row",
      "Database::write_row",     "Database::commit",      "LockManager::acquire",
      "LockManager::wait_for_grant", "LockManager::release_all", "BufferPool::fetch",
      "BufferPool::lru_touch",   "BufferPool::read_page", "BufferPool::write_page",
      "Log::append",             "Log::commit",           "Log::flush",
      "Log::fsync"};
  static_assert(kPoints == 16, "update the name table with InjectPoint");
  return names;
}

bool parse_delay_dist(const std::string &text, DelayDist *out, std::string *err) {
  std::vector<std::string> parts = split(text, ':');
  int64_t unit = 1000;  // a bare number means microseconds
  DelayDist d;
  bool ok = false;
  if (parts[0] == "fixed" && parts.size() == 2) {
    d.kind = DelayDist::Fixed;
    ok = parse_duration(parts[1], &d.a_ns, &unit);
  } else if (parts[0] == "exp" && parts.size() == 2) {
    d.kind = DelayDist::Exponential;
    ok = parse_duration(parts[1], &d.a_ns, &unit);
  } else if (parts[0] == "uniform" && parts.size() == 3) {
    d.kind = DelayDist::Uniform;
    // Parse the high bound first so "uniform:0:500us" reads 0 as microseconds.
    ok = parse_duration(parts[2], &d.b_ns, &unit) && parse_duration(parts[1], &d.a_ns, &unit) &&
         d.a_ns <= d.b_ns;
  }
  if (!ok) {
    *err = "bad delay distribution '" + text +
           "' (expected fixed:D, exp:MEAN or uniform:LO:HI, D like 100us)";
    return false;
  }
  *out = d;
  return true;
}

bool configure_delay(const std::string &spec, std::string *err) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos) {
    *err = "bad --inject-delay '" + spec + "' (expected FUNCTION=DIST)";
    return false;
  }
  std::string name = spec.substr(0, eq);
  if (name.rfind("minidb::", 0) == 0) name = name.substr(8);
  const auto &names = injectable_functions();
  for (int i = 0; i < kPoints; ++i) {
    if (names[i] != name) continue;
    DelayDist d;
    if (!parse_delay_dist(spec.substr(eq + 1), &d, err)) return false;
    g_slots[i].dist = d;
    g_slots[i].enabled = true;
    g_any.store(true);
    return true;
  }
  *err = "unknown injectable function '" + name + "' (see --list-injectable)";
  return false;
}

void clear_delays() {
  g_any.store(false);
  for (Slot &s : g_slots) {
    s.enabled = false;
    s.count.store(0);
  }
}

void set_delay_seed(uint64_t seed) { g_seed.store(seed); }

void inject_delay(InjectPoint point) {
  if (!g_any.load(std::memory_order_relaxed)) return;
  Slot &s = g_slots[static_cast<int>(point)];
  if (!s.enabled) return;
  s.count.fetch_add(1, std::memory_order_relaxed);
  int64_t ns = sample(s.dist);
  // Sleeping (not spinning) keeps the delay off the 2 shared cores; the
  // profiler measures wall time, so the delay is attributed the same way.
  if (ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

uint64_t injected_count(InjectPoint point) {
  return g_slots[static_cast<int>(point)].count.load();
}

}  // namespace minidb
