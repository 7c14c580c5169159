#include "lib.h"

namespace lib {
struct Item {
  int fetch() const { return 4; }
};

int square(int x) { return x * x; }
double square(double x) { return x * x; }

int visit(int n) {
  Box<int> *unused = nullptr;
  (void)unused;
  auto each = [&](int i) { return square(i) + load(i); };
  int total = 0;
  for (int i = 0; i < n; ++i) total += each(i);
  if constexpr (sizeof(int) == 4) total += load(total);
  return total;
}
}  // namespace lib
