// Call-site shapes in C++: references, xvalues, class prvalues, void,
// noreturn, virtual calls, calls through pointers, operators, unevaluated
// and constant contexts, member-initializer lists.
namespace app {

struct Buf {
  Buf() {}
  Buf(const Buf &) {}
  int size() const { return 3; }
};

template <class T> T &&move_it(T &t) { return static_cast<T &&>(t); }
[[noreturn]] void fail(const char *why);
int &slot(int i);
Buf make_buf();
constexpr int twice(int x) { return 2 * x; }

struct Backend {
  virtual ~Backend() {}
  virtual int get(int key) = 0;
};

struct Adder {
  int operator()(int a, int b) const { return a + b; }
  bool operator==(const Adder &) const { return true; }
};

class Server {
 public:
  explicit Server(Backend *b);
  int handle(int key);

 private:
  Backend *backend_;
  int cached_;
  int (*log_)(int);
};

Server::Server(Backend *b) : backend_(b), cached_(twice(b->get(0))), log_(nullptr) {}

int Server::handle(int key) {
  int &s = slot(key);
  Buf b = make_buf();
  Buf m = move_it(b);
  constexpr int k = twice(4);
  static_assert(twice(2) == 4, "constant");
  decltype(make_buf()) unused;
  bool nothrow = noexcept(make_buf());
  Adder add;
  int v = add(s, backend_->get(key)) + m.size() + unused.size();
  if (add == add && log_) log_(v);
  if (key < 0) fail("negative");
  return v + k + (nothrow ? 1 : 0);
}

}  // namespace app
