// Strict two-phase row locks with shared/exclusive modes and two grant
// policies.
//
// One mutex guards the whole lock table (like InnoDB's lock_sys mutex): simple,
// and its contention is itself something the profiler should be able to see.
// Each waiting request has its own condition variable, so a release wakes
// exactly the requests it grants.
//
// Grant rule, both policies: the waiting requests on a row are put in policy
// order — arrival order for FCFS, eldest transaction first for VATS (paper 000
// Section 5; age = the transaction's start time, ties by arrival). A waiting
// request is granted iff it is compatible with every granted request and with
// every request still waiting ahead of it in that order. So compatible requests
// are granted together (batched), and a request never overtakes a conflicting
// one that the policy puts ahead of it. Requests of the same transaction never
// conflict with each other (an S holder may upgrade to X).
//
// Deadlocks are detected, not timed out: when a request must wait, the
// wait-for graph is searched from its transaction. Every new wait-for edge
// points to or from the new request (a VATS reorder only puts the newcomer
// ahead of others), so checking at request time finds every cycle. The victim
// is the youngest transaction of the cycle (latest age, then highest id): its
// request returns LockResult::Deadlock and the caller aborts it. Because a
// retried transaction keeps its age, the eldest is never the victim and every
// transaction eventually commits (no livelock of repeated aborts). A wait timeout stays as a safety net and is counted
// separately: a timeout with no deadlock would mean a lost wake-up.
#ifndef MINIDB_LOCK_MANAGER_H
#define MINIDB_LOCK_MANAGER_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace minidb {

enum class LockMode : uint8_t { Shared, Exclusive };
enum class GrantPolicy { FCFS, VATS };
enum class LockResult { Granted, Deadlock, Timeout };

const char *grant_policy_name(GrantPolicy p);

struct LockStats {
  uint64_t requests = 0;
  uint64_t immediate_grants = 0;
  uint64_t waits = 0;
  uint64_t deadlocks = 0;
  uint64_t timeouts = 0;
};

struct LockManagerOptions {
  GrantPolicy policy = GrantPolicy::FCFS;
  std::chrono::milliseconds wait_timeout{5000};
};

class LockManager {
 public:
  explicit LockManager(LockManagerOptions options);
  LockManager(const LockManager &) = delete;
  LockManager &operator=(const LockManager &) = delete;

  // Blocks until `txn` holds `row` in `mode` (or a stronger mode), or returns
  // Deadlock/Timeout, in which case the caller must abort the transaction and
  // call release_all. `age_ns` orders transactions for VATS: smaller = elder.
  // If `waited_ns` is given, the time spent blocked is added to it (the
  // bench's own measure of lock wait, to check the profiler against).
  // Requires: txn != 0; one thread at a time acts for a given txn.
  LockResult acquire(uint64_t txn, int64_t age_ns, uint64_t row, LockMode mode,
                     int64_t *waited_ns = nullptr);

  // Releases every lock `txn` holds (commit or abort) and grants waiters.
  void release_all(uint64_t txn);

  LockStats stats() const;
  GrantPolicy policy() const { return options_.policy; }
  // Test hook: how many requests on `row` are waiting (not granted).
  size_t waiting_count(uint64_t row) const;

 private:
  struct Request {
    uint64_t txn;
    int64_t age_ns;
    uint64_t seq;  // arrival order
    LockMode mode;
    bool granted = false;
    bool victim = false;  // chosen to break a deadlock: no longer competes
    std::condition_variable cv;
  };
  struct RowQueue {
    std::vector<std::unique_ptr<Request>> requests;  // arrival order
  };

  LockResult wait_for_grant(std::unique_lock<std::mutex> &lock, Request *req, uint64_t row);
  void grant_waiters(RowQueue &queue);
  std::vector<Request *> waiters_in_policy_order(const RowQueue &queue) const;
  void blockers_of(const Request *req, const RowQueue &queue, std::vector<uint64_t> *out) const;
  // Searches for a cycle through `txn`; returns the victim's txn or 0.
  uint64_t find_deadlock_victim(uint64_t txn) const;
  void remove_request(uint64_t row, Request *req);

  LockManagerOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, RowQueue> table_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> rows_of_txn_;
  struct Waiting {
    uint64_t row;
    Request *req;
  };
  std::unordered_map<uint64_t, Waiting> waiting_;  // txn -> the request it waits on
  uint64_t next_seq_ = 0;
  LockStats stats_;
};

}  // namespace minidb

#endif
