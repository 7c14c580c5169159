// minidb_bench end to end, as a user (and vprof iterate) runs it.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_dir.h"

using minidb_test::TempDir;

namespace {

struct BenchRun {
  int status = -1;
  std::string out;
};

BenchRun run_bench(const std::string &args) {
  BenchRun r;
  std::string cmd = std::string(MINIDB_BENCH_PATH) + " " + args + " 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

uint64_t field(const std::string &out, const std::string &name) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(name + "=([0-9]+)"))) return UINT64_MAX;
  return std::stoull(m[1]);
}

struct Case {
  const char *name;
  const char *args;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class BenchModes : public ::testing::TestWithParam<Case> {};

TEST_P(BenchModes, RunsToCompletionAndPrintsItsSummary) {
  TempDir dir;
  std::string json = dir.path() + "/summary.json";
  BenchRun r = run_bench(std::string(GetParam().args) + " --txns 300 --dir " + dir.path() +
                    "/data --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(field(r.out, "committed"), 300u) << r.out;
  EXPECT_EQ(field(r.out, "failed"), 0u) << r.out;
  for (const char *key : {"count=300", "mean_us=", "var_us2=", "p50_us=", "p99_us=", "p999_us=",
                          "max_us=", "NewOrder", "Payment"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " missing in:\n" << r.out;
  std::ifstream f(json);
  nlohmann::json j = nlohmann::json::parse(f);  // throws (fails the test) if malformed
  EXPECT_EQ(j.at("schema_version"), 1);
  const auto &lat = j.at("latency");
  EXPECT_EQ(lat.at("count"), 300);
  EXPECT_GE(lat.at("variance_ns2").get<double>(), 0.0);
  EXPECT_LE(lat.at("p50_ns").get<int64_t>(), lat.at("p99_ns").get<int64_t>());
  EXPECT_LE(lat.at("p99_ns").get<int64_t>(), lat.at("p999_ns").get<int64_t>());
  EXPECT_LE(lat.at("p999_ns").get<int64_t>(), lat.at("max_ns").get<int64_t>());
  int by_type = 0;
  for (const auto &kv : j.at("by_type").items()) by_type += kv.value().at("count").get<int>();
  EXPECT_EQ(by_type, 300);
  // Cov(W, L) / Var(L) may exceed 1 (or be negative) when the rest of the
  // latency moves against the wait: it bounds only by Cauchy-Schwarz,
  // |Cov(W, L)| <= sd(W) sd(L), so |share| <= sd(W) / sd(L) (0.0005 for the
  // JSON's four decimals).
  double share = j.at("lock_wait_share_of_variance").get<double>();
  double var_w = j.at("lock_wait").at("variance_ns2").get<double>();
  double var_l = lat.at("variance_ns2").get<double>();
  ASSERT_GT(var_l, 0.0);
  EXPECT_LE(std::abs(share), std::sqrt(var_w / var_l) * (1 + 1e-6) + 5e-4)
      << "share " << share << " var_w " << var_w << " var_l " << var_l;
}

INSTANTIATE_TEST_SUITE_P(
    Modes, BenchModes,
    ::testing::Values(Case{"thread_closed", "--mode thread"},
                      Case{"pool_closed", "--mode pool --threads 3"},
                      Case{"thread_open_loop", "--rate 3000"},
                      Case{"pool_open_loop", "--mode pool --rate 3000"},
                      Case{"vats_lazy_lru_lazy_flush", "--lock-policy vats --lru lazy --flush lazy"},
                      Case{"contended_fcfs", "--preset contended"},
                      Case{"contended_vats_eager_flush", "--preset contended --lock-policy vats"}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(BenchTest, InjectedDelayLandsInTheNamedFunction) {
  TempDir dir;
  BenchRun r = run_bench("--txns 100 --frames 5 --dir " + dir.path() +
                    " --inject-delay BufferPool::read_page=uniform:0:50us"
                    " --inject-delay minidb::Log::fsync=fixed:10us");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_GT(field(r.out, "injected: BufferPool::read_page delays"), 0u) << r.out;
  EXPECT_NE(field(r.out, "injected: Log::fsync delays"), UINT64_MAX) << r.out;
  // Every fsync went through the injected function.
  EXPECT_EQ(field(r.out, "injected: Log::fsync delays"), field(r.out, "fsyncs")) << r.out;
}

// Open loop: arrivals every 10 us, but each transaction sleeps >= 1 ms, so
// the k-th one cannot end before (k+1) ms while it was due at k*10 us. Sleep
// gives lower bounds, so this holds however slow the machine is: a latency
// measured from the actual start (hiding the backlog) would fail it.
TEST(BenchTest, OpenLoopLatencyCountsFromTheIntendedStart) {
  TempDir dir;
  BenchRun r = run_bench("--threads 1 --txns 200 --rate 100000 --dir " + dir.path() +
                         " --inject-delay run_transaction=fixed:1ms");
  ASSERT_EQ(r.status, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("all +count=200 .* max_us=([0-9.]+)"))) << r.out;
  EXPECT_GE(std::stod(m[1]), 198000.0) << r.out;
  EXPECT_NE(r.out.find("loop=open"), std::string::npos);
}

// --duration alone runs by time: clients start transactions until the
// deadline, so the run cannot end before it (a lower bound, never flaky).
TEST(BenchTest, DurationAloneRunsUntilTheDeadline) {
  TempDir dir;
  BenchRun r = run_bench("--duration 0.3 --flush lazy --dir " + dir.path());
  ASSERT_EQ(r.status, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("elapsed_s=([0-9.]+)"))) << r.out;
  EXPECT_GE(std::stod(m[1]), 0.3 - 0.005) << r.out;  // printed with 2 decimals
  EXPECT_GT(field(r.out, "committed"), 0u);
  EXPECT_EQ(field(r.out, "failed"), 0u);
}

TEST(BenchTest, ListsInjectableFunctions) {
  BenchRun r = run_bench("--list-injectable");
  ASSERT_EQ(r.status, 0);
  for (const char *f : {"run_transaction\n", "execute_step\n", "LockManager::wait_for_grant\n",
                        "BufferPool::read_page\n", "BufferPool::lru_touch\n", "Log::fsync\n"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
}

TEST(BenchTest, BadUsageExitsTwoWithOneLine) {
  for (const char *args : {"--lock-policy lifo", "--nope", "--inject-delay Foo::bar=fixed:1us",
                           "--txns 0", "--mode pool --threads 4 --workers 2", "--threads"}) {
    BenchRun r = run_bench(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("minidb_bench: ", 0), 0u) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
}

}  // namespace
