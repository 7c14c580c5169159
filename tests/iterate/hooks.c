/* A request server shaped like Apache httpd: the root
 * `process_request` reaches its work only through hook dispatchers that a
 * macro writes (as APR's APR_IMPLEMENT_HOOK_RUN_FIRST / _RUN_ALL do: the
 * whole definition, its '{' included, comes from the macro, so vprof cannot
 * instrument them) and through an output filter chain, where each filter
 * passes the data on through a pointer call in `pass_brigade` (as
 * ap_pass_brigade calls next->frec->filter_func.out_func): filters and
 * pass_brigade recurse into each other. Handlers, log hooks and filters are
 * registered by address.
 *
 * argv: SEED PLANT, PLANT one of
 *   handler  1 request of 10 spins in injected_delay, called from
 *            default_handler (a handler hook);
 *   filter   the same, called from core_output_filter (the last filter);
 *   log      the same, called from log_transaction (a log hook, RUN_ALL);
 *   macro    the same time spent in the body of `check_timeout`, which a
 *            macro writes and which calls nothing: no way below it, so a
 *            session must end calling it unreached, not explained;
 *   unannotated  the requests run with no interval at all: a session
 *            measures nothing and must say so, not call it a fixed point.
 * The rest of every request is short busy work, so the planted call holds
 * most of Var(latency). Busy loops, not sleeps: no scheduler in the answer. */
#include <vprof/vprof.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK 0
#define DECLINED (-1)

static uint64_t rng_state = 88172645463325252ull;

static double uniform01(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

void busy(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

void injected_delay(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

enum plant { PLANT_HANDLER, PLANT_FILTER, PLANT_LOG, PLANT_MACRO };
static enum plant plant = PLANT_HANDLER;

struct request {
  uint64_t id;
  int status;
};

/* 1 request of 10: ~1.5 ms, against ~0.1 ms of busy work. */
static void maybe_planted(const struct request *r, enum plant where) {
  if (plant == where && r->id % 10 == 3) injected_delay(1500000 + (long)(400000 * uniform01()));
}

/* --- hooks, as APR declares and implements them ------------------------- */
typedef int hook_fn(struct request *r);

#define DECLARE_HOOK(name)                  \
  static hook_fn *name##_hooks[8];          \
  static int name##_count;                  \
  void hook_##name(hook_fn *f) { name##_hooks[name##_count++] = f; }

#define IMPLEMENT_HOOK_RUN_FIRST(name)                                             \
  int run_##name(struct request *r) {                                              \
    int rv = DECLINED;                                                             \
    for (int n = 0; n < name##_count; ++n) {                                       \
      rv = name##_hooks[n](r);                                                     \
      if (rv != DECLINED) break;                                                   \
    }                                                                              \
    return rv;                                                                     \
  }

#define IMPLEMENT_HOOK_RUN_ALL(name)                                               \
  int run_##name(struct request *r) {                                              \
    for (int n = 0; n < name##_count; ++n) {                                       \
      int rv = name##_hooks[n](r);                                                 \
      if (rv != OK && rv != DECLINED) return rv;                                   \
    }                                                                              \
    return OK;                                                                     \
  }

DECLARE_HOOK(fixups)
DECLARE_HOOK(handler)
DECLARE_HOOK(log_transaction)
IMPLEMENT_HOOK_RUN_ALL(fixups)
IMPLEMENT_HOOK_RUN_FIRST(handler)
IMPLEMENT_HOOK_RUN_ALL(log_transaction)

/* --- the output filter chain ------------------------------------------- */
struct filter;
typedef int out_filter_fn(struct filter *f, long bytes);
struct filter {
  out_filter_fn *func;
  struct filter *next;
};

int pass_brigade(struct filter *next, long bytes) {
  busy(200);
  return next->func(next, bytes);
}

void write_out(long bytes) { busy(bytes / 8); }

int core_output_filter(struct filter *f, long bytes);
int content_length_filter(struct filter *f, long bytes) {
  busy(300);
  return pass_brigade(f->next, bytes);
}

int byterange_filter(struct filter *f, long bytes) {
  busy(200);
  return pass_brigade(f->next, bytes);
}

static struct request *current;

int core_output_filter(struct filter *f, long bytes) {
  (void)f;
  busy(500);
  write_out(bytes);
  maybe_planted(current, PLANT_FILTER);
  return OK;
}

static struct filter core_filter = {core_output_filter, NULL};
static struct filter length_filter = {content_length_filter, &core_filter};
static struct filter range_filter = {byterange_filter, &length_filter};

/* --- the modules' hooks -------------------------------------------------- */
int status_handler(struct request *r) {
  if (r->id % 50 != 7) return DECLINED;
  busy(3000);
  return pass_brigade(&range_filter, 1024);
}

int default_handler(struct request *r) {
  busy(1000);
  maybe_planted(r, PLANT_HANDLER);
  return pass_brigade(&range_filter, 4096);
}

int fixup_dir(struct request *r) {
  (void)r;
  busy(400);
  return OK;
}

int fixup_mime(struct request *r) {
  busy(300 + (long)(r->id % 3) * 50);
  return DECLINED;
}

int log_transaction(struct request *r) {
  busy(600);
  maybe_planted(r, PLANT_LOG);
  return OK;
}

/* A check a macro writes, spinning in its own body (plant "macro"). */
#define IMPLEMENT_CHECK(name, where)                                                     \
  void name(const struct request *r) {                                                   \
    long n = plant == where && r->id % 10 == 3 ? 1500000 + (long)(r->id % 7) * 50000 : 0; \
    for (volatile long i = 0; i < n; i = i + 1) {                                         \
    }                                                                                     \
  }

IMPLEMENT_CHECK(check_timeout, PLANT_MACRO)

/* --- the request ----------------------------------------------------------- */
void process_request(struct request *r) {
  busy(500);
  current = r;
  run_fixups(r);
  check_timeout(r);
  r->status = run_handler(r);
  run_log_transaction(r);
}

int main(int argc, char **argv) {
  int annotated = 1; /* "unannotated": the requests run with no interval */
  if (argc > 1) rng_state += (uint64_t)atoi(argv[1]);
  if (argc > 2) {
    if (!strcmp(argv[2], "handler"))
      plant = PLANT_HANDLER;
    else if (!strcmp(argv[2], "filter"))
      plant = PLANT_FILTER;
    else if (!strcmp(argv[2], "log"))
      plant = PLANT_LOG;
    else if (!strcmp(argv[2], "macro"))
      plant = PLANT_MACRO;
    else if (!strcmp(argv[2], "unannotated"))
      annotated = 0;
    else {
      fprintf(stderr, "hooks: unknown plant %s\n", argv[2]);
      return 2;
    }
  }
  hook_fixups(fixup_dir);
  hook_fixups(fixup_mime);
  hook_handler(status_handler);
  hook_handler(default_handler);
  hook_log_transaction(log_transaction);
  for (uint64_t i = 1; i <= 400; ++i) {
    struct request r = {i, 0};
    if (annotated) vprof_interval_begin(i);
    process_request(&r);
    if (annotated) vprof_interval_end(i);
  }
  puts("done");
  return 0;
}
