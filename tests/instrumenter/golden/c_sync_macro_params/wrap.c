/* MariaDB's include/my_pthread.h parenthesizes the macros' parameters in
   their bodies; a call a whole macro writes is wrapped at the invocation,
   and its object is the argument as written, inside those parentheses. */
#include <pthread.h>
#define my_cond_wait(A, B) pthread_cond_wait((A), (B))
#define rw_tryrdlock(A) pthread_rwlock_tryrdlock((A))
/* A macro whose body writes the object itself: no text to name it by. */
#define LOCK_GLOBAL() pthread_mutex_lock(&global_mu)
pthread_mutex_t global_mu = PTHREAD_MUTEX_INITIALIZER;
int wait_for(pthread_cond_t *c, pthread_mutex_t *m) { return my_cond_wait(c, m); }
int try_read(pthread_rwlock_t *l) { return rw_tryrdlock(l); }
void lock_global(void) { LOCK_GLOBAL(); }
