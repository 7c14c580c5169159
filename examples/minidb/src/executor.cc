#include "executor.h"

#include <condition_variable>
#include <mutex>

#include "fault.h"

namespace minidb {

OpStatus execute_step(Database &db, Txn &txn, const Step &step) {
  inject_delay(InjectPoint::ExecuteStep);
  if (step.write) return db.write_row(txn, step.row, step.delta);
  int64_t value = 0;
  return db.read_row(txn, step.row, &value);
}

TxnOutcome run_transaction(Database &db, const TxnSpec &spec, int64_t age_ns) {
  inject_delay(InjectPoint::RunTransaction);
  TxnOutcome out;
  while (out.attempts < kMaxAttempts) {
    ++out.attempts;
    Txn txn = db.begin(age_ns);
    bool aborted = false;
    for (const Step &step : spec.steps) {
      if (execute_step(db, txn, step) == OpStatus::Aborted) {
        aborted = true;
        break;
      }
    }
    out.lock_wait_ns += txn.lock_wait_ns;
    if (aborted) {
      db.abort(txn);
      continue;
    }
    db.commit(txn);
    out.committed = true;
    break;
  }
  return out;
}

// One transaction in pool mode. Exactly one of its tasks is queued or running
// at any time, so the object can be reused as the task for every step.
// Named (not in an anonymous namespace) so its qualified name is stable for
// `vprof instrument --function minidb::PooledTransaction::run`.
class PooledTransaction : public Task {
 public:
  PooledTransaction(ThreadPool &pool, Database &db, const TxnSpec &spec, int64_t age_ns)
      : pool_(pool), db_(db), spec_(spec), age_ns_(age_ns) {}

  void run() override {
    if (!started_) {
      inject_delay(InjectPoint::RunTransaction);
      txn_ = db_.begin(age_ns_);
      started_ = true;
      ++outcome_.attempts;
    }
    if (next_step_ < spec_.steps.size()) {
      if (execute_step(db_, txn_, spec_.steps[next_step_]) == OpStatus::Aborted) {
        outcome_.lock_wait_ns += txn_.lock_wait_ns;
        db_.abort(txn_);
        started_ = false;
        next_step_ = 0;
        if (outcome_.attempts >= kMaxAttempts) return finish();
      } else {
        ++next_step_;
      }
      pool_.submit(this);
      return;
    }
    outcome_.lock_wait_ns += txn_.lock_wait_ns;
    db_.commit(txn_);
    outcome_.committed = true;
    finish();
  }

  TxnOutcome wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) cv_.wait(lock);
    return outcome_;
  }

 private:
  void finish() {
    // Notify under the lock: the waiter may destroy *this as soon as it can
    // take the lock.
    std::lock_guard<std::mutex> g(mutex_);
    done_ = true;
    cv_.notify_one();
  }

  ThreadPool &pool_;
  Database &db_;
  const TxnSpec &spec_;
  int64_t age_ns_;
  Txn txn_;
  bool started_ = false;
  size_t next_step_ = 0;
  TxnOutcome outcome_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
};

TxnOutcome run_transaction_pooled(ThreadPool &pool, Database &db, const TxnSpec &spec,
                                  int64_t age_ns, uint64_t interval_id) {
  PooledTransaction txn(pool, db, spec, age_ns);
  txn.interval_id = interval_id;
  pool.submit(&txn);
  return txn.wait();
}

}  // namespace minidb
