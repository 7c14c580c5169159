/*
 * vprof annotation API: mark where your program's units of user-visible work
 * (transactions, requests) begin and end, so vprof can explain their latency.
 *
 *   #include <vprof/vprof.h>
 *
 *   void handle(struct request *r) {
 *     vprof_interval_begin_labeled(r->id, "GET", r->client_name);
 *     ... do the work, on this thread or others ...
 *     vprof_interval_end(r->id);
 *   }
 *
 *   // A worker that picks up a task queued on behalf of a request:
 *   vprof_task_enqueue(task);            // producer, just before pushing `task`
 *   ...
 *   vprof_task_dequeue(task);            // consumer, just after popping it
 *   vprof_interval_join(task->request_id);
 *   run(task);
 *   vprof_interval_leave();
 *
 *   // C++: begins on construction, ends on destruction.
 *   { vprof::IntervalScope s(txn_id, "NewOrder"); commit(txn); }
 *
 * Compile with the flags `vprof config --cflags` prints and link with
 * `vprof config --libs`. Define VPROF_DISABLE to compile every call to nothing.
 *
 * Recording happens only when the program runs under `vprof run` (or with
 * VPROF_TRACE_DIR set). Otherwise each call returns after one predictable branch.
 * No call blocks, allocates on the calling thread's hot path, or fails loudly: a
 * full trace budget drops records and counts them, and the analyzer reports it.
 * All calls are thread-safe and may be called from any thread.
 */
#ifndef VPROF_VPROF_H
#define VPROF_VPROF_H

#include <stdint.h>

#include <vprof/export.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef VPROF_DISABLE

/* A new interval starts now on this thread, and this thread works for it.
 * Requires: `id` is not 0, which means "no interval" to the analyzer (an
 * interval with id 0 is counted and ignored), and names no interval that is
 * still open. An id may be reused once its interval has ended (a pointer to a
 * pooled request object, a connection's handle): a begin after the id's end
 * is a new interval. A begin of an id whose interval is still open is
 * ambiguous (which end is whose cannot be told): the analyzer counts it and
 * ignores it, and the interval keeps its first begin. */
VPROF_API void vprof_interval_begin(uint64_t id);

/* Same as vprof_interval_begin, with labels. `type` groups intervals of the same
 * kind ("NewOrder", "GET"); `client` names who asked for it (a user, a
 * connection). Either may be NULL. The strings are copied into the trace the
 * first time this thread sees each pointer, so pass stable strings (literals or
 * long-lived names); a pointer reused for other text later keeps its first text. */
VPROF_API void vprof_interval_begin_labeled(uint64_t id, const char *type, const char *client);

/* The interval `id` is complete now. It may end on a different thread (and
 * process) than it began on. Requires: `id` was begun. Ending an unknown id, or
 * one whose interval has already ended, is counted by the analyzer and
 * otherwise ignored. */
VPROF_API void vprof_interval_end(uint64_t id);

/* This thread now works on behalf of interval `id` (task-based servers: a
 * worker picked up a piece of the interval's work). Replaces any interval the
 * thread worked for before. */
VPROF_API void vprof_interval_join(uint64_t id);

/* This thread no longer works for any interval. */
VPROF_API void vprof_interval_leave(void);

/* A task is being handed to another thread through a queue: call just before
 * pushing `task`. The consumer calls vprof_task_dequeue with the same pointer
 * just after popping it; the pair forms a created-by edge, and the time between
 * is the interval's queue wait. `task` only needs to be unique while queued. */
VPROF_API void vprof_task_enqueue(const void *task);
VPROF_API void vprof_task_dequeue(const void *task);

#else /* VPROF_DISABLE: every call compiles to nothing, arguments unevaluated. */

#define vprof_interval_begin(id) ((void)0)
#define vprof_interval_begin_labeled(id, type, client) ((void)0)
#define vprof_interval_end(id) ((void)0)
#define vprof_interval_join(id) ((void)0)
#define vprof_interval_leave() ((void)0)
#define vprof_task_enqueue(task) ((void)0)
#define vprof_task_dequeue(task) ((void)0)

#endif /* VPROF_DISABLE */

#ifdef __cplusplus
} /* extern "C" */

namespace vprof {

/* Begins interval `id` on construction and ends it on destruction (also when
 * an exception leaves the scope). Not copyable. */
class IntervalScope {
 public:
  explicit IntervalScope(uint64_t id, const char *type = nullptr,
                         const char *client = nullptr)
      : id_(id) {
#ifndef VPROF_DISABLE
    if (type || client)
      vprof_interval_begin_labeled(id, type, client);
    else
      vprof_interval_begin(id);
#else
    (void)type;
    (void)client;
#endif
  }
  ~IntervalScope() {
#ifndef VPROF_DISABLE
    vprof_interval_end(id_);
#endif
  }
  IntervalScope(const IntervalScope &) = delete;
  IntervalScope &operator=(const IntervalScope &) = delete;
  uint64_t id() const { return id_; }

 private:
  uint64_t id_;
};

/* Joins interval `id` for the scope's lifetime, then leaves. */
class JoinScope {
 public:
  explicit JoinScope(uint64_t id) {
#ifndef VPROF_DISABLE
    vprof_interval_join(id);
#else
    (void)id;
#endif
  }
  ~JoinScope() {
#ifndef VPROF_DISABLE
    vprof_interval_leave();
#endif
  }
  JoinScope(const JoinScope &) = delete;
  JoinScope &operator=(const JoinScope &) = delete;
};

} /* namespace vprof */
#endif /* __cplusplus */

#endif /* VPROF_VPROF_H */
