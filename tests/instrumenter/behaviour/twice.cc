// behaviour: std=-std=c++11 std=-std=c++17 flags=-O1 flags=-O2,-fsanitize=address function=Counter::Counter function=Counter::~Counter function=Counter::add function=Counter::get function=Counter::made function=make_box function=hide function=pick function=where function=fact function=twice_of function=thrower function=greet function=run
// expect: enter=30 exit=30 site_begin=54 site_end=54 twice=14 outlined=12 switched=13
// A C++ body written twice (a build ahead's, edit_plan.cc's two_versions)
// keeps its instrumented copy in a lambda the compiler keeps out of line,
// returning what the function returns, spelled fully qualified: a
// constructor's and a destructor's body, a reference to *this, a static
// member, a move-only result returned by name and one made in place, a type
// of an anonymous namespace, a function pointer, a const member, recursion,
// an exception through the lambda, a braced return, a static local (one per
// copy). Not outlined, and still written twice: a template's body (its
// return type depends on the template) and a body that says __func__ (a
// lambda's would name operator()). Built with clang and gcc, at -O1 and at
// -O2 under ASan. The tally (F function probes, S call sites):
//   run F1, S28: add add noise, get get made made, make_box x2 hide,
//     pick x2 and the two calls through what they return, printf where,
//     fact twice_of x2, thrower x2, printf what, printf greet x2 c_str x2
//   Counter(3), Counter(4) F2 S4 (add, noise); ~Counter x2 F2 S4 (printf, noise)
//   add x4 (two from the constructors) F4; get x2 F2 S2; made x2 F2 S2
//   make_box x2 F2 S2; hide F1 S1; pick x2 F2 S1 (the lambda's conversion
//   to a pointer); where F1 S2; fact(5) F5 S4; twice_of x2 F2 S2;
//   thrower x2 F2 S2 (the throw's to_string and noise); greet x2 F2
//   = F30 S54.
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

static int noise(int v) { return v ^ 1; }

class Counter {
 public:
  explicit Counter(int start);
  ~Counter();
  Counter &add(int n);
  int get() const;
  static int made();

 private:
  int n_;
  static int made_;
};

int Counter::made_ = 0;

Counter::Counter(int start) : n_(0) {
  ++made_;
  add(noise(start));
}

Counter::~Counter() { std::printf("~Counter %d\n", noise(n_)); }

Counter &Counter::add(int n) {
  n_ += n;
  return *this;
}

int Counter::get() const { return noise(n_); }

int Counter::made() {
  static int asked;  // one per copy: a process runs one copy
  ++asked;
  return made_ * 10 + noise(asked);
}

std::unique_ptr<int> make_box(int v) {
  if (v < 0) return std::unique_ptr<int>(new int(noise(v)));
  std::unique_ptr<int> p(new int(v));
  *p += noise(1);
  return p;
}

namespace {
struct Hidden {
  int v;
};
}  // namespace

Hidden hide(int v) { return Hidden{noise(v)}; }

typedef int (*Op)(int);
Op pick(bool odd) {
  if (odd) return noise;
  return [](int v) { return v * 2; };
}

const char *where() {
  std::printf("in %s\n", __func__);
  return std::strchr(__func__, 'w');
}

int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }

template <class T>
T twice_of(T v) {
  return static_cast<T>(noise(static_cast<int>(v)) * 2);
}

int thrower(int v) {
  if (v > 2) throw std::runtime_error("too big: " + std::to_string(noise(v)));
  return v;
}

std::string greet(const char *who) {
  if (!who) return {};
  return std::string("hello ") + who;
}

int run() {
  int total = 0;
  {
    Counter a(3), b(4);
    a.add(2).add(noise(5));
    total += a.get() + b.get() + Counter::made() + Counter::made();
  }
  total += *make_box(5) + *make_box(-2) + hide(7).v;
  total += pick(true)(3) + pick(false)(3);
  std::printf("where %s\n", where());
  total += fact(5) + twice_of(3) + static_cast<int>(twice_of(2.5));
  try {
    total += thrower(1);
    total += thrower(9);
  } catch (const std::runtime_error &e) {
    std::printf("caught %s\n", e.what());
  }
  std::printf("%s|%s|\n", greet("you").c_str(), greet(nullptr).c_str());
  return total;
}

int main() {
  std::printf("total %d\n", run());
  return 0;
}
