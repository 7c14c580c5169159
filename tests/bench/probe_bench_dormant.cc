// probe_bench.cc's loops compiled with the dormant probes' test (probes.h,
// VPROF_DORMANT_PROBES), as in a file rewritten for a build ahead. Ids are
// constants, as in rewritten code.
#define VPROF_DORMANT_PROBES 1
#include <vprof/probes.h>

#include "probe_bench_dormant.h"

void dormant_capable_sites(uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    vprof_site_begin(kRecordedSite);
    vprof_site_end(kRecordedSite);
  }
}

void dormant_call(uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    vprof_site_begin(kDormantId);
    vprof_fn_enter(kDormantId);
    vprof_fn_exit(kDormantId);
    vprof_site_end(kDormantId);
    __asm__ __volatile__("" ::: "memory");  // the loop is not folded away
  }
}
