#include "thread_pool.h"

#include <vprof/vprof.h>

namespace minidb {

ThreadPool::ThreadPool(size_t workers) {
  if (workers == 0) workers = 1;
  for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto &t : workers_) t.join();
}

void ThreadPool::submit(Task *task) {
  vprof_task_enqueue(task);
  {
    std::lock_guard<std::mutex> g(mutex_);
    queue_.push_back(task);
  }
  cv_.notify_one();
}

Task *ThreadPool::dequeue() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (queue_.empty() && !stop_) cv_.wait(lock);
  if (queue_.empty()) return nullptr;
  Task *t = queue_.front();
  queue_.pop_front();
  return t;
}

void ThreadPool::worker_loop() {
  while (Task *task = dequeue()) {
    vprof_task_dequeue(task);
    vprof_interval_join(task->interval_id);
    task->run();  // may hand `task` to another thread: do not touch it after
    vprof_interval_leave();
  }
}

}  // namespace minidb
