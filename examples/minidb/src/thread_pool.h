// A fixed pool of worker threads draining one FIFO task queue.
//
// Annotated for vprof: the producer marks vprof_task_enqueue just before the
// push and the worker vprof_task_dequeue just after the pop (a created-by edge;
// the time between is the interval's queue wait), then the worker joins the
// task's interval while it runs it.
#ifndef MINIDB_THREAD_POOL_H
#define MINIDB_THREAD_POOL_H

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace minidb {

class Task {
 public:
  virtual ~Task() = default;
  // Runs on a worker. May resubmit itself; must not touch `this` after
  // handing itself to another thread (resubmit or completion signal).
  virtual void run() = 0;
  uint64_t interval_id = 0;  // the interval this task works for
};

class ThreadPool {
 public:
  explicit ThreadPool(size_t workers);
  // Finishes the queued tasks, then joins the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  void submit(Task *task);

 private:
  void worker_loop();
  Task *dequeue();  // null when stopping and empty

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task *> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace minidb

#endif
