#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace vprof::rt {

static void set_str(char *dst, size_t cap, const char *env, const char *def) {
  const char *v = getenv(env);
  snprintf(dst, cap, "%s", v ? v : def);
}

static uint64_t get_u64(const char *env, uint64_t def) {
  const char *v = getenv(env);
  if (!v || !*v) return def;
  char *end = nullptr;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end != '\0') {
    fprintf(stderr, "vprof: %s=%s is not a number; using %llu\n", env, v,
            (unsigned long long)def);
    return def;
  }
  return x;
}

void read_options(Options &o) {
#define VPROF_OPTION_STR(field, env, def, help) set_str(o.field, sizeof o.field, env, def);
#define VPROF_OPTION_U64(field, env, def, help) o.field = get_u64(env, def);
#include "options.def"
#undef VPROF_OPTION_STR
#undef VPROF_OPTION_U64
}

}  // namespace vprof::rt
