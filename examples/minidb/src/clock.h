// One monotonic clock for every latency minidb measures.
#ifndef MINIDB_CLOCK_H
#define MINIDB_CLOCK_H

#include <chrono>
#include <cstdint>

namespace minidb {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace minidb

#endif
