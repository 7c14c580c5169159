#include <gtest/gtest.h>

#include "instrumenter/names.h"

using namespace vprof::instr;

TEST(Names, NormalizesAnonymousNamespacesAndTemplateArguments) {
  EXPECT_EQ(normalize_qualified("ns::(anonymous namespace)::Box<int, std::pair<a, b>>::get"), "ns::Box::get");
  EXPECT_EQ(normalize_qualified("ns::C::operator<"), "ns::C::operator<");
  EXPECT_EQ(normalize_qualified("ns::C::operator<<"), "ns::C::operator<<");
}

TEST(Names, ParsesFileSignatureAndPlainPatterns) {
  auto a = parse_pattern("backend/tcop/postgres.c:exec_simple_query");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->file, "backend/tcop/postgres.c");
  EXPECT_EQ(a->name, "exec_simple_query");
  auto b = parse_pattern("leveldb::DBImpl::Write(const WriteOptions &,  WriteBatch *)");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->name, "leveldb::DBImpl::Write");
  EXPECT_TRUE(b->has_signature);
  EXPECT_EQ(b->signature, "const WriteOptions&,WriteBatch*");
  auto c = parse_pattern("f(void)");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->signature, "");
  EXPECT_FALSE(parse_pattern("f(int").ok());
}

TEST(Names, PathSuffixMatchesWholeComponents) {
  EXPECT_TRUE(path_has_suffix("/src/a/data.c", "a/data.c"));
  EXPECT_TRUE(path_has_suffix("/src/a/data.c", "data.c"));
  EXPECT_FALSE(path_has_suffix("/src/a/data.c", "ta.c"));
}

TEST(Names, CloseMatchesPreferTheSameLastComponent) {
  auto m = close_matches("leveldb::DBImpl::Wrte", {"leveldb::DBImpl::Write", "leveldb::DBImpl::Get", "zzz"});
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m[0], "leveldb::DBImpl::Write");
  EXPECT_EQ(std::find(m.begin(), m.end(), "zzz"), m.end());
}
