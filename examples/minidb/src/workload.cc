#include "workload.h"

#include <algorithm>

namespace minidb {
namespace {

constexpr uint64_t kDistricts = 10, kCustomers = 300, kItems = 1000, kStock = 1000;

}  // namespace

const char *txn_type_name(TxnType t) {
  switch (t) {
    case TxnType::NewOrder: return "NewOrder";
    case TxnType::Payment: return "Payment";
    case TxnType::OrderStatus: return "OrderStatus";
    case TxnType::Delivery: return "Delivery";
    case TxnType::StockLevel: return "StockLevel";
    case TxnType::Count: break;
  }
  return "?";
}

WorkloadGenerator::WorkloadGenerator(const WorkloadOptions &options, uint64_t seed)
    : options_(options), rng_(seed) {
  if (options_.warehouses == 0) options_.warehouses = 1;
}

uint64_t WorkloadGenerator::rows_needed(const WorkloadOptions &o) {
  uint64_t w = o.warehouses ? o.warehouses : 1;
  return w * (1 + kDistricts + kCustomers + kStock) + kItems;
}

uint32_t WorkloadGenerator::uniform(uint32_t lo, uint32_t hi) {
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_);
}

uint64_t WorkloadGenerator::skewed(uint64_t base, uint64_t count) {
  uint64_t hot = std::min<uint64_t>(options_.hot_rows ? options_.hot_rows : 1, count);
  if (std::uniform_real_distribution<double>(0, 1)(rng_) < options_.skew)
    return base + std::uniform_int_distribution<uint64_t>(0, hot - 1)(rng_);
  return base + std::uniform_int_distribution<uint64_t>(0, count - 1)(rng_);
}

uint64_t WorkloadGenerator::warehouse_row(uint32_t w) const { return w; }
uint64_t WorkloadGenerator::district_row(uint32_t w, uint32_t d) const {
  return options_.warehouses + w * kDistricts + d;
}
uint64_t WorkloadGenerator::customer_row(uint32_t w) {
  uint64_t base = options_.warehouses * (1 + kDistricts) + w * kCustomers;
  return skewed(base, kCustomers);
}
uint64_t WorkloadGenerator::stock_row(uint32_t w) {
  uint64_t base = options_.warehouses * (1 + kDistricts + kCustomers) + w * kStock;
  return skewed(base, kStock);
}
uint64_t WorkloadGenerator::item_row() {
  uint64_t base = options_.warehouses * (1 + kDistricts + kCustomers + kStock);
  return skewed(base, kItems);
}

TxnSpec WorkloadGenerator::next(uint32_t client) {
  TxnSpec t;
  t.client = client;
  uint32_t w = client % options_.warehouses;
  // TPC-C's minimum mix: 45% NewOrder, 43% Payment, 4% each of the rest.
  uint32_t pick = uniform(0, 99);
  if (pick < 45) new_order(t, w);
  else if (pick < 88) payment(t, w);
  else if (pick < 92) order_status(t, w);
  else if (pick < 96) delivery(t, w);
  else stock_level(t, w);
  return t;
}

void WorkloadGenerator::new_order(TxnSpec &t, uint32_t w) {
  t.type = TxnType::NewOrder;
  t.steps.push_back({warehouse_row(w), false, 0});
  t.steps.push_back({district_row(w, uniform(0, kDistricts - 1)), true, 1});  // next order id
  // Order lines sorted by stock row, as TPC-C implementations do to avoid
  // deadlocks between NewOrders; other types still touch rows unsorted.
  uint32_t lines = uniform(5, 10);
  std::vector<std::pair<uint64_t, uint64_t>> order_lines;  // (stock, item)
  for (uint32_t i = 0; i < lines; ++i) {
    uint64_t item = item_row();
    order_lines.emplace_back(stock_row(w), item);
  }
  std::sort(order_lines.begin(), order_lines.end());
  for (const auto &line : order_lines) {
    t.steps.push_back({line.second, false, 0});
    t.steps.push_back({line.first, true, -1});
  }
}

void WorkloadGenerator::payment(TxnSpec &t, uint32_t w) {
  t.type = TxnType::Payment;
  int64_t amount = uniform(1, 5000);
  t.steps.push_back({warehouse_row(w), true, amount});  // warehouse year-to-date
  t.steps.push_back({district_row(w, uniform(0, kDistricts - 1)), true, amount});
  t.steps.push_back({customer_row(w), true, -amount});
}

void WorkloadGenerator::order_status(TxnSpec &t, uint32_t w) {
  t.type = TxnType::OrderStatus;
  t.steps.push_back({customer_row(w), false, 0});
  t.steps.push_back({district_row(w, uniform(0, kDistricts - 1)), false, 0});
  for (int i = 0; i < 3; ++i) t.steps.push_back({stock_row(w), false, 0});
}

void WorkloadGenerator::delivery(TxnSpec &t, uint32_t w) {
  t.type = TxnType::Delivery;
  // Scaled down from 10 districts to 4, keeping its long X-lock footprint.
  uint32_t first = uniform(0, kDistricts - 4);
  for (uint32_t d = first; d < first + 4; ++d) {
    t.steps.push_back({district_row(w, d), true, 1});
    t.steps.push_back({customer_row(w), true, 1});
  }
}

void WorkloadGenerator::stock_level(TxnSpec &t, uint32_t w) {
  t.type = TxnType::StockLevel;
  t.steps.push_back({district_row(w, uniform(0, kDistricts - 1)), false, 0});
  for (int i = 0; i < 10; ++i) t.steps.push_back({stock_row(w), false, 0});
}

}  // namespace minidb
