// How gtest prints minidb's policies: by name, so that a parameterized
// test's name in ctest reads "fcfs", not "4-byte object <00-00 00-00>".
#ifndef MINIDB_TEST_PRINT_POLICIES_H
#define MINIDB_TEST_PRINT_POLICIES_H

#include <ostream>

#include "buffer_pool.h"
#include "lock_manager.h"
#include "wal.h"

namespace minidb {

inline void PrintTo(GrantPolicy p, std::ostream *os) { *os << grant_policy_name(p); }
inline void PrintTo(FlushPolicy p, std::ostream *os) { *os << flush_policy_name(p); }
inline void PrintTo(LruPolicy p, std::ostream *os) { *os << lru_policy_name(p); }

}  // namespace minidb

#endif
