/* behaviour: std=-std=c99 flags=-O1 flags=-O2 function=count function=sum function=fact function=jumps */
/* expect: enter=14 exit=14 site_begin=30 site_end=30 twice=3 switched=2 */
/* A build ahead's files write each instrumented body twice (edit_plan.cc,
   two_versions): the original, which a dormant function runs, and the
   instrumented. Both must behave as the original and print the original's
   __LINE__; a body with a label (jumps) is written once. A static local is
   one per copy (a process runs one). #define, #undef and #if inside a body
   repeat harmlessly. The tally (printf is a call site too):
     count x3: bump, printf                        F3 S6
     sum(4), sum(8): step per turn, printf          F2 S5+9
     fact(5), fact(2): recursion, its own call      F5+2 S4+1
     jumps(3), jumps(0): step per turn, printf      F2 S4+1
   = F14 S30. */
#include <stdio.h>

#define TWICE(x) ((x) * 2)

static int bump(int n) { return n + 1; }
static int step(int i) { return TWICE(i); }

int count(void) {
  static int calls; /* one per copy: a process runs one copy */
  calls = bump(calls);
  printf("count %d at line %d\n", calls, __LINE__);
  return calls;
}

int sum(int n) {
  int s = 0, i;
#define SQUARE(v) ((v) * (v))
  for (i = 0; i < n; ++i) s += step(i);
#if defined(__GNUC__)
  s += SQUARE(2);
#else
  s += 0;
#endif
#undef SQUARE
  printf("sum %d at line %d\n", s, __LINE__);
  return s;
}

int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }

int jumps(int n) {
  int i, s = 0;
  for (i = 0; i < n; ++i) {
    s += step(i);
    if (s > 100) goto out;
  }
out:
  printf("jumps %d at line %d\n", s, __LINE__);
  return s;
}

int main(void) {
  int total = count() + count() + count();
  total += sum(4) + fact(5) + jumps(3) + fact(2) + sum(8) + jumps(0);
  printf("total %d\n", total);
  return 0;
}
