/* Every public call, compiled under each language standard (CMakeLists.txt). */
#include <vprof/vprof.h>
#ifndef VPROF_DISABLE
#include <vprof/probes.h>
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
