#include "database.h"

#include "fault.h"

namespace minidb {

std::unique_ptr<Database> Database::open(const DatabaseOptions &options, std::string *err) {
  std::unique_ptr<Database> db(new Database(options));
  db->options_.pool.data_file = options.dir + "/minidb.data";
  size_t slots = db->options_.pool.page_size / sizeof(int64_t);
  db->options_.pool.num_pages = (options.rows + slots - 1) / slots;
  db->options_.log.dir = options.dir;
  db->locks_ = std::make_unique<LockManager>(db->options_.lock);
  db->pool_ = BufferPool::open(db->options_.pool, err);
  if (!db->pool_) return nullptr;
  db->log_ = Log::open(db->options_.log, err);
  if (!db->log_) return nullptr;
  return db;
}

Txn Database::begin(int64_t age_ns) {
  Txn t;
  t.id = next_txn_.fetch_add(1);
  t.age_ns = age_ns;
  return t;
}

OpStatus Database::lock_row(Txn &txn, uint64_t row, LockMode mode) {
  switch (locks_->acquire(txn.id, txn.age_ns, row, mode, &txn.lock_wait_ns)) {
    case LockResult::Granted:
      return OpStatus::Ok;
    case LockResult::Deadlock:
      deadlock_aborts_.fetch_add(1, std::memory_order_relaxed);
      return OpStatus::Aborted;
    case LockResult::Timeout:
      timeout_aborts_.fetch_add(1, std::memory_order_relaxed);
      return OpStatus::Aborted;
  }
  return OpStatus::Aborted;
}

OpStatus Database::read_row(Txn &txn, uint64_t row, int64_t *value) {
  inject_delay(InjectPoint::DatabaseReadRow);
  if (lock_row(txn, row, LockMode::Shared) != OpStatus::Ok) return OpStatus::Aborted;
  size_t slots = pool_->slots_per_page();
  BufferPool::PageRef page = pool_->fetch(row / slots);
  *value = page.read_slot(row % slots);
  return OpStatus::Ok;
}

OpStatus Database::write_row(Txn &txn, uint64_t row, int64_t delta) {
  inject_delay(InjectPoint::DatabaseWriteRow);
  if (lock_row(txn, row, LockMode::Exclusive) != OpStatus::Ok) return OpStatus::Aborted;
  size_t slots = pool_->slots_per_page();
  BufferPool::PageRef page = pool_->fetch(row / slots);
  int64_t old_value = page.read_slot(row % slots);
  int64_t rec[3] = {static_cast<int64_t>(row), old_value, old_value + delta};
  log_->append(txn.id, RecordType::Update, rec, sizeof rec);
  page.write_slot(row % slots, old_value + delta);
  txn.undo.push_back(Txn::Undo{row, old_value});
  return OpStatus::Ok;
}

void Database::commit(Txn &txn) {
  inject_delay(InjectPoint::DatabaseCommit);
  log_->commit(txn.id);
  locks_->release_all(txn.id);
  txn.undo.clear();
}

void Database::abort(Txn &txn) {
  size_t slots = pool_->slots_per_page();
  // Newest first, so a row written twice ends at its value before the txn.
  for (auto it = txn.undo.rbegin(); it != txn.undo.rend(); ++it) {
    BufferPool::PageRef page = pool_->fetch(it->row / slots);
    page.write_slot(it->row % slots, it->old_value);
  }
  log_->append(txn.id, RecordType::Abort, nullptr, 0);
  locks_->release_all(txn.id);
  txn.undo.clear();
}

}  // namespace minidb
