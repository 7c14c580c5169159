/* Sync wrappers from the apr pack (an httpd-style worker queue), in every
   function of the file; the selected function also gets call-site probes
   around them. Declarations stand in for <apr_thread_mutex.h> and friends
   (golden inputs include no system headers). Every APR call returns an
   apr_status_t: a try or timed acquire got its lock when it returns 0. */
typedef int apr_status_t;
typedef long long apr_interval_time_t;
typedef struct apr_thread_mutex_t apr_thread_mutex_t;
typedef struct apr_thread_cond_t apr_thread_cond_t;
typedef struct apr_thread_rwlock_t apr_thread_rwlock_t;
typedef struct apr_proc_mutex_t apr_proc_mutex_t;
typedef struct apr_global_mutex_t apr_global_mutex_t;
#define APR_SUCCESS 0
apr_status_t apr_thread_mutex_lock(apr_thread_mutex_t *m);
apr_status_t apr_thread_mutex_trylock(apr_thread_mutex_t *m);
apr_status_t apr_thread_mutex_unlock(apr_thread_mutex_t *m);
apr_status_t apr_thread_cond_wait(apr_thread_cond_t *c, apr_thread_mutex_t *m);
apr_status_t apr_thread_cond_timedwait(apr_thread_cond_t *c, apr_thread_mutex_t *m, apr_interval_time_t t);
apr_status_t apr_thread_cond_signal(apr_thread_cond_t *c);
apr_status_t apr_thread_cond_broadcast(apr_thread_cond_t *c);
apr_status_t apr_thread_rwlock_rdlock(apr_thread_rwlock_t *l);
apr_status_t apr_thread_rwlock_trywrlock(apr_thread_rwlock_t *l);
apr_status_t apr_thread_rwlock_unlock(apr_thread_rwlock_t *l);
apr_status_t apr_proc_mutex_lock(apr_proc_mutex_t *m);
apr_status_t apr_proc_mutex_unlock(apr_proc_mutex_t *m);
apr_status_t apr_global_mutex_trylock(apr_global_mutex_t *m);
apr_status_t apr_global_mutex_unlock(apr_global_mutex_t *m);

struct queue {
  apr_thread_mutex_t *one_big_mutex;
  apr_thread_cond_t *not_empty;
  apr_thread_rwlock_t *config;
  int nelts, terminated;
};
static apr_proc_mutex_t *accept_mutex;
static apr_global_mutex_t *log_mutex;

apr_status_t push_request(struct queue *q) {
  apr_status_t rv = apr_thread_mutex_lock(q->one_big_mutex);
  if (rv != APR_SUCCESS) return rv;
  q->nelts++;
  apr_thread_cond_signal(q->not_empty);
  return apr_thread_mutex_unlock(q->one_big_mutex);
}

void terminate_queue(struct queue *q) {
  if (apr_thread_mutex_trylock(q->one_big_mutex) != APR_SUCCESS) return;
  q->terminated = 1;
  apr_thread_cond_broadcast(q->not_empty);
  apr_thread_mutex_unlock(q->one_big_mutex);
}

int pop_request(struct queue *q) {
  int got;
  apr_thread_mutex_lock(q->one_big_mutex);
  while (q->nelts == 0 && !q->terminated)
    if (apr_thread_cond_timedwait(q->not_empty, q->one_big_mutex, 100000) != APR_SUCCESS) break;
  got = q->nelts > 0 ? q->nelts-- : 0;
  apr_thread_mutex_unlock(q->one_big_mutex);
  apr_thread_rwlock_rdlock(q->config);
  apr_thread_rwlock_unlock(q->config);
  if (apr_thread_rwlock_trywrlock(q->config) == APR_SUCCESS) apr_thread_rwlock_unlock(q->config);
  apr_proc_mutex_lock(accept_mutex);
  apr_proc_mutex_unlock(accept_mutex);
  if (apr_global_mutex_trylock(log_mutex) == APR_SUCCESS) apr_global_mutex_unlock(log_mutex);
  return got;
}

void wait_request(struct queue *q) {
  apr_thread_mutex_lock(q->one_big_mutex);
  while (q->nelts == 0) apr_thread_cond_wait(q->not_empty, q->one_big_mutex);
  apr_thread_mutex_unlock(q->one_big_mutex);
}
