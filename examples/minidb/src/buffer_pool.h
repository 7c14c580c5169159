// A fixed set of page frames over a real data file, with an LRU list.
//
// Two mutexes, as in InnoDB: `table_mutex_` guards the page-id -> frame map and
// `lru_mutex_` guards the LRU list. Lock order: table_mutex_, then lru_mutex_,
// then a frame's latch (only for a free frame, which nobody else can hold).
// A frame's page id changes only with both mutexes held, so it may be read
// under either.
//
// LRU policies:
//  - Eager: every hit moves the page to the head under lru_mutex_.
//  - Lazy (paper 000 Section 6.1, "Lazy LRU Update"): a hit tries lru_mutex_
//    for a bounded time; if it cannot get it, the move is appended to a
//    per-thread backlog. The next time that thread gets lru_mutex_, it first
//    replays its backlog, skipping pages evicted meanwhile, then does its own
//    move. The backlog is bounded; overflow drops the oldest deferred move
//    (it is only a recency hint) and counts it.
//
// A miss picks the least recently used unpinned frame. A dirty victim is
// written back while table_mutex_ is held, so nobody can re-read the page from
// the file before the write lands (simple and correct; it puts the write-back
// on the critical path, which is a realistic variance source).
#ifndef MINIDB_BUFFER_POOL_H
#define MINIDB_BUFFER_POOL_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace minidb {

enum class LruPolicy { Eager, Lazy };
const char *lru_policy_name(LruPolicy p);

struct BufferPoolOptions {
  std::string data_file;
  uint64_t num_pages = 1024;  // size of the data file
  size_t frames = 128;
  size_t page_size = 4096;
  LruPolicy lru = LruPolicy::Eager;
  std::chrono::nanoseconds lazy_try_budget{10000};  // the paper's 0.01 ms
  size_t lazy_backlog_limit = 64;
};

struct BufferPoolStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t writebacks = 0;
  uint64_t lazy_deferred = 0;  // moves put on a backlog
  uint64_t lazy_replayed = 0;  // deferred moves applied later
  uint64_t lazy_stale = 0;     // deferred moves skipped: page was evicted
  uint64_t lazy_dropped = 0;   // deferred moves dropped on backlog overflow
};

class BufferPool {
  struct Frame;

 public:
  // A pinned page: the frame cannot be evicted while a PageRef lives. Slot
  // access takes the frame latch, which also waits for a page being loaded.
  class PageRef {
   public:
    PageRef(PageRef &&other) noexcept : frame_(other.frame_) { other.frame_ = nullptr; }
    PageRef(const PageRef &) = delete;
    PageRef &operator=(const PageRef &) = delete;
    ~PageRef();
    int64_t read_slot(size_t slot) const;
    void write_slot(size_t slot, int64_t value);

   private:
    friend class BufferPool;
    explicit PageRef(Frame *f) : frame_(f) {}
    Frame *frame_;
  };

  // Creates or opens the data file (zero-filled to num_pages). Returns null
  // and sets *err on failure. Requires frames >= 2.
  static std::unique_ptr<BufferPool> open(const BufferPoolOptions &options, std::string *err);
  ~BufferPool();

  // Pins page `page_id` (< num_pages), reading it from the file on a miss.
  PageRef fetch(uint64_t page_id);
  // Writes every dirty page back to the file.
  void flush_all();

  size_t slots_per_page() const { return options_.page_size / sizeof(int64_t); }
  BufferPoolStats stats() const;
  // Test hooks: resident page ids from most to least recently used, and the
  // number of deferred moves on the calling thread's backlog.
  std::vector<uint64_t> lru_order() const;
  size_t my_backlog_size() const;
  // Test hook: holds the LRU mutex so another thread's lazy touch must defer.
  std::unique_lock<std::mutex> hold_lru_mutex_for_testing() const {
    return std::unique_lock<std::mutex>(lru_mutex_);
  }

 private:
  struct Frame {
    std::mutex latch;  // guards data and dirty
    std::vector<char> data;
    bool dirty = false;
    uint64_t page_id = 0;  // written with table_mutex_ and lru_mutex_ held
    bool valid = false;
    std::atomic<int> pins{0};  // incremented only under table_mutex_
    std::list<size_t>::iterator lru_pos;
  };

  BufferPool(const BufferPoolOptions &options, int fd);
  void lru_touch(size_t frame_index, uint64_t page_id);
  void move_to_front_locked(size_t frame_index);
  void replay_backlog_locked();
  size_t pick_victim_locked();
  void read_page(uint64_t page_id, char *buf);
  void write_page(uint64_t page_id, const char *buf);

  BufferPoolOptions options_;
  int fd_;
  uint64_t uid_;  // tells this pool's deferred moves from another pool's
  std::vector<std::unique_ptr<Frame>> frames_;
  mutable std::mutex table_mutex_;
  std::unordered_map<uint64_t, size_t> table_;
  mutable std::mutex lru_mutex_;
  std::list<size_t> lru_;  // front = most recently used
  std::atomic<uint64_t> hits_{0}, misses_{0}, writebacks_{0};
  std::atomic<uint64_t> lazy_deferred_{0}, lazy_replayed_{0}, lazy_stale_{0}, lazy_dropped_{0};
};

}  // namespace minidb

#endif
