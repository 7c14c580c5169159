// behaviour: std=-std=c++11 std=-std=c++17 flags=-O0 flags=-O2,-fsanitize=address function=run function=consume function=check function=Status::operator=
// expect: enter=4 exit=4 site_begin=20 site_end=20
// A call site's wrapping must not change the call's value category or the
// identity of the object it makes: no copy, no move, no destruction of a
// temporary that was not there before, and an exception through a wrapped
// call ends its site. Built with clang and gcc, at -O0 and at -O2 under ASan:
//   a class that owns a buffer and has no copy constructor written (a copy
//   frees it twice), a type that can be neither copied nor moved (C++17:
//   returned by value all the same), lvalue and xvalue results, auto&&,
//   a warn_unused_result call, a throw caught in the same function, a
//   value that refers to a temporary of the call's arguments, and an
//   implicit conversion of an object that cannot be copied, and a class
//   made by a call whose argument is a temporary (kept out of a closure,
//   it takes the scope form: the value form's helper copied it), and such
//   a call's result assigned by an instrumented operator=, entered inside
//   the scope form's site after its callee returned (LevelDB's
//   `s = log_->AddRecord(Slice(...))`): the analyzer counts it the caller's.
// The tally: run F1 and 18 call sites, consume F1 and 1 site (strlen),
//   check F1 and 1 site (size), Status::operator= F1 (an operator is not a call site);
//   site_end = site_begin: the throw's site ends too.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

struct Buf {  // the rule of three broken, as older server code does
  char *p;
  const Buf *self;
  explicit Buf(int n) : p(static_cast<char *>(std::malloc(n))), self(this) { std::memset(p, 'x', n - 1); p[n - 1] = 0; }
  ~Buf() { std::free(p); }
};
Buf make(int n) { return Buf(n); }
Buf sized(const std::string &s) { return Buf(static_cast<int>(s.size()) + 1); }

#if __cplusplus >= 201703L
struct Pinned {  // neither copied nor moved: C++17 returns it by value all the same
  int v;
  const Pinned *self;
  explicit Pinned(int x) : v(x), self(this) {}
  Pinned(const Pinned &) = delete;
  Pinned(Pinned &&) = delete;
};
Pinned pinned(int x) { return Pinned(x); }
#else
Buf pinned(int x) { return Buf(x); }
#endif

struct Flag {  // neither copied nor moved, read through its conversion
  bool v;
  explicit Flag(bool b) : v(b) {}
  Flag(const Flag &) = delete;
  operator bool() const { return v; }
};
static Flag ready(true);

static int g = 1;
int &slot() { return g; }
int &&moved() { return static_cast<int &&>(g); }
__attribute__((warn_unused_result)) int checked(int v) { return v + 1; }
void fail(int v) {
  if (v > 0) throw std::runtime_error("fail");
}
int consume(const Buf &b) { return static_cast<int>(std::strlen(b.p) > 0); }
struct View {  // refers to a string it does not own, as string_view does
  const char *p;
};
View view(const std::string &s) { return View{s.c_str()}; }
std::size_t length(View v) { return std::strlen(v.p); }
struct Status {  // LevelDB's: assigned from a call's result
  int code;
  explicit Status(int c = 0) : code(c) {}
  Status(Status &&o) noexcept : code(o.code) {}
  Status &operator=(Status &&o) noexcept;
};
Status &Status::operator=(Status &&o) noexcept {
  code = o.code;
  return *this;
}
Status check(const std::string &s) { return Status(static_cast<int>(s.size())); }

int run() {
  int total = 0;
  Buf a = make(8);                                  // 1: a prvalue is the variable itself
  total += a.self == &a;
  total += consume(make(16));                       // 2: make and consume
  auto &&r = make(4);                               // 1: bound, its life extended
  total += r.self == &r;
  const auto &pin = pinned(3);                      // 1
  total += pin.self == &pin;
  slot() += 1;                                      // 1: an lvalue assigned through
  int &s = slot();                                  // 1
  total += &s == &g;
  auto &&m = moved();                               // 1: an xvalue
  total += &m == &g;
  int &&x = std::move(s);                           // 1
  total += &x == &g;
  total += checked(1);                              // 1
  if (ready) total += 1;                            // 1: an implicit conversion is a call
  total += length(view(std::string("abcdef"))) == 6;  // 2: the string lives to the statement's end
  Buf t = sized({'a', 'b', 'c'});                   // 1: an argument temporary, a class made
  total += t.self == &t;
  Status st;
  st = check(std::string("abc"));                   // 1: check, then operator= inside its site
  total += st.code == 3;
  try {
    fail(1);                                        // 1: leaves by exception, its site ends
  } catch (const std::exception &e) {
    total += 1;
  }
  std::printf("total %d g %d\n", total, g);         // 1
  std::fflush(stdout);                              // 1
  return total;
}

int main() { return run() == 14 ? 0 : 1; }
