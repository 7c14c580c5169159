/* Targets whose planted cause sits inside recursion, one per shape
 * (argv[2]), all with the root `step` and the planted `injected_delay`, which
 * spins for an exponentially distributed time. Busy loops, not calls, so the
 * planted function has no callees.
 *   reenter  (default) shaped like an embedded SQL engine: `step` calls the
 *            interpreter `interp` (not instrumented at first), which spins in
 *            injected_delay and, in 2 of 300 intervals, runs a statement of
 *            its own: it re-enters `step`.
 *   callback the same, but interp re-enters the root through a function
 *            pointer it was given (`on_nested`), as an engine's hook would.
 *   dispatch the same as reenter, but `step` reaches interp only through a
 *            function pointer (`handler`), as an executor calls its nodes:
 *            vprof must break down the functions the pointer may reach.
 *   mutual   a recursive-descent parser: `parse_expr` and `parse_term` call
 *            each other 1 to 3 levels deep, and each parse_term spins in
 *            injected_delay.
 *   relay    (found on PostgreSQL's executor) `step` calls through
 *            `handler`, which points at `relay_first`; it calls through a
 *            second pointer of the same type to `exec_node` (as
 *            ExecProcNodeFirst calls node->ExecProcNode), which calls `work`,
 *            which spins in injected_delay. Both relay_first and exec_node
 *            are targets of the first pointer call: exec_node is reached
 *            through relay_first, and a later run must keep relay_first
 *            instrumented for exec_node's parts to sit where it was measured. */
#include <vprof/vprof.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static long draw(void) {
  /* ~0.5 ms mean: above the machine's noise. */
  return 1000 + (long)(-600000.0 * log(1.0 - uniform01()));
}

enum shape { REENTER, CALLBACK, DISPATCH, MUTUAL, RELAY };
static enum shape shape = REENTER;

void step(int nested);

void interp(int nested, uint64_t interval, void (*on_nested)(int)) {
  busy(5000);
  injected_delay(draw());
  if (!nested && (interval == 100 || interval == 200)) {
    if (on_nested)
      on_nested(1);
    else
      step(1);
  }
}

void parse_expr(int depth, int max_depth);

void parse_term(int depth, int max_depth) {
  busy(1000);
  injected_delay(draw() / 2);
  if (depth < max_depth) parse_expr(depth + 1, max_depth);
}

void parse_expr(int depth, int max_depth) {
  busy(2000);
  parse_term(depth, max_depth);
}

void work(void) {
  busy(500);
  injected_delay(draw());
}

void exec_node(int nested, uint64_t interval, void (*on_nested)(int)) {
  (void)nested, (void)interval, (void)on_nested;
  busy(1000);
  work();
}

void (*volatile next_handler)(int, uint64_t, void (*)(int)) = exec_node;

void relay_first(int nested, uint64_t interval, void (*on_nested)(int)) {
  busy(500);
  next_handler(nested, interval, on_nested);
}

void (*volatile handler)(int, uint64_t, void (*)(int)) = interp;

void step(int nested) {
  static uint64_t interval;
  if (!nested) ++interval;
  busy(3000);
  if (shape == MUTUAL)
    parse_expr(1, 1 + (int)(interval % 3));
  else if (shape == DISPATCH || shape == RELAY)
    handler(nested, interval, NULL);
  else
    interp(nested, interval, shape == CALLBACK ? step : NULL);
  busy(2000);
}

int main(int argc, char **argv) {
  if (argc > 1) rng_state += (uint64_t)atoi(argv[1]);
  if (argc > 2) {
    if (!strcmp(argv[2], "callback"))
      shape = CALLBACK;
    else if (!strcmp(argv[2], "dispatch"))
      shape = DISPATCH;
    else if (!strcmp(argv[2], "mutual"))
      shape = MUTUAL;
    else if (!strcmp(argv[2], "relay"))
      shape = RELAY, handler = relay_first;
    else if (strcmp(argv[2], "reenter")) {
      fprintf(stderr, "reentrant: unknown shape %s\n", argv[2]);
      return 2;
    }
  }
  for (uint64_t i = 1; i <= 300; ++i) {
    vprof_interval_begin(i);
    step(0);
    vprof_interval_end(i);
  }
  puts("done");
  return 0;
}
