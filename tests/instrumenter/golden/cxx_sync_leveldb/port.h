// A stand-in for LevelDB's port/port_stdcxx.h and util/mutexlock.h.
#include <condition_variable>
#include <mutex>

namespace leveldb {
namespace port {
class CondVar;
class Mutex {
 public:
  void Lock() { mu_.lock(); }
  void Unlock() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};
// Its wait is wrapped here, naming the mutex it gives up and takes back
// (the calls of CondVar::Wait could not: mu_ is private).
class CondVar {
 public:
  explicit CondVar(Mutex *mu) : mu_(mu) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
  Mutex *const mu_;
};
}  // namespace port
class MutexLock {
 public:
  explicit MutexLock(port::Mutex *mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() { mu_->Unlock(); }

 private:
  port::Mutex *mu_;
};
}  // namespace leveldb
