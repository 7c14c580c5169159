#include "analyzer/util/workers.h"

#include <chrono>

namespace vprof::analyzer {
namespace {

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// How long an idle worker spins before it sleeps: longer than the serial
// part of an epoch (tens of microseconds), far shorter than a human notices.
constexpr auto kSpin = std::chrono::microseconds(200);

}  // namespace

Workers::Workers(unsigned n) : n_(n == 0 ? 1 : n) {
  for (unsigned w = 1; w < n_; ++w) threads_.emplace_back([this, w] { loop(w); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto &t : threads_) t.join();
}

void Workers::run(const std::function<void(unsigned)> &f) {
  if (n_ == 1) {
    f(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    job_ = &f;
    pending_.store(n_ - 1);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  f(0);
  // A worker may not have run yet: a thread just started shares its
  // parent's core until the scheduler moves it, which can take milliseconds
  // while the parent spins here. Spinning briefly, then yielding, lets it run.
  for (unsigned spins = 0; pending_.load() != 0; ++spins) {
    if (spins < 4096) relax();
    else std::this_thread::yield();
  }
}

void Workers::loop(unsigned w) {
  uint64_t seen = 0;
  while (true) {
    // Spin for the next generation, then sleep on the condition variable.
    auto until = std::chrono::steady_clock::now() + kSpin;
    int polls = 0;
    while (generation_.load() == seen && !stop_.load()) {
      relax();
      if (++polls % 64 == 0 && std::chrono::steady_clock::now() > until) {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
        break;
      }
    }
    if (stop_.load()) return;
    const std::function<void(unsigned)> *job;
    {
      std::lock_guard<std::mutex> lock(m_);
      job = job_;
      seen = generation_.load();
    }
    (*job)(w);
    pending_.fetch_sub(1);
  }
}

}  // namespace vprof::analyzer
