// The sync entry points as programs instrumented before they became inline
// tests (include/vprof/probes.h) call them: such a program still loads and
// records with this runtime. Not in a file that includes probes.h, where the
// same names are the inline probes.
#include <stdint.h>

#include <vprof/export.h>

extern "C" {
VPROF_API void vprof_rt_sync_wait_begin(const void *obj, uint32_t role);
VPROF_API void vprof_rt_sync_wait_end(const void *obj, uint32_t role, int acquired);
VPROF_API void vprof_rt_sync_release(const void *obj, uint32_t role);
VPROF_API void vprof_rt_sync_release_from(const void *obj, uint32_t role, const void *pc);

VPROF_API void vprof_sync_wait_begin(const void *obj, uint32_t role) { vprof_rt_sync_wait_begin(obj, role); }
VPROF_API void vprof_sync_wait_end(const void *obj, uint32_t role, int acquired) {
  vprof_rt_sync_wait_end(obj, role, acquired);
}
VPROF_API void vprof_sync_release(const void *obj, uint32_t role) {
  vprof_rt_sync_release_from(obj, role, __builtin_extract_return_addr(__builtin_return_address(0)));
}
}
