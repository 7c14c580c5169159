// Running one transaction: its steps, retries after a deadlock, and commit.
//
// Thread-per-connection: the connection's thread calls run_transaction.
// Thread pool: run_transaction_pooled turns each step (and the commit) into a
// task on the pool's queue; the next task is queued by the worker that finished
// the previous one, and the connection thread waits for the last.
//
// An aborted attempt is retried with the same age, so under VATS a retried
// transaction keeps its seniority.
#ifndef MINIDB_EXECUTOR_H
#define MINIDB_EXECUTOR_H

#include <cstdint>

#include "database.h"
#include "thread_pool.h"
#include "workload.h"

namespace minidb {

// Attempts before a transaction is given up (counted as failed).
constexpr int kMaxAttempts = 1000;

struct TxnOutcome {
  bool committed = false;
  int attempts = 0;
  int64_t lock_wait_ns = 0;  // over all attempts
};

OpStatus execute_step(Database &db, Txn &txn, const Step &step);
TxnOutcome run_transaction(Database &db, const TxnSpec &spec, int64_t age_ns);
// `interval_id` is the vprof interval the workers join for this transaction.
TxnOutcome run_transaction_pooled(ThreadPool &pool, Database &db, const TxnSpec &spec,
                                  int64_t age_ns, uint64_t interval_id);

}  // namespace minidb

#endif
