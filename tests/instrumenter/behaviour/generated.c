/* behaviour: std=-std=c99 function=before function=after */
/* expect: enter=2 exit=2 site_begin=4 site_end=4 twice=1 switched=1 */
/* Generated code (bison's, flex's) names its source lines with #line. A
   body written twice resumes numbering with #line of its own, which knows
   only the file's physical lines: after the first #line of the file it
   would renumber what follows, so a body after one is written once. Each
   function calls step and printf; main prints __LINE__ after both. */
#include <stdio.h>

static int step(int i) { return i + 1; }

int before(int i) {
  printf("before at %d\n", __LINE__);
  return step(i);
}

#line 500 "grammar.y"
int after(int i) {
  printf("after at %d %s\n", __LINE__, __FILE__);
  return step(i);
}

int main(void) {
  int s = before(1) + after(2);
  printf("main at %d %s: %d\n", __LINE__, __FILE__, s);
  return 0;
}
