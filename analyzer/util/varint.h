// LEB128 varints (7 bits a byte, low first) and zigzag for signed values:
// the saved profile's cells and ids (profile.cc) and a run summary's leaf
// cells (run_summary.cc) are written with these.
#ifndef VPROF_ANALYZER_UTIL_VARINT_H
#define VPROF_ANALYZER_UTIL_VARINT_H

#include <cstddef>
#include <cstdint>

namespace vprof::analyzer {

inline uint64_t zigzag(int64_t s) { return (uint64_t(s) << 1) ^ uint64_t(s >> 63); }
inline int64_t unzigzag(uint64_t u) { return int64_t(u >> 1) ^ -int64_t(u & 1); }

// u's bytes into b; returns how many (1 to 10).
inline size_t put_leb128(uint64_t u, uint8_t (&b)[10]) {
  size_t n = 0;
  for (; u >= 0x80; u >>= 7) b[n++] = uint8_t(u) | 0x80;
  b[n++] = uint8_t(u);
  return n;
}

// One varint from [p, end), p moved past it; false when cut short or longer
// than 64 bits.
inline bool get_leb128(const uint8_t *&p, const uint8_t *end, uint64_t &u) {
  u = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t b = *p++;
    u |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_VARINT_H
