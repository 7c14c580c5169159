/* Sync wrappers from the pthreads pack, in every function of the file; the
   selected function also gets call-site probes around them. Declarations
   stand in for <pthread.h> (golden inputs include no system headers). */
typedef struct { int opaque; } pthread_mutex_t;
typedef struct { int opaque; } pthread_cond_t;
int pthread_mutex_lock(pthread_mutex_t *m);
int pthread_mutex_trylock(pthread_mutex_t *m);
int pthread_mutex_unlock(pthread_mutex_t *m);
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int pthread_cond_signal(pthread_cond_t *c);

static pthread_mutex_t mu;
static pthread_cond_t ready;
static int items;
static pthread_mutex_t locks[4];

void produce(void) {
  pthread_mutex_lock(&mu);
  items++;
  pthread_cond_signal(&ready);
  pthread_mutex_unlock(&mu);
}

int consume(int i) {
  pthread_mutex_lock(&mu);
  while (items == 0) pthread_cond_wait(&ready, &mu);
  items--;
  pthread_mutex_unlock(&mu);
  if (pthread_mutex_trylock(&locks[i]) == 0) pthread_mutex_unlock(&locks[i]);
  pthread_mutex_lock(&locks[i++]);
  return i;
}
