// Worker threads that live as long as an analysis: the merge and the walk
// hand out work once per epoch, hundreds of times a second, and starting a
// thread per hand-off cost more than the work it carried (so epochs had to
// be large, and large epochs fall out of cache).
//
// run(f) calls f(w) for w in [0, size()), w = 0 on the calling thread, and
// returns when every call has returned. Idle workers spin briefly for the
// next hand-off (epochs follow each other closely), then sleep.
#ifndef VPROF_ANALYZER_UTIL_WORKERS_H
#define VPROF_ANALYZER_UTIL_WORKERS_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vprof::analyzer {

class Workers {
 public:
  explicit Workers(unsigned n);  // n >= 1 (0 counts as 1): n - 1 threads besides the caller
  ~Workers();
  Workers(const Workers &) = delete;
  Workers &operator=(const Workers &) = delete;

  unsigned size() const { return n_; }
  void run(const std::function<void(unsigned)> &f);

 private:
  void loop(unsigned w);

  unsigned n_;
  std::vector<std::thread> threads_;
  const std::function<void(unsigned)> *job_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // counts run() calls: a change means new work
  std::atomic<unsigned> pending_{0};     // workers still inside the current job
  std::atomic<bool> stop_{false};
  std::mutex m_;
  std::condition_variable wake_;
};

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_WORKERS_H
