/* Call-site shapes in C: value, void, noreturn, short circuit, nested,
   conditions, return, unevaluated sizeof, macros. */
struct pair { int a, b; };
int inc(int x);
void note(int x);
struct pair mk(int a);
__attribute__((noreturn)) void die(int code);
int (*hook)(int);

#define CALL_INC(x) inc(x)
#define TWICE(x) ((x) + (x))
#define BUMP(x) (inc(x) + 1)

static int helper(int x) { return x * 2; }

int work(int x) {
  int y = inc(helper(x));
  note(y);
  if (inc(x) > 3 && inc(y) < 100) note(1);
  y += x ? inc(x) : helper(y);
  struct pair p = mk(y);
  y += (int)sizeof(inc(3));
  y += CALL_INC(y);
  y += TWICE(inc(1));
  y += BUMP(y);
  y += hook(y);
  if (y < 0) die(3);
  return inc(p.a + y);
}

int other(int x) { return inc(x); }
