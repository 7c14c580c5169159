#include "port.h"

namespace leveldb {
struct Writer {
  explicit Writer(port::Mutex *mu) : cv(mu) {}
  port::CondVar cv;
};

class DBImpl {
 public:
  DBImpl() : bg_cv_(&mutex_) {}
  int Write(int batch);
  int Get(int key);

 private:
  int MakeRoomForWrite(bool force);
  Writer *&front() { return writers_[0]; }
  port::CondVar *background() { return &bg_cv_; }
  port::Mutex mutex_;
  Writer *writers_[4] = {};
  port::CondVar bg_cv_;
  int queued_ = 0;
};

int DBImpl::MakeRoomForWrite(bool force) {
  while (queued_ > 4 && !force) bg_cv_.Wait();
  return 0;
}

int DBImpl::Write(int batch) {
  MutexLock l(&mutex_);
  queued_ += batch;
  int status = MakeRoomForWrite(batch == 0);
  mutex_.Unlock();
  queued_ -= batch;
  mutex_.Lock();
  bg_cv_.SignalAll();
  // The hand-off to the next writer: a receiver with side effects is
  // wrapped alone, evaluated once.
  if (front()) front()->cv.Signal();
  // Through a pointer with side effects: the pointer wrapped alone.
  background()->SignalAll();
  return status;
}

int DBImpl::Get(int key) {
  MutexLock l(&mutex_);
  return key + queued_;
}
}  // namespace leveldb
