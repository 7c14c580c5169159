// behaviour: std=-std=c++11 std=-std=c++17 flags=-O1 flags=-O2,-fsanitize=address sync=stdcxx function=worker
// expect: enter=2 exit=2 site_begin=4 site_end=4 wait_begin=204 wait_end=204 release=207 wait_mutex=1
// std::lock_guard, std::unique_lock, std::mutex and condition_variable wrapped
// from the stdcxx pack, in every function of the file. Per worker: 100 scoped
// locks (1 wait_begin, 1 wait_end, 1 release each) + lock()/unlock() (also
// the worker's 2 call sites) = 101 each. main: a unique_lock (1, 1, 1), a
// condition wait in it that returns at once (1, 1, and 1 release: the mutex
// it gives up, named by its 1 wait_mutex),
// notify_all (1 release), and notify_one on a receiver with side effects
// (LevelDB's `writers_.front()->cv.Signal()`): 1 release, the receiver
// evaluated once (pick() is called once), and notify_one through a pointer
// with side effects: 1 release, the pointer evaluated once.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

std::mutex mu;
std::condition_variable cv;
int count = 0;
bool go = false;
int picks = 0;
std::condition_variable &pick() {
  ++picks;
  return cv;
}
std::condition_variable *pick_pointer() {
  ++picks;
  return &cv;
}

void worker(int n) {
  for (int i = 0; i < n; ++i) {
    std::lock_guard<std::mutex> g(mu);
    ++count;
  }
  mu.lock();
  ++count;
  mu.unlock();
}

int main() {
  std::thread a(worker, 100), b(worker, 100);
  a.join();
  b.join();
  std::printf("count %d\n", count);
  {
    std::unique_lock<std::mutex> lk(mu);
    go = true;
    cv.wait(lk, [] { return go; });
  }
  cv.notify_all();
  pick().notify_one();
  pick_pointer()->notify_one();
  std::printf("picks %d\n", picks);
  return count % 5;
}
