// InnoDB's futex latch (storage/innobase/include/srw_lock.h, trimmed): the
// calls of wait() and wake() are in a class template's own code, where clang
// gives a call of a member of the current instantiation as a CallExpr of a
// MemberExpr; and the redo log's group commit semaphore (log0sync.cc).
#include <atomic>
#include <cstdint>
template<bool spinloop> class ssux_lock_impl;
template<bool spinloop> class srw_mutex_impl {
  friend ssux_lock_impl<spinloop>;
  std::atomic<uint32_t> lock{0};
  void wait(uint32_t lk) noexcept;
  void wake() noexcept;
  void wake_all() noexcept {}
  void wait_and_lock() noexcept;
public:
  bool wr_lock_try() noexcept { uint32_t lk = 0; return lock.compare_exchange_strong(lk, 3); }
  void wr_lock() noexcept { if (!wr_lock_try()) wait_and_lock(); }
  void wr_unlock() noexcept { if (lock.fetch_sub(3) != 3) wake(); }
};
template<bool spinloop> void srw_mutex_impl<spinloop>::wait(uint32_t lk) noexcept { (void)lk; }
template<bool spinloop> void srw_mutex_impl<spinloop>::wake() noexcept {}
template<bool spinloop> void srw_mutex_impl<spinloop>::wait_and_lock() noexcept {
  for (uint32_t lk = lock.fetch_add(2);; lk = lock.load()) {
    if (!(lk & 1) && !(lock.fetch_or(1) & 1)) return;
    wait(lk);
  }
}
template class srw_mutex_impl<true>;

struct binary_semaphore { void wait(); void wake(); };
struct group_commit_waiter_t { binary_semaphore m_sema; group_commit_waiter_t *m_next; };
static thread_local group_commit_waiter_t thread_local_waiter;
void park() { thread_local_waiter.m_sema.wait(); }
void unpark(group_commit_waiter_t *cur) { cur->m_sema.wake(); }

// The shared-exclusive latch: its reader waits on its writer mutex, whose
// type depends on the template's parameter (no callee until instantiation).
template<bool spinloop> class ssux_lock_impl {
  srw_mutex_impl<spinloop> writer;
  srw_mutex_impl<spinloop> *other;
  std::atomic<uint32_t> readers{0};
public:
  void rd_wait() noexcept {
    uint32_t wl = readers.load();
    writer.wait(wl);
    other->wake_all();
  }
};
template class ssux_lock_impl<true>;
