#include "fault.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace minidb;

TEST(FaultTest, ParsesTheThreeDistributions) {
  DelayDist d;
  std::string err;
  ASSERT_TRUE(parse_delay_dist("fixed:100us", &d, &err)) << err;
  EXPECT_EQ(d.kind, DelayDist::Fixed);
  EXPECT_EQ(d.a_ns, 100000);
  ASSERT_TRUE(parse_delay_dist("uniform:0:500us", &d, &err)) << err;
  EXPECT_EQ(d.kind, DelayDist::Uniform);
  EXPECT_EQ(d.a_ns, 0);
  EXPECT_EQ(d.b_ns, 500000);
  ASSERT_TRUE(parse_delay_dist("exp:2ms", &d, &err)) << err;
  EXPECT_EQ(d.kind, DelayDist::Exponential);
  EXPECT_EQ(d.a_ns, 2000000);
  EXPECT_FALSE(parse_delay_dist("uniform:5ms:1ms", &d, &err));
  EXPECT_FALSE(parse_delay_dist("gauss:1ms", &d, &err));
  EXPECT_FALSE(parse_delay_dist("fixed:10parsecs", &d, &err));
}

TEST(FaultTest, ConfiguresOnlyKnownFunctionsAndCountsInjections) {
  std::string err;
  clear_delays();
  EXPECT_FALSE(configure_delay("Nope::nothing=fixed:1us", &err));
  EXPECT_NE(err.find("unknown injectable function"), std::string::npos);
  EXPECT_FALSE(configure_delay("BufferPool::read_page", &err));
  ASSERT_TRUE(configure_delay("minidb::BufferPool::read_page=fixed:1us", &err)) << err;
  inject_delay(InjectPoint::PoolReadPage);
  inject_delay(InjectPoint::PoolReadPage);
  inject_delay(InjectPoint::LogFsync);  // not configured: no delay, not counted
  EXPECT_EQ(injected_count(InjectPoint::PoolReadPage), 2u);
  EXPECT_EQ(injected_count(InjectPoint::LogFsync), 0u);
  clear_delays();
  inject_delay(InjectPoint::PoolReadPage);
  EXPECT_EQ(injected_count(InjectPoint::PoolReadPage), 0u);
}

TEST(FaultTest, EveryInjectPointHasAName) {
  EXPECT_EQ(injectable_functions().size(), static_cast<size_t>(InjectPoint::Count));
  EXPECT_EQ(injectable_functions()[static_cast<int>(InjectPoint::LogFsync)], "Log::fsync");
  EXPECT_EQ(injectable_functions()[static_cast<int>(InjectPoint::LockWaitForGrant)],
            "LockManager::wait_for_grant");
}

// vprof's ground-truth tests compare the injected name with the function the
// analysis ranks first, so every name must be a real function definition.
// (Log::fsync was once called fsync_file, which no ranking could match.)
TEST(FaultTest, EveryInjectableNameIsADefinedFunction) {
  std::string sources;
  for (const auto &e : std::filesystem::directory_iterator(MINIDB_SRC_DIR)) {
    if (e.path().extension() != ".cc") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    sources += ss.str();
  }
  ASSERT_FALSE(sources.empty());
  for (const std::string &name : injectable_functions()) {
    // A definition: "<return type> Name(" at the start of a line.
    std::string needle = " " + name + "(";
    bool found = false;
    for (size_t pos = sources.find(needle); pos != std::string::npos && !found;
         pos = sources.find(needle, pos + 1)) {
      size_t line_start = sources.rfind('\n', pos);
      line_start = line_start == std::string::npos ? 0 : line_start + 1;
      found = sources[line_start] != ' ';  // not indented: a definition, not a call
    }
    EXPECT_TRUE(found) << name << " is not defined in " << MINIDB_SRC_DIR;
  }
}
