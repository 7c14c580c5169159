// The ownership map's releases-if-waited: a release looks in the
// map only while a wait on an object of its hash is timed, in this process
// or in one forked from it.
#include "runtime/ownership_map.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

namespace vprof::rt {
namespace {

struct Objects {
  alignas(64) char a[64], b[64];
};

// An address whose filter counter is `like`'s but that is another object.
const void *same_filter_as(const void *like, const char *base) {
  for (uint64_t off = 64;; off += 64)
    if (OwnershipMap::filter_index(base + off) == OwnershipMap::filter_index(like) && base + off != like)
      return base + off;
}

TEST(OwnershipMap, AReleaseNoOneWaitsForReadsNoClockAndWritesNothing) {
  OwnershipMap map;
  ASSERT_TRUE(map.init(1024));
  Objects o;
  int ticks = 0;
  auto tick = [&] { return ++ticks, uint64_t{77}; };
  EXPECT_FALSE(map.put_if_waited(o.a, 5, tick, 0x10));
  EXPECT_EQ(ticks, 0);
  EXPECT_EQ(map.get(o.a).value, 0u);

  OwnershipMap::Slot *s = map.wait_begins(o.a);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(map.put_if_waited(o.a, 5, tick, 0x10));
  EXPECT_EQ(ticks, 1);
  EXPECT_EQ(map.get(o.a).value, 5u | (uint64_t{77} << 32));
  EXPECT_EQ(map.get(o.a).pc, 0x10u);

  // Another object of the same counter: the filter lets it look, the slot's
  // own count says no.
  static char far[1 << 20];
  const void *twin = same_filter_as(o.a, far);
  EXPECT_FALSE(map.put_if_waited(twin, 6, tick, 0x20));
  EXPECT_EQ(ticks, 1);

  map.wait_ends(o.a, s);
  EXPECT_FALSE(map.put_if_waited(o.a, 7, tick, 0x30));
  EXPECT_EQ(ticks, 1);
  EXPECT_EQ(map.get(o.a).value, 5u | (uint64_t{77} << 32));  // the waited-for release stays
}

TEST(OwnershipMap, AWaitWithNoSlotStillCountsAndIsTakenBack) {
  OwnershipMap map;
  ASSERT_TRUE(map.init(1024));
  Objects o;
  // nullptr stands for a wait the full map had no slot for: its hash's count
  // goes up and down all the same.
  map.wait_ends(o.b, map.wait_begins(o.b));
  int ticks = 0;
  EXPECT_FALSE(map.put_if_waited(o.b, 1, [&] { return ++ticks, uint64_t{1}; }, 0));
  EXPECT_EQ(ticks, 0);
}

TEST(OwnershipMap, AWaitInAForkedChildMakesTheParentsReleaseWritten) {
  OwnershipMap map;
  ASSERT_TRUE(map.init(1024));
  static Objects o;  // the same address in both processes
  int go[2], done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OwnershipMap::Slot *s = map.wait_begins(o.a);
    char c = 1;
    if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(2);
    map.wait_ends(o.a, s);
    if (write(done[1], &c, 1) != 1) _exit(2);
    _exit(s ? 0 : 3);
  }
  char c;
  ASSERT_EQ(read(done[0], &c, 1), 1);  // the child's wait is timed
  EXPECT_TRUE(map.put_if_waited(o.a, 9, [] { return uint64_t{3}; }, 0));
  EXPECT_EQ(map.get(o.a).value, 9u | (uint64_t{3} << 32));
  ASSERT_EQ(write(go[1], &c, 1), 1);
  ASSERT_EQ(read(done[0], &c, 1), 1);  // and over
  EXPECT_FALSE(map.put_if_waited(o.a, 10, [] { return uint64_t{4}; }, 0));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace vprof::rt
