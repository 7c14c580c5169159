// behaviour: std=-std=c++20 flags=-O0 flags=-O1,-fsanitize=address function=run function=count_to
// expect: enter=1 exit=1 site_begin=11 site_end=11
// A coroutine is left alone (a note says so), but its caller's call site
// is wrapped: the generator the call returns must be the caller's own
// object, not a copy whose temporary's destructor frees the coroutine's
// frame before it is resumed. The tally: run F1 and its call sites count_to 1,
// resume 3 (the third finds it done), value 4, std::printf 3; count_to F0.
#include <coroutine>
#include <cstdio>
#include <utility>

struct Gen {
  struct promise_type {
    int value = 0;
    Gen get_return_object() { return Gen(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(int v) noexcept {
      value = v;
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept {}
  };
  std::coroutine_handle<promise_type> h;
  explicit Gen(std::coroutine_handle<promise_type> c) : h(c) {}
  // No copy or move written (the implicit copy shares the frame): only
  // C++17's elision keeps one owner.
  ~Gen() {
    if (h) h.destroy();
  }
  bool resume() {
    h.resume();
    return !h.done();
  }
  int value() const { return h.promise().value; }
};

Gen count_to(int n) {
  for (int i = 1; i <= n; ++i) co_yield i;
}

int run() {
  Gen g = count_to(2);
  int sum = 0;
  while (g.resume()) {
    sum += g.value();
    std::printf("got %d\n", g.value());
  }
  std::printf("sum %d\n", sum);
  return sum;
}

int main() { return run() == 3 ? 0 : 1; }
