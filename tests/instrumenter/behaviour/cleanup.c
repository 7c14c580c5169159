/* behaviour: std=-std=c99 std=-std=c11 function=find function=walk function=get_pair */
/* expect: enter=10 exit=10 site_begin=30 site_end=30 */
/* C: the cleanup-attribute exit probe runs on every return and on goto out
   of a loop; value, struct and void calls in conditions, loops, returns and
   short circuits. The tally, per walk() (main calls it twice):
     walk F1: find x3, get_pair, report = S5 (find(1) is short-circuited away)
     find(0): probe(0) matches, return from the loop: F1 S1
     find(2): probe(0..2): F1 S3
     find(9): probe(0..4), goto out, note(): F1 S6
     get_pair: F1 S0
   = F5 S15 per walk; F10 S30 in all. */
#include <stdio.h>

struct pair { int a, b; };

static int probe(int i) { return i * 2; }
static void note(const char *s) { printf("note %s\n", s); }

int find(int want) {
  int i;
  for (i = 0; i < 5; ++i) {
    if (probe(i) == want * 2) return i;
  }
  goto out;
out:
  note("miss");
  return -1;
}

struct pair get_pair(int x) {
  struct pair p;
  p.a = x;
  p.b = x + 1;
  return p;
}

static void report(int v) { printf("v=%d\n", v); }

int walk(void) {
  int r = find(0) + find(2) + find(9);
  struct pair p = get_pair(r);
  if (p.a > 100 && find(1) > 0) r = 0;
  report(p.a + p.b);
  return r;
}

int main(void) {
  int i, s = 0;
  for (i = 0; i < 2; ++i) s += walk();
  return s & 7;
}
