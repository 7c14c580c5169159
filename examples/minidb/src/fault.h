// Fault knobs for ground truth: a random delay injected at the start of a named
// function, so a test (or a user) knows which function *should* be ranked first.
//
//   configure_delay("BufferPool::read_page=exp:200us", &err);
//
// Each injectable function calls inject_delay(InjectPoint::X) as its first
// statement; the delay is a plain call inside the function, so vprof sees it as
// that function's time (or as the inject_delay call site once the function is
// broken down). Configure before starting threads: the table is read without a
// lock. With nothing configured, inject_delay costs one relaxed load.
#ifndef MINIDB_FAULT_H
#define MINIDB_FAULT_H

#include <cstdint>
#include <string>
#include <vector>

namespace minidb {

// Keep in sync with kInjectNames in fault.cc and docs/minidb.md.
enum class InjectPoint : int {
  RunTransaction,
  ExecuteStep,
  DatabaseReadRow,
  DatabaseWriteRow,
  DatabaseCommit,
  LockAcquire,
  LockWaitForGrant,
  LockReleaseAll,
  PoolFetch,
  PoolLruTouch,
  PoolReadPage,
  PoolWritePage,
  LogAppend,
  LogCommit,
  LogFlush,
  LogFsync,
  Count
};

// Qualified names (without the minidb:: namespace), in InjectPoint order.
const std::vector<std::string> &injectable_functions();

struct DelayDist {
  enum Kind { Fixed, Uniform, Exponential } kind = Fixed;
  int64_t a_ns = 0;  // fixed value, uniform low bound, or exponential mean
  int64_t b_ns = 0;  // uniform high bound
};

// Parses "fixed:100us", "uniform:0:500us", "exp:200us". Units: ns, us, ms, s
// (a bound without unit takes the unit of the last bound). Returns false and
// sets *err on bad input.
bool parse_delay_dist(const std::string &text, DelayDist *out, std::string *err);

// "FUNCTION=DIST"; FUNCTION may carry a "minidb::" prefix.
bool configure_delay(const std::string &spec, std::string *err);
void clear_delays();
void set_delay_seed(uint64_t seed);

// Sleeps for a sample of the configured distribution, if any.
void inject_delay(InjectPoint point);

// How many delays were injected at `point` since the last clear_delays().
uint64_t injected_count(InjectPoint point);

}  // namespace minidb

#endif
