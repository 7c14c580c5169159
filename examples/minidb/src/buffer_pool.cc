#include "buffer_pool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "fault.h"

namespace minidb {
namespace {

struct Deferred {
  uint64_t pool_uid;
  size_t frame;
  uint64_t page_id;
};
// The lazy-LRU backlog is per thread (paper 000 Section 6.1): no lock needed.
thread_local std::vector<Deferred> t_backlog;
std::atomic<uint64_t> g_next_pool_uid{1};

}  // namespace

const char *lru_policy_name(LruPolicy p) { return p == LruPolicy::Lazy ? "lazy" : "eager"; }

std::unique_ptr<BufferPool> BufferPool::open(const BufferPoolOptions &options, std::string *err) {
  if (options.frames < 2 || options.page_size < sizeof(int64_t)) {
    *err = "buffer pool needs at least 2 frames and 8-byte pages";
    return nullptr;
  }
  int fd = ::open(options.data_file.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) {
    *err = "cannot open data file " + options.data_file + ": " + std::strerror(errno);
    return nullptr;
  }
  off_t want = static_cast<off_t>(options.num_pages * options.page_size);
  struct stat st;
  if (fstat(fd, &st) != 0 || (st.st_size < want && ftruncate(fd, want) != 0)) {
    *err = "cannot size data file " + options.data_file + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<BufferPool>(new BufferPool(options, fd));
}

BufferPool::BufferPool(const BufferPoolOptions &options, int fd)
    : options_(options), fd_(fd), uid_(g_next_pool_uid.fetch_add(1)) {
  for (size_t i = 0; i < options_.frames; ++i) {
    frames_.push_back(std::make_unique<Frame>());
    frames_.back()->data.assign(options_.page_size, 0);
    lru_.push_back(i);  // free frames sit at the tail, used first
    frames_.back()->lru_pos = std::prev(lru_.end());
  }
}

BufferPool::~BufferPool() {
  flush_all();
  ::close(fd_);
}

BufferPool::PageRef::~PageRef() {
  if (frame_) frame_->pins.fetch_sub(1, std::memory_order_release);
}

int64_t BufferPool::PageRef::read_slot(size_t slot) const {
  std::lock_guard<std::mutex> g(frame_->latch);
  int64_t v;
  std::memcpy(&v, frame_->data.data() + slot * sizeof(int64_t), sizeof v);
  return v;
}

void BufferPool::PageRef::write_slot(size_t slot, int64_t value) {
  std::lock_guard<std::mutex> g(frame_->latch);
  std::memcpy(frame_->data.data() + slot * sizeof(int64_t), &value, sizeof value);
  frame_->dirty = true;
}

BufferPool::PageRef BufferPool::fetch(uint64_t page_id) {
  inject_delay(InjectPoint::PoolFetch);
  for (;;) {
    std::unique_lock<std::mutex> table_lock(table_mutex_);
    auto it = table_.find(page_id);
    if (it != table_.end()) {
      size_t idx = it->second;
      frames_[idx]->pins.fetch_add(1, std::memory_order_acquire);
      table_lock.unlock();
      hits_.fetch_add(1, std::memory_order_relaxed);
      lru_touch(idx, page_id);
      return PageRef(frames_[idx].get());
    }
    std::unique_lock<std::mutex> lru_lock(lru_mutex_);
    size_t idx = pick_victim_locked();
    if (idx == frames_.size()) {
      // Every frame is pinned: let the pinning threads finish and retry.
      lru_lock.unlock();
      table_lock.unlock();
      std::this_thread::yield();
      continue;
    }
    Frame &f = *frames_[idx];
    bool had_page = f.valid;
    uint64_t old_page = f.page_id;
    if (had_page) table_.erase(old_page);
    f.page_id = page_id;
    f.valid = true;
    f.pins.store(1, std::memory_order_relaxed);
    table_[page_id] = idx;
    move_to_front_locked(idx);
    lru_lock.unlock();
    // The frame was unpinned, so nobody holds its latch; holding it through
    // the load makes hits on the new page wait for the data.
    std::unique_lock<std::mutex> latch(f.latch);
    if (had_page && f.dirty) {
      write_page(old_page, f.data.data());
      writebacks_.fetch_add(1, std::memory_order_relaxed);
    }
    f.dirty = false;
    table_lock.unlock();
    misses_.fetch_add(1, std::memory_order_relaxed);
    read_page(page_id, f.data.data());
    return PageRef(&f);
  }
}

size_t BufferPool::pick_victim_locked() {
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    if (frames_[*it]->pins.load(std::memory_order_acquire) == 0) return *it;
  }
  return frames_.size();
}

void BufferPool::lru_touch(size_t frame_index, uint64_t page_id) {
  inject_delay(InjectPoint::PoolLruTouch);
  if (options_.lru == LruPolicy::Eager) {
    std::lock_guard<std::mutex> g(lru_mutex_);
    move_to_front_locked(frame_index);
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + options_.lazy_try_budget;
  while (!lru_mutex_.try_lock()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      if (t_backlog.size() >= options_.lazy_backlog_limit) {
        t_backlog.erase(t_backlog.begin());
        lazy_dropped_.fetch_add(1, std::memory_order_relaxed);
      }
      t_backlog.push_back(Deferred{uid_, frame_index, page_id});
      lazy_deferred_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::this_thread::yield();
  }
  // Plain unlock rather than an adopting guard: the instrumenter wraps
  // try_lock/unlock call sites, and nothing between them can throw.
  replay_backlog_locked();
  move_to_front_locked(frame_index);
  lru_mutex_.unlock();
}

void BufferPool::replay_backlog_locked() {
  // Oldest first, so the most recent deferred touch ends nearest the head.
  size_t kept = 0;
  for (const Deferred &d : t_backlog) {
    if (d.pool_uid != uid_) {
      t_backlog[kept++] = d;
      continue;
    }
    const Frame &f = *frames_[d.frame];
    if (f.valid && f.page_id == d.page_id) {
      move_to_front_locked(d.frame);
      lazy_replayed_.fetch_add(1, std::memory_order_relaxed);
    } else {
      lazy_stale_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  t_backlog.resize(kept);
}

void BufferPool::move_to_front_locked(size_t frame_index) {
  Frame &f = *frames_[frame_index];
  lru_.splice(lru_.begin(), lru_, f.lru_pos);
}

void BufferPool::read_page(uint64_t page_id, char *buf) {
  inject_delay(InjectPoint::PoolReadPage);
  off_t off = static_cast<off_t>(page_id * options_.page_size);
  size_t done = 0;
  while (done < options_.page_size) {
    ssize_t n = ::pread(fd_, buf + done, options_.page_size - done, off + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Past the end of the file (cannot happen after open()): a zero page.
      std::memset(buf + done, 0, options_.page_size - done);
      return;
    }
    done += static_cast<size_t>(n);
  }
}

void BufferPool::write_page(uint64_t page_id, const char *buf) {
  inject_delay(InjectPoint::PoolWritePage);
  off_t off = static_cast<off_t>(page_id * options_.page_size);
  size_t done = 0;
  while (done < options_.page_size) {
    ssize_t n = ::pwrite(fd_, buf + done, options_.page_size - done, off + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // data pages are recoverable from the log; see docs
    done += static_cast<size_t>(n);
  }
}

void BufferPool::flush_all() {
  std::lock_guard<std::mutex> table_lock(table_mutex_);
  for (auto &fp : frames_) {
    std::lock_guard<std::mutex> latch(fp->latch);
    if (fp->valid && fp->dirty) {
      write_page(fp->page_id, fp->data.data());
      fp->dirty = false;
      writebacks_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

BufferPoolStats BufferPool::stats() const {
  BufferPoolStats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.writebacks = writebacks_.load();
  s.lazy_deferred = lazy_deferred_.load();
  s.lazy_replayed = lazy_replayed_.load();
  s.lazy_stale = lazy_stale_.load();
  s.lazy_dropped = lazy_dropped_.load();
  return s;
}

std::vector<uint64_t> BufferPool::lru_order() const {
  std::lock_guard<std::mutex> table_lock(table_mutex_);
  std::lock_guard<std::mutex> lru_lock(lru_mutex_);
  std::vector<uint64_t> out;
  for (size_t idx : lru_)
    if (frames_[idx]->valid) out.push_back(frames_[idx]->page_id);
  return out;
}

size_t BufferPool::my_backlog_size() const {
  size_t n = 0;
  for (const Deferred &d : t_backlog) n += d.pool_uid == uid_ ? 1 : 0;
  return n;
}

}  // namespace minidb
