#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace vprof::rt {

static void set_str(char *dst, size_t cap, const char *env, const char *def) {
  const char *v = getenv(env);
  if (v && strlen(v) >= cap) {
    if (*def)
      fprintf(stderr, "vprof: %s is %zu bytes long, longer than a path can be; using \"%s\"\n", env,
              strlen(v), def);
    else  // the trace directory: none, so the program runs as if not recorded
      fprintf(stderr, "vprof: %s is %zu bytes long, longer than a path can be; recording is off\n", env,
              strlen(v));
    v = nullptr;
  }
  snprintf(dst, cap, "%s", v ? v : def);
}

// Digits only: strtoull alone would take "-1" as 2^64-1 and " 12" as 12.
static uint64_t get_u64(const char *env, uint64_t def, uint64_t min, uint64_t max,
                        uint64_t step) {
  const char *v = getenv(env);
  if (!v || !*v) return def;
  if (strspn(v, "0123456789") == strlen(v)) {
    errno = 0;
    uint64_t x = strtoull(v, nullptr, 10);
    if (errno != ERANGE && x >= min && x <= max && x % step == 0) return x;
  }
  char multiple[48] = "";
  if (step > 1) snprintf(multiple, sizeof multiple, ", a multiple of %llu", (unsigned long long)step);
  fprintf(stderr, "vprof: %s=%s is not valid (an integer in [%llu, %llu]%s); using %llu\n", env, v,
          (unsigned long long)min, (unsigned long long)max, multiple, (unsigned long long)def);
  return def;
}

void read_options(Options &o) {
#define VPROF_OPTION_STR(field, env, def, help) set_str(o.field, sizeof o.field, env, def);
#define VPROF_OPTION_U64(field, env, def, min, max, step, help) \
  o.field = get_u64(env, def, min, max, step);
#include "common/runtime_options.def"
#undef VPROF_OPTION_STR
#undef VPROF_OPTION_U64
  // A ring larger than the budget could never be mapped: every record would
  // be dropped. Fall back to the largest ring the budget holds.
  if (o.chunk_kb > o.buffer_mb * 1024) {
    fprintf(stderr, "vprof: VPROF_CHUNK_KB=%llu is larger than VPROF_BUFFER_MB=%llu; using %llu\n",
            (unsigned long long)o.chunk_kb, (unsigned long long)o.buffer_mb,
            (unsigned long long)(o.buffer_mb * 1024));
    o.chunk_kb = o.buffer_mb * 1024;
  }
}

}  // namespace vprof::rt
