// A stand-in for LevelDB's port/port_stdcxx.h and util/mutexlock.h.
namespace leveldb {
namespace port {
class Mutex {
 public:
  void Lock();
  void Unlock();
};
class CondVar {
 public:
  explicit CondVar(Mutex *mu) : mu_(mu) {}
  void Wait();
  void Signal();
  void SignalAll();

 private:
  Mutex *mu_;
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
