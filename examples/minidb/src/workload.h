// A TPC-C-like transaction mix over minidb rows.
//
// Row layout for W warehouses (scaled-down TPC-C): W warehouse rows, 10 district
// rows per warehouse, 300 customers per warehouse, 1000 shared items
// (read-only) and 1000 stock rows per warehouse. Each client has a home
// warehouse (client % W), as TPC-C terminals do, so fewer warehouses mean more
// contention on the warehouse and district rows.
//
// Skew: with probability `skew`, a customer/item/stock pick falls in the first
// `hot_rows` rows of its range (the hot keys); otherwise it is uniform.
// Steps within a transaction are not sorted, so deadlocks happen, as in TPC-C.
#ifndef MINIDB_WORKLOAD_H
#define MINIDB_WORKLOAD_H

#include <cstdint>
#include <random>
#include <vector>

namespace minidb {

enum class TxnType { NewOrder, Payment, OrderStatus, Delivery, StockLevel, Count };
const char *txn_type_name(TxnType t);

struct Step {
  uint64_t row;
  bool write;
  int64_t delta;  // added to the row when `write`
};

struct TxnSpec {
  TxnType type = TxnType::NewOrder;
  uint32_t client = 0;
  std::vector<Step> steps;
};

struct WorkloadOptions {
  uint32_t warehouses = 4;
  double skew = 0.2;
  uint32_t hot_rows = 16;
};

class WorkloadGenerator {
 public:
  WorkloadGenerator(const WorkloadOptions &options, uint64_t seed);
  // Rows the layout needs (the database must have at least this many).
  static uint64_t rows_needed(const WorkloadOptions &options);
  TxnSpec next(uint32_t client);

 private:
  uint64_t warehouse_row(uint32_t w) const;
  uint64_t district_row(uint32_t w, uint32_t d) const;
  uint64_t customer_row(uint32_t w);
  uint64_t item_row();
  uint64_t stock_row(uint32_t w);
  uint64_t skewed(uint64_t base, uint64_t count);
  uint32_t uniform(uint32_t lo, uint32_t hi);

  void new_order(TxnSpec &t, uint32_t w);
  void payment(TxnSpec &t, uint32_t w);
  void order_status(TxnSpec &t, uint32_t w);
  void delivery(TxnSpec &t, uint32_t w);
  void stock_level(TxnSpec &t, uint32_t w);

  WorkloadOptions options_;
  std::mt19937_64 rng_;
};

}  // namespace minidb

#endif
