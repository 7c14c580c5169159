// Exponential ("galloping") search from a hint: the same answer as
// std::upper_bound, in O(log d) steps where d is the distance from the hint.
// For lookups that move in small steps through a sorted array (the walk going
// back in time on one thread, wake-ups matched to the releases just decoded).
#ifndef VPROF_ANALYZER_UTIL_GALLOP_H
#define VPROF_ANALYZER_UTIL_GALLOP_H

#include <algorithm>
#include <cstddef>

namespace vprof::analyzer {

// The first element of [first, last) whose key is greater than v (keys are
// non-decreasing), searched outwards from `hint` (any position in
// [first, last]).
template <class T, class K, class Key>
const T *upper_bound_from(const T *first, const T *last, const T *hint, K v, Key key) {
  const T *lo = hint, *hi = hint;
  size_t step = 1;
  if (hint != last && !(v < key(*hint))) {
    // Forward: key(*lo) <= v.
    while (true) {
      const T *c = size_t(last - lo) > step ? lo + step : last;
      if (c == last || v < key(*c)) {
        hi = c;
        break;
      }
      lo = c;
      step *= 2;
    }
  } else {
    // Backward: hi is last or key(*hi) > v.
    while (lo != first) {
      const T *c = size_t(lo - first) > step ? lo - step : first;
      lo = c;
      if (!(v < key(*c))) break;
      hi = c;
      step *= 2;
    }
  }
  return std::upper_bound(lo, hi, v, [&](const K &x, const T &e) { return x < key(e); });
}

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_GALLOP_H
