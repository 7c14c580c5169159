// Internal: the Levenshtein distance behind every "did you mean" vprof prints
// (an unknown command, sync pack or function name). Header-only: the vprof
// program and the clang instrumenter share it without sharing a library.
#ifndef VPROF_EDIT_DISTANCE_H
#define VPROF_EDIT_DISTANCE_H

#include <algorithm>
#include <string>
#include <vector>

namespace vprof {

// One row at a time: O(|a|·|b|) time, O(|b|) memory.
inline size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace vprof

#endif
