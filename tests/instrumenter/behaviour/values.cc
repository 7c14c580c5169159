// behaviour: std=-std=c++11 std=-std=c++17 std=-std=c++20 function=run function=fib function=Shape::area function=pick
// expect: enter=13 exit=13 site_begin=43 site_end=43
// Value categories, temporaries, move-only results, short circuit, nested
// calls, exceptions through a wrapped call, virtual calls, function
// pointers, lambdas and recursion: the instrumented program must print the
// same and exit the same. The tally (F function probes, S call sites):
//   run F1, S34 (counted beside each line; overloaded operator* is not a call site)
//   fib(4): 9 calls F9; the 4 calls with n >= 2 make 2 calls each: S8
//   Shape::area F1; pick F2 and S1 (side(1) runs only for pick(true))
//   enter = exit = 13; site_begin = site_end = 43: thrower() leaves by exception, and
//   its site ends as it unwinds.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

struct Shape {
  virtual ~Shape() {}
  virtual int area() const;
};
int Shape::area() const { return 12; }

static int counter = 0;
int &slot() { return counter; }
const std::string &same(const std::string &s) { return s; }
std::unique_ptr<int> make(int v) { return std::unique_ptr<int>(new int(v)); }
int side(int v) { std::printf("side %d\n", v); return v; }
void thrower() { throw std::runtime_error("boom"); }
int twice(int x) { return 2 * x; }

int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int pick(bool b) { return b ? side(1) : 0; }

int run() {
  int total = 0;
  slot() += 5;                                   // 1 (lvalue result is assigned through)
  total += slot();                               // 1
  total += static_cast<int>(same(std::string("abc")).size());  // 2: same() and size(); the temporary lives on
  std::unique_ptr<int> p = make(7);              // 1 (move-only prvalue)
  total += *p;
  std::unique_ptr<int> q = std::move(p);         // 1 (std::move: an xvalue)
  total += *q;
  if (side(0) && side(2)) total += 100;          // 1: side(2) must not run
  if (side(3) || side(4)) total += 1;            // 1: side(4) must not run
  total += twice(twice(side(5)));                // 3 (nested)
  try {
    thrower();                                   // 1, ends by exception
  } catch (const std::exception &e) {
    std::printf("caught %s\n", e.what());        // 2: what() and printf
  }
  Shape s;
  Shape *sp = &s;
  total += sp->area();                           // 1 (virtual)
  int (*fp)(int) = twice;
  total += fp(3);                                // 1 (through a pointer)
  auto lam = [&](int v) { return side(v) + 1; }; // side(v): 1 per lambda call
  total += lam(6) + lam(7);                      // 2 + 2 inside the lambda
  total += fib(4);                               // 1
  total += pick(true) + pick(false);             // 2
  for (int i = 0; i < 10; ++i) total += twice(i);  // 10
  std::printf("total %d\n", total);              // 1
  return total;
}

int main() {
  int t = run();
  return t % 7;
}
