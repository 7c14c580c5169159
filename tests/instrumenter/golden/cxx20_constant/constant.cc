// Constant and unevaluated contexts are left alone; a constexpr function is
// not instrumented (a probe is not a constant expression) but a runtime call
// of one is a call site.
consteval int sq(int x) { return x * x; }
constexpr int cube(int x) { return x * x * x; }
int g(int);

int f(int n) {
  int a = sq(4);              // immediate invocation
  int b = cube(n);            // runtime call of a constexpr function: timed
  constexpr int c = cube(2);  // constant
  int arr[cube(2)];           // array bound
  arr[0] = 0;
  switch (n) {
    case cube(1):
      return g(a);
    default:
      break;
  }
  if constexpr (cube(1) == 1) b += g(b);
  static_assert(cube(1) == 1, "constant");
  return b + c + arr[0] + static_cast<int>(sizeof(g(1))) + static_cast<int>(noexcept(g(2)));
}
