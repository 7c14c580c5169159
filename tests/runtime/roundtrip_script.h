// The round-trip scenario: a fixed sequence of every public call, played by
// the workload and compared event by event by the test.
#ifndef VPROF_TESTS_RUNTIME_ROUNDTRIP_SCRIPT_H
#define VPROF_TESTS_RUNTIME_ROUNDTRIP_SCRIPT_H

#include <cstdint>
#include <vector>

#include <vprof/probes.h>
#include <vprof/vprof.h>

namespace vprof::testing {

struct Step {
  uint8_t kind;  // VPROF_K_* as the reader reports it (labeled begins as IV_BEGIN)
  uint64_t arg;
  const char *type = nullptr, *client = nullptr;
  uint8_t role = 0;
};

inline std::vector<Step> roundtrip_script(int half) {
  // Fixed "addresses": the runtime never dereferences objects, and the test
  // process must know them without sharing the workload's memory.
  uint64_t lock = 0x10000 + 0x100 * (uint64_t)half;
  uint64_t task = 0x20000 + 0x100 * (uint64_t)half;
  uint64_t base = half * 1000;
  return {
      {VPROF_K_IV_BEGIN, base + 1, "NewOrder", "alice"},
      {VPROF_K_IV_BEGIN, base + 2},
      {VPROF_K_FUNC_ENTER, 3},
      {VPROF_K_SITE_BEGIN, 4},
      {VPROF_K_WAIT_BEGIN, lock, nullptr, nullptr, VPROF_SYNC_MUTEX},
      {VPROF_K_WAIT_END, lock, nullptr, nullptr, VPROF_SYNC_MUTEX},
      {VPROF_K_RELEASE, lock, nullptr, nullptr, VPROF_SYNC_MUTEX},
      {VPROF_K_SITE_END, 4},
      {VPROF_K_TASK_ENQUEUE, task},
      {VPROF_K_TASK_DEQUEUE, task},
      {VPROF_K_IV_JOIN, base + 1},
      {VPROF_K_IV_LEAVE, 0},
      {VPROF_K_FUNC_EXIT, 3},
      {VPROF_K_IV_BEGIN, base + 3, "Payment", nullptr},
      {VPROF_K_IV_BEGIN, base + 4, "NewOrder", "alice"},  // interned strings again
      {VPROF_K_IV_END, base + 4},
      {VPROF_K_IV_END, base + 3},
      {VPROF_K_IV_END, base + 2},
      {VPROF_K_IV_END, base + 1},
  };
}

inline void play_roundtrip(int half) {
  for (const Step &s : roundtrip_script(half)) {
    const void *obj = reinterpret_cast<const void *>(s.arg);
    switch (s.kind) {
      case VPROF_K_IV_BEGIN:
        if (s.type || s.client) vprof_interval_begin_labeled(s.arg, s.type, s.client);
        else vprof_interval_begin(s.arg);
        break;
      case VPROF_K_IV_END: vprof_interval_end(s.arg); break;
      case VPROF_K_IV_JOIN: vprof_interval_join(s.arg); break;
      case VPROF_K_IV_LEAVE: vprof_interval_leave(); break;
      case VPROF_K_FUNC_ENTER: vprof_fn_enter((uint32_t)s.arg); break;
      case VPROF_K_FUNC_EXIT: vprof_fn_exit((uint32_t)s.arg); break;
      case VPROF_K_SITE_BEGIN: vprof_site_begin((uint32_t)s.arg); break;
      case VPROF_K_SITE_END: vprof_site_end((uint32_t)s.arg); break;
      case VPROF_K_WAIT_BEGIN: vprof_sync_wait_begin(obj, s.role); break;
      case VPROF_K_WAIT_END: vprof_sync_wait_end(obj, s.role, 1); break;
      case VPROF_K_RELEASE: vprof_sync_release(obj, s.role); break;
      case VPROF_K_TASK_ENQUEUE: vprof_task_enqueue(obj); break;
      case VPROF_K_TASK_DEQUEUE: vprof_task_dequeue(obj); break;
    }
  }
}

}  // namespace vprof::testing

#endif
