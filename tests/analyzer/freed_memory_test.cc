// An iterate session drops an iteration's analysis and makes the next one in
// the same process. Under keep_freed_memory() the allocator keeps what an
// analysis frees, so the next one's peak came on top of it: MariaDB's durable
// session grew ~1.1 GB an iteration and was OOM-killed at 24 GB in its 12th
// analysis in one worker (docs/case-studies/mariadb.md, session 6). What is
// freed must go back to the system when the session drops an analysis.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/util/prefault.h"
#include "tests/support/resident.h"

namespace {

// 128 MiB in 1 MiB blocks, each under the 32 MiB that keep_freed_memory()
// serves from the heap, written and then freed: an analysis' tables.
void churn() {
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 128; ++i) {
    blocks.emplace_back(new char[1 << 20]);
    std::memset(blocks.back().get(), 1, 1 << 20);
  }
}

}  // namespace

TEST(FreedMemory, AnAnalysisDroppedInALongProcessGivesItsMemoryBack) {
#ifndef __GLIBC__
  GTEST_SKIP() << "keep_freed_memory() tunes glibc's allocator only";
#endif
  vprof::analyzer::keep_freed_memory();
  vprof::analyzer::give_back_freed_memory();  // nothing an earlier test freed is reused below
  const long before = vprof::testing::resident_kb();
  // On the session's own thread (glibc's main arena). A worker thread's arena
  // keeps its top heap (at most 64 MiB) through malloc_trim: glibc trims
  // only the main arena's top (the MariaDB figures are with it).
  churn();
  const long kept = vprof::testing::resident_kb();
  ASSERT_GE(kept - before, 120 * 1024) << "the freed blocks were not kept: nothing for this test to see";
  vprof::analyzer::give_back_freed_memory();
  EXPECT_LT(vprof::testing::resident_kb() - before, 16 * 1024) << "kept " << (kept - before) / 1024 << " MiB before the drop";
}
