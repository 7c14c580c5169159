#include "lock_manager.h"

#include <algorithm>
#include <unordered_set>

#include "clock.h"
#include "fault.h"

namespace minidb {
namespace {

bool conflicts(LockMode a, LockMode b) {
  return a == LockMode::Exclusive || b == LockMode::Exclusive;
}

}  // namespace

const char *grant_policy_name(GrantPolicy p) { return p == GrantPolicy::VATS ? "vats" : "fcfs"; }

LockManager::LockManager(LockManagerOptions options) : options_(options) {}

LockResult LockManager::acquire(uint64_t txn, int64_t age_ns, uint64_t row, LockMode mode,
                                int64_t *waited_ns) {
  inject_delay(InjectPoint::LockAcquire);
  std::unique_lock<std::mutex> lock(mutex_);
  ++stats_.requests;
  RowQueue &queue = table_[row];
  for (const auto &r : queue.requests) {
    // Re-entrant: a granted lock of equal or stronger mode already covers it.
    if (r->txn == txn && r->granted && (r->mode == LockMode::Exclusive || mode == LockMode::Shared)) {
      ++stats_.immediate_grants;
      return LockResult::Granted;
    }
  }
  queue.requests.push_back(std::make_unique<Request>());
  Request *req = queue.requests.back().get();
  req->txn = txn;
  req->age_ns = age_ns;
  req->seq = next_seq_++;
  req->mode = mode;
  std::vector<uint64_t> &rows = rows_of_txn_[txn];
  if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);

  grant_waiters(queue);
  if (req->granted) {
    ++stats_.immediate_grants;
    return LockResult::Granted;
  }
  ++stats_.waits;
  waiting_[txn] = Waiting{row, req};
  // One search per new request; the victim leaves the graph at once, so a
  // second cycle through the new request (rare) is caught by a second search.
  while (uint64_t victim = find_deadlock_victim(txn)) {
    ++stats_.deadlocks;
    Waiting v = waiting_.at(victim);
    waiting_.erase(victim);
    if (victim == txn) {
      remove_request(row, req);
      return LockResult::Deadlock;
    }
    // The victim's thread removes its own request when it wakes; until then
    // the flag keeps the request out of grants and out of the graph.
    v.req->victim = true;
    v.req->cv.notify_one();
    grant_waiters(table_.at(v.row));
  }
  int64_t start = waited_ns ? now_ns() : 0;
  LockResult result = wait_for_grant(lock, req, row);
  if (waited_ns) *waited_ns += now_ns() - start;
  return result;
}

LockResult LockManager::wait_for_grant(std::unique_lock<std::mutex> &lock, Request *req,
                                       uint64_t row) {
  inject_delay(InjectPoint::LockWaitForGrant);
  auto deadline = std::chrono::steady_clock::now() + options_.wait_timeout;
  // `granted` is only written under mutex_, so checking it before each wait
  // means a grant between the release and the wait is never lost.
  while (!req->granted) {
    if (req->victim) {
      remove_request(row, req);
      return LockResult::Deadlock;
    }
    if (req->cv.wait_until(lock, deadline) == std::cv_status::timeout && !req->granted &&
        !req->victim) {
      ++stats_.timeouts;
      waiting_.erase(req->txn);
      remove_request(row, req);
      return LockResult::Timeout;
    }
  }
  waiting_.erase(req->txn);
  return LockResult::Granted;
}

void LockManager::release_all(uint64_t txn) {
  inject_delay(InjectPoint::LockReleaseAll);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = rows_of_txn_.find(txn);
  if (it == rows_of_txn_.end()) return;
  for (uint64_t row : it->second) {
    auto qit = table_.find(row);
    if (qit == table_.end()) continue;
    auto &reqs = qit->second.requests;
    reqs.erase(std::remove_if(reqs.begin(), reqs.end(),
                              [txn](const std::unique_ptr<Request> &r) { return r->txn == txn; }),
               reqs.end());
    if (reqs.empty())
      table_.erase(qit);
    else
      grant_waiters(qit->second);
  }
  rows_of_txn_.erase(it);
}

