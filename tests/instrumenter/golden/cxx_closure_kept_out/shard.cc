// Calls a closure would change, which keep the forms without one
// (forms.h): __func__ and a source_location-style default, a structured
// binding, a variable-length array, a temporary the value may refer to,
// clang's thread safety annotations (a lock taken, a guarded member), and a
// class that can be neither copied nor moved. The rest get the closure.
#include <cstring>
#include <string>
#include <utility>

#define CAPABILITY(x) __attribute__((capability(x)))
#define GUARDED_BY(x) __attribute__((guarded_by(x)))
#define ACQUIRE() __attribute__((acquire_capability()))
#define RELEASE() __attribute__((release_capability()))

namespace app {

class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE();
  void Unlock() RELEASE();
};

struct Pinned {
  explicit Pinned(int v) : v(v) {}
  Pinned(const Pinned &) = delete;
  int v;
};

void log_at(const char *where, const char *fn = __builtin_FUNCTION());
const char *first(const std::string &s);
std::pair<int, int> split(int v);
int sum(const int *v, int n);
int add(int a, int b);
Pinned pin(int v);

class Shard {
 public:
  int put(int key);
  int get(int key);

 private:
  Mutex mu_;
  int size_ GUARDED_BY(mu_) = 0;
};

int Shard::put(int key) {
  log_at(__func__);
  log_at("put");
  auto [a, b] = split(key);
  int vla[key > 0 ? key : 1];
  int s = sum(vla, 1) + add(a, b);
  const char *c = first(std::string("abc"));
  int n = static_cast<int>(std::strlen(first("abc")));
  mu_.Lock();
  s += add(size_, key);
  mu_.Unlock();
  const Pinned &p = pin(s);
  return s + n + (c != nullptr) + p.v;
}

int Shard::get(int key) { return add(key, 1); }

}  // namespace app
