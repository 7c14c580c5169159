// Symbolizer (analyzer/names/symbols.h): an address in a recorded process,
// named from the process's maps file and the binary's symbol table. Checked
// on this very test binary (its own /proc/self/maps copied as a trace's
// p-<pid>.maps), and the names as the instrumenter's selections spell them.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstring>

#include <gtest/gtest.h>

#include "analyzer/names/symbols.h"
#include "tests/support/temp_dir.h"

namespace vprof_symbols_test {
__attribute__((noinline)) int released_here(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}
struct Pool {
  __attribute__((noinline)) int complete(int x);
};
int Pool::complete(int x) {
  asm volatile("" ::: "memory");
  return x + released_here(x);
}
}  // namespace vprof_symbols_test

namespace {

using vprof::analyzer::function_name_of;
using vprof::analyzer::Symbolizer;

TEST(Symbols, DemangledNamesAreSpelledAsSelectionsSpellFunctions) {
  EXPECT_EQ(function_name_of("buf_page_t::read_complete(fil_node_t const&)"), "buf_page_t::read_complete");
  EXPECT_EQ(function_name_of("void tpool::thread_pool_generic::worker_main(tpool::worker_data*)"),
            "tpool::thread_pool_generic::worker_main");
  EXPECT_EQ(function_name_of("int ns::f<int, (anonymous namespace)::X>(int) const"), "ns::f<int, (anonymous namespace)::X>");
  EXPECT_EQ(function_name_of("(anonymous namespace)::flush(int) [clone .cold]"), "(anonymous namespace)::flush");
  EXPECT_EQ(function_name_of("Item::operator()(int)"), "Item::operator()");
  EXPECT_EQ(function_name_of("XLogWrite"), "XLogWrite");        // C
  EXPECT_EQ(function_name_of("XLogFlush.part.0"), "XLogFlush");  // C, a GCC clone
  // A lambda's body is its function's: a build ahead's instrumented copy, a user's lambda.
  EXPECT_EQ(function_name_of("leveldb::port::CondVar::Wait()::{lambda()#1}::operator()() const"),
            "leveldb::port::CondVar::Wait");
  EXPECT_EQ(function_name_of("void ns::f<int>(int)::{lambda(auto:1)#2}::operator()<long>(long) const::{lambda()#1}::"
                             "operator()() const [clone .isra.0]"),
            "ns::f<int>");
  EXPECT_EQ(function_name_of("std::_Function_handler<void (), run()::{lambda()#1}>::_M_invoke(std::_Any_data const&)"),
            "std::_Function_handler<void (), run()::{lambda()#1}>::_M_invoke");
}

TEST(Symbols, AnAddressInThisBinaryIsNamedFromItsMapsAndSymbolTable) {
  const std::string dir = vprof::testing::fresh_dir("vprof-symbols", "self");
  const uint32_t pid = uint32_t(getpid());
  {
    std::ifstream in("/proc/self/maps");
    std::ofstream out(dir + "/p-" + std::to_string(pid) + ".maps");
    out << in.rdbuf();
  }
  Symbolizer s(dir);
  // A return address is inside its function, past its first byte.
  const auto at = [](auto *f) { return reinterpret_cast<uint64_t>(reinterpret_cast<void *>(f)) + 4; };
  EXPECT_EQ(s.function(pid, at(&vprof_symbols_test::released_here)), "vprof_symbols_test::released_here");
  int (vprof_symbols_test::Pool::*m)(int) = &vprof_symbols_test::Pool::complete;
  uint64_t method = 0;
  static_assert(sizeof(m) >= sizeof(method), "a pointer to a non-virtual member holds the address first");
  std::memcpy(&method, &m, sizeof method);
  EXPECT_EQ(s.function(pid, method + 4), "vprof_symbols_test::Pool::complete");
  // libc's, from its dynamic symbols (Debian strips the full table).
  EXPECT_EQ(s.function(pid, at(&::write)), "write");
  // Nothing there, another process, no maps file: not known, never a guess.
  EXPECT_EQ(s.function(pid, 8), "");
  EXPECT_EQ(s.function(pid + 1, at(&vprof_symbols_test::released_here)), "");
  Symbolizer none(dir + "/nothing");
  EXPECT_EQ(none.function(pid, at(&vprof_symbols_test::released_here)), "");
}

// A binary rebuilt since the recording (another file at the path: the maps'
// inode no longer matches) names nothing rather than a wrong function; what
// the first analysis named is kept in the trace (places.json) for later ones.
TEST(Symbols, ARebuiltBinaryNamesNothingAndPlacesJsonKeepsTheNames) {
  const std::string dir = vprof::testing::fresh_dir("vprof-symbols", "rebuilt");
  const uint32_t pid = uint32_t(getpid());
  std::string maps;
  {
    std::ifstream in("/proc/self/maps");
    std::string line;
    while (std::getline(in, line)) {
      // Every mapping's inode off by one: the files at those paths are "others".
      std::istringstream f(line);
      std::string range, perms, offset, dev, inode;
      f >> range >> perms >> offset >> dev >> inode;
      const size_t at = line.find(inode, range.size() + perms.size() + offset.size() + dev.size());
      if (inode != "0" && at != std::string::npos)
        line.replace(at, inode.size(), std::to_string(std::stoull(inode) + 1));
      maps += line + "\n";
    }
  }
  std::ofstream(dir + "/p-" + std::to_string(pid) + ".maps") << maps;
  Symbolizer s(dir);
  const uint64_t pc = reinterpret_cast<uint64_t>(reinterpret_cast<void *>(&vprof_symbols_test::released_here)) + 4;
  EXPECT_EQ(s.function(pid, pc), "") << "another file at the binary's path";

  EXPECT_TRUE(vprof::analyzer::load_places(dir).empty());
  ASSERT_TRUE(vprof::analyzer::save_places(dir, {{pid, pc, "vprof_symbols_test::released_here"}}));
  EXPECT_FALSE(vprof::analyzer::save_places(dir, {{pid, pc, "something else"}})) << "never over a kept file";
  auto kept = vprof::analyzer::load_places(dir);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].pid, pid);
  EXPECT_EQ(kept[0].pc, pc);
  EXPECT_EQ(kept[0].function, "vprof_symbols_test::released_here");
  std::ofstream(dir + "/places.json") << "{\"places\": [{\"pid\": 1}";  // damaged
  EXPECT_TRUE(vprof::analyzer::load_places(dir).empty());
  // A name an older analysis kept for a lambda's body is its function's now.
  std::filesystem::remove(dir + "/places.json");
  ASSERT_TRUE(vprof::analyzer::save_places(
      dir, {{pid, pc, "leveldb::port::CondVar::Wait()::{lambda()#1}::operator()"}, {pid, pc + 1, "Item::operator()"}}));
  kept = vprof::analyzer::load_places(dir);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].function, "leveldb::port::CondVar::Wait");
  EXPECT_EQ(kept[1].function, "Item::operator()");
}

}  // namespace