std::vector<LockManager::Request *> LockManager::waiters_in_policy_order(
    const RowQueue &queue) const {
  std::vector<Request *> waiters;
  for (const auto &r : queue.requests)
    if (!r->granted && !r->victim) waiters.push_back(r.get());
  if (options_.policy == GrantPolicy::VATS) {
    std::stable_sort(waiters.begin(), waiters.end(), [](const Request *a, const Request *b) {
      if (a->age_ns != b->age_ns) return a->age_ns < b->age_ns;
      return a->seq < b->seq;
    });
  }  // FCFS: requests are already in arrival order.
  return waiters;
}

void LockManager::grant_waiters(RowQueue &queue) {
  std::vector<Request *> order = waiters_in_policy_order(queue);
  for (size_t i = 0; i < order.size(); ++i) {
    Request *w = order[i];
    bool ok = true;
    for (const auto &r : queue.requests) {
      if (r->granted && r->txn != w->txn && conflicts(r->mode, w->mode)) {
        ok = false;
        break;
      }
    }
    // Waiters ahead in policy order that are still waiting keep their place;
    // ones granted in this pass were already checked above as granted.
    for (size_t j = 0; ok && j < i; ++j) {
      const Request *a = order[j];
      if (!a->granted && a->txn != w->txn && conflicts(a->mode, w->mode)) ok = false;
    }
    if (ok) {
      w->granted = true;
      // Clear the wait-for entry now, not when the waiter wakes: until its
      // thread gets the mutex back, a stale entry would make the deadlock
      // search see a granted request as waiting and report false cycles.
      auto wt = waiting_.find(w->txn);
      if (wt != waiting_.end() && wt->second.req == w) waiting_.erase(wt);
      w->cv.notify_one();
    }
  }
}

void LockManager::blockers_of(const Request *req, const RowQueue &queue,
                              std::vector<uint64_t> *out) const {
  // Mirrors grant_waiters: blocked by conflicting granted requests and by
  // conflicting waiters ahead in policy order.
  for (const auto &r : queue.requests)
    if (r->granted && r->txn != req->txn && conflicts(r->mode, req->mode)) out->push_back(r->txn);
  for (const Request *a : waiters_in_policy_order(queue)) {
    if (a == req) break;
    if (a->txn != req->txn && conflicts(a->mode, req->mode)) out->push_back(a->txn);
  }
}

uint64_t LockManager::find_deadlock_victim(uint64_t txn) const {
  // Depth-first search over the wait-for graph, remembering each node's
  // parent so the cycle back to `txn` can be walked to pick the victim.
  std::unordered_map<uint64_t, uint64_t> parent{{txn, 0}};
  std::vector<uint64_t> stack{txn};
  std::vector<uint64_t> blockers;
  while (!stack.empty()) {
    uint64_t t = stack.back();
    stack.pop_back();
    auto w = waiting_.find(t);
    if (w == waiting_.end()) continue;  // running: it will release eventually
    blockers.clear();
    blockers_of(w->second.req, table_.at(w->second.row), &blockers);
    for (uint64_t b : blockers) {
      if (b == txn) {
        uint64_t victim = txn;
        const Request *vr = waiting_.at(txn).req;
        for (uint64_t c = t; c != txn; c = parent.at(c)) {
          const Request *cr = waiting_.at(c).req;
          if (cr->age_ns > vr->age_ns || (cr->age_ns == vr->age_ns && c > victim)) {
            victim = c;
            vr = cr;
          }
        }
        return victim;
      }
      if (parent.emplace(b, t).second) stack.push_back(b);
    }
  }
  return 0;
}

void LockManager::remove_request(uint64_t row, Request *req) {
  auto qit = table_.find(row);
  auto &reqs = qit->second.requests;
  reqs.erase(std::find_if(reqs.begin(), reqs.end(),
                          [req](const std::unique_ptr<Request> &r) { return r.get() == req; }));
  // Removing a waiter may unblock waiters that were queued behind it.
  if (reqs.empty())
    table_.erase(qit);
  else
    grant_waiters(qit->second);
}

LockStats LockManager::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

size_t LockManager::waiting_count(uint64_t row) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = table_.find(row);
  if (it == table_.end()) return 0;
  size_t n = 0;
  for (const auto &r : it->second.requests) n += r->granted ? 0 : 1;
  return n;
}

}  // namespace minidb
