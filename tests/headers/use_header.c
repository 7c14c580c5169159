/* Every public call, compiled under each language standard (CMakeLists.txt). */
#include <vprof/vprof.h>
#ifndef VPROF_DISABLE
#include <vprof/probes.h>

/* probes.h names its types from the compiler's macros (it may include no
 * system header): they are <stdint.h>'s, which vprof.h included. */
typedef char u64_is_uint64_t[__builtin_types_compatible_p(vprof_u64, uint64_t) ? 1 : -1];
typedef char u32_is_uint32_t[__builtin_types_compatible_p(vprof_u32, uint32_t) ? 1 : -1];
typedef char u16_is_uint16_t[__builtin_types_compatible_p(vprof_u16, uint16_t) ? 1 : -1];
typedef char u8_is_uint8_t[__builtin_types_compatible_p(vprof_u8, uint8_t) ? 1 : -1];
#endif

int use_header(void) {
  int task = 0;
  (void)task; /* unused when VPROF_DISABLE compiles every call away */
  vprof_interval_begin(1);
  vprof_interval_begin_labeled(2, "type", 0);
  vprof_interval_join(2);
  vprof_task_enqueue(&task);
  vprof_task_dequeue(&task);
  vprof_interval_leave();
  vprof_interval_end(2);
  vprof_interval_end(1);
#ifndef VPROF_DISABLE
  {
    __attribute__((cleanup(vprof_fn_cleanup))) uint32_t fn = 3;
    vprof_fn_enter(fn);
    vprof_site_begin(4);
    vprof_site_end(4);
    vprof_sync_wait_begin(&task, VPROF_SYNC_MUTEX);
    vprof_sync_wait_end(&task, VPROF_SYNC_MUTEX, 1);
    vprof_sync_release(&task, VPROF_SYNC_MUTEX);
  }
#endif
  return 0;
}
