/*
 * vprof probe entry points: what code rewritten by `vprof instrument` calls.
 * Internal: users annotate with <vprof/vprof.h>; this header is included by the
 * instrumenter's generated code and by the runtime itself. Ids are integers
 * assigned by the instrumenter and named in its manifest.
 *
 * A function or call-site probe tests inline that the process records, then
 * calls its body, one out-of-line copy in each file: load the thread's
 * buffer pointer, read the clock, write one 16-byte slot. No lock, no
 * allocation, no syscall; the runtime's slow path runs only when the thread
 * has no buffer yet, its chunk is full, or the recorder is off.
 *
 * Windowed recording (VPROF_SAMPLE) costs the fast path nothing. Between
 * windows a probe stops at its inline test (vprof_records), which compares
 * the shared window word with the one the thread saw say "off": nothing is called,
 * nothing written, and the reader rebuilds the stack a thread had when
 * recording resumed from the exits that follow (runtime/window.h).
 * A process that does not record (vprof_rt_idle) stops at the same test.
 *
 * Signal safety: a probe that interrupts another probe on the same thread (a
 * signal handler running instrumented code) sees `busy` set and is dropped and
 * counted, so the two never write the same slot. A probe sets it before it
 * reads its clock, so a handler's records come before that time, never
 * between the clock and the record.
 *
 * Generated code shapes (the instrumenter's headers have full examples):
 *   C++ function:   { vprof::detail::FnScope vprof_fn_(17); ...body... }
 *   C function:     { __attribute__((cleanup(vprof_fn_cleanup), unused)) const vprof_u32 vprof_fn_ =
 *                         (vprof_fn_enter(17), 17u); ...body... }
 *   call site:      vprof_site_begin(42); call(...); vprof_site_end(42);
 *                   (a call that recorded nothing leaves one SITE_SPAN slot)
 *   a site whose callee is instrumented function 17:
 *                   vprof_site_begin(VPROF_SITE_CALLS(42, 17)); ...
 *                   vprof_site_end(VPROF_SITE_CALLS(42, 17));
 *                   (the callee's enter and the site's end read no clock:
 *                   they take the time of the slot just before them)
 *   sync:           vprof_sync_wait_begin(&m, VPROF_SYNC_MUTEX); lock(&m);
 *                   vprof_sync_wait_end(&m, VPROF_SYNC_MUTEX, 1);
 *                   vprof_sync_release(&m, VPROF_SYNC_MUTEX); unlock(&m);
 */
#ifndef VPROF_PROBES_H
#define VPROF_PROBES_H

/* No system header, here or in trace_format.h: this header comes first in
 * every rewritten file, ahead of the file's feature-test macros, and must
 * not change what the file's own includes see (trace_format.h says more).
 * Builtin types only: vprof_u32 and vprof_u64 are uint32_t and uint64_t. */
#include <vprof/export.h>
#include <vprof/trace_format.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-thread recorder state: one cache line, the only one the probe fast
 * path touches. Owned by one thread; never written by others. */
struct vprof_thread {
  struct vprof_slot *pos;   /* next free slot */
  struct vprof_slot *end;   /* end of the current chunk */
  vprof_u64 tsc_base;       /* timestamps are stored relative to this */
  vprof_u32 busy;           /* re-entry guard (signal handlers) */
  vprof_u32 tid;
  struct vprof_slot *start; /* first slot of the current ring: slots from here to pos are this pass's */
  /* Windowed recording (runtime/window.h): the window word the thread saw
   * say "off" (VPROF_NOT_OFF while it records), and the shared word itself.
   * While the two are equal every probe stops at its inline test. */
  vprof_u64 off_word;
  const volatile vprof_u64 *window_word;
  /* Cold state follows, owned by the runtime (runtime/recorder.h). */
};
/* No window word equals it (its state bits say "in full", its number and
 * tick are out of reach of a sampled word, and a full one is 3). */
#define VPROF_NOT_OFF (~(vprof_u64)0)

/* The calling thread's state; &vprof_rt_none (never NULL) before its first
 * record and after its file is closed. initial-exec: the runtime is a shared
 * library loaded at start-up, so the variable lives in static TLS and is one
 * %fs-relative load away. */
VPROF_API extern __thread struct vprof_thread *vprof_tls __attribute__((tls_model("initial-exec")));

/* The state of every thread that has none: `pos == end`, so a probe that gets
 * past its inline test takes the slow path, which makes the thread's state.
 * In a process that never records (vprof_rt_idle) its `off_word` equals its
 * window word, and every probe stops at the test. One test for both, with
 * no branch on a NULL state. */
VPROF_API extern struct vprof_thread vprof_rt_none;

/* Slow path: set up the thread's buffer, switch chunks, or count a drop.
 * Writes the record when it can. */
VPROF_API void vprof_rt_emit_slow(vprof_u32 kind, vprof_u64 arg);

/* Nonzero once start-up has decided this process never records (no trace
 * directory, or one it cannot use): vprof_rt_none then stops every probe at
 * its inline test. */
VPROF_API extern int vprof_rt_idle;

/* Nonzero when every wait is recorded (VPROF_MIN_WAIT_NS=0): an acquire that
 * its sync pack tries first (a trylock, then the timed call only when that
 * fails) is then made as written, so that uncontended acquires are recorded
 * too. */
VPROF_API extern int vprof_rt_every_wait;

/* Sync events need the ownership map: out of line, in the runtime, while a
 * thread records (vprof_sync_wait_begin and the rest, below, test inline
 * first). `obj` is the address of the lock / condvar / semaphore / queue;
 * `role` a VPROF_SYNC_* value. */
VPROF_API void vprof_rt_sync_wait_begin(const void *obj, vprof_u32 role);
/* `acquired` is 0 when a try-lock failed or a timed wait timed out. */
VPROF_API void vprof_rt_sync_wait_end(const void *obj, vprof_u32 role, int acquired);
/* Call just before the real release / unlock / signal / post. */
VPROF_API void vprof_rt_sync_release(const void *obj, vprof_u32 role);
/* A condition wait on `obj` that gives up `mutex` and takes it back before it
 * returns (pthread_cond_wait's second argument): the mutex's release, then
 * the wait's begin (its end is vprof_rt_sync_wait_end's). */
VPROF_API void vprof_rt_sync_cond_wait_begin(const void *obj, vprof_u32 role, const void *mutex);

/* A wait's or release's arg: the role in the top byte, the object's address
 * in the rest (trace_format.h). */
static inline vprof_u64 vprof_sync_arg(const void *obj, vprof_u32 role) {
  return ((vprof_u64)role << 56) | ((vprof_u64)(__UINTPTR_TYPE__)obj & VPROF_OBJ_MASK);
}

/* Which instrumentation this program was built from: a constructor in every
 * rewritten translation unit calls it (instrumenter/forms.h), and the runtime
 * keeps it in the process file, so `vprof run` and `vprof analyze` find the
 * manifest that names the trace's ids, and refuse one from another run. */
VPROF_API void vprof_register_manifest(const char *id, const char *path);

/* CLOCK_MONOTONIC in ns, read by the runtime: the clock of targets with no
 * cycle counter read here (clock_gettime would need <time.h>). */
VPROF_API vprof_u64 vprof_rt_clock_ns(void);

/* What a rewritten file calls is inline whatever the caller's size (left to
 * the compiler, GCC kept vprof_site_end and vprof_emit out of line in
 * MariaDB's largest functions, a call per probe even when nothing recorded),
 * and it is only the test that the thread records (vprof_records). The rest
 * of a probe (the fast path and the slow path) is out of line, one copy of each probe in each file: inline at every call site it
 * was ~490 bytes a site (PostgreSQL's exec_simple_query grew from 1.9 to
 * 32 KB), and the instrumented functions' hot code missed the instruction
 * cache, recording or not (docs/performance.md: the probes out of line,
 * counted by cachegrind). */
#define VPROF_INLINE static inline __attribute__((always_inline))
#define VPROF_OUT_OF_LINE static __attribute__((noinline, unused))

VPROF_INLINE vprof_u64 vprof_now(void) {
#if defined(VPROF_CONTROLLED_CLOCK)
  return vprof_rt_clock_ns(); /* the runtime's own tests: a clock the test sets (runtime/clock.cc) */
#elif defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  vprof_u64 v;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return vprof_rt_clock_ns();
#endif
}

/* Fills one slot at tick `now` and clears the flag. Requires: the flag,
 * taken by vprof_try_hold (which found room under it). */
VPROF_INLINE void vprof_fill_slot(struct vprof_thread *t, vprof_u32 kind, vprof_u64 arg, vprof_u64 now) {
  /* declarations first: C trees build with -Wdeclaration-after-statement */
  struct vprof_slot *s;
  s = t->pos;
  t->pos = s + 1;
  s->arg = arg;
  /* word 0 last: a kill between the two stores leaves a zero kind, not a torn record */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  s->w0 = ((now - t->tsc_base) << VPROF_TS_SHIFT) | kind;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->busy = 0;
}

/* Sets the flag: from here a signal handler's probe on this thread is
 * dropped (counted), so a record's time read after it is later than every
 * record before it. Read before it, a handler's records could come between
 * the clock and the record (the reader clamped them: 15 000-20 000 a run of
 * a test whose handler ran every 20 us beside its thread's probes). */
VPROF_INLINE void vprof_hold(struct vprof_thread *t) {
  t->busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* A test's stand-in for a signal that lands between a probe's look at its
 * flag and the flag (tests/runtime/hold_race.cc); nothing otherwise. */
#ifndef VPROF_TEST_BEFORE_HOLD
#define VPROF_TEST_BEFORE_HOLD() ((void)0)
#endif

/* The fast path's start: takes the flag when the thread can write a slot
 * here: it has a state (vprof_rt_none's flag is always set), is not inside
 * a probe, and has room. The room is looked at under the flag: a signal
 * handler's probe that ran between a look before the flag and the flag
 * could fill the ring to its end, park the end at the position (window.cc)
 * or start dropping (thread_state.cc), and the record then went past the
 * end, into the slots kept for the drop and exit markers, or past the ring.
 * Returns 0 with the flag as it was: the slow path takes the record. */
VPROF_INLINE int vprof_try_hold(struct vprof_thread *t) {
  if (__builtin_expect(t->busy != 0, 0)) return 0;
  VPROF_TEST_BEFORE_HOLD();
  vprof_hold(t);
  if (__builtin_expect(t->pos < t->end, 1)) return 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->busy = 0;
  return 0;
}
/* Any other probe: the slow path (a thread with no state yet, one whose
 * window moved, one whose chunk is full). */
VPROF_INLINE void vprof_slow(vprof_u32 kind, vprof_u64 arg) { vprof_rt_emit_slow(kind, arg); }

VPROF_INLINE void vprof_emit(vprof_u32 kind, vprof_u64 arg) {
  struct vprof_thread *t = vprof_tls;
  if (vprof_try_hold(t)) {
    vprof_fill_slot(t, kind, arg, vprof_now());
  } else {
    vprof_slow(kind, arg);
  }
}

/* A call site's word: its id, and in the high half the id of the function
 * it calls when that function is instrumented too (0: none, or not known).
 * The begin's slot keeps the word as its arg (a reader takes the id from the
 * low half); a SITE_SPAN's arg puts the call's length there instead. */
#define VPROF_SITE_CALLS(site, fn) ((vprof_u64)(fn) << 32 | (vprof_u32)(site))

/* The slot just written on this ring pass, when it is a `kind` whose arg's
 * bits under `mask` are `arg`: the tick it holds. 0 otherwise (and on a new
 * pass). */
VPROF_INLINE vprof_u64 vprof_newest_tick(const struct vprof_thread *t, vprof_u32 kind, vprof_u64 arg,
                                         vprof_u64 mask) {
  const struct vprof_slot *b = t->pos - 1;
  if (b >= t->start && (b->arg & mask) == arg && (b->w0 & VPROF_KIND_MASK) == kind)
    return (b->w0 >> VPROF_TS_SHIFT) + t->tsc_base;
  return 0;
}

/* A function's enter right after the begin of a site that names it (the
 * begin's word has this id in its high half; nothing recorded in between:
 * its arguments called nothing instrumented) takes the begin's time: the
 * call was timed once already. */
VPROF_INLINE void vprof_fn_enter_body(vprof_u32 id) {
  struct vprof_thread *t = vprof_tls;
  vprof_u64 now;
  if (vprof_try_hold(t)) {
    now = vprof_newest_tick(t, VPROF_K_SITE_BEGIN, VPROF_SITE_CALLS(0, id), ~(vprof_u64)0 << 32);
    vprof_fill_slot(t, VPROF_K_FUNC_ENTER, id, now != 0 ? now : vprof_now());
  } else {
    vprof_slow(VPROF_K_FUNC_ENTER, id);
  }
}

/* The calls of one site in a row with nothing recorded inside or between
 * them (a loop around a library call: a spin on clock_gettime) are one
 * SITE_RUN record, not a SITE_SPAN each: the recorder's writes and pauses
 * do not grow with the loop. `b` (> t->start) is the begin of the call that
 * ends at `now`, begun at `began`. When the slot before it is a SITE_SPAN
 * of the same site, the two become a run (its head and extension); when the
 * two before it are a run of the site, the call is added and its begin
 * taken back; otherwise (or when the run would pass 2^32 ticks) the begin
 * becomes a span, as vprof_site_end_body's. Each step leaves a record a
 * reader reads whole if the thread is killed between its stores: the
 * extension (kind bits 0) is written first, the head's kind last; a
 * taken-back begin is zeroed before the run grows. Called with t->busy set,
 * which it clears; out of line and last, so that the common end keeps no
 * frame. */
static __attribute__((noinline, cold, unused)) void vprof_site_end_in_row(struct vprof_thread *t,
                                                                          struct vprof_slot *b, vprof_u32 id,
                                                                          vprof_u64 now, vprof_u64 began) {
  struct vprof_slot *p = b - 1, *h = b - 2;
  const vprof_u64 len = now - began;
  vprof_u64 whole;
  if ((p->w0 & VPROF_KIND_MASK) == VPROF_K_SITE_SPAN && (vprof_u32)p->arg == id &&
      (whole = now - ((p->w0 >> VPROF_TS_SHIFT) + t->tsc_base)) < (1ull << 32)) {
    b->w0 = ((p->arg >> 32) + len) << VPROF_TS_SHIFT; /* kind bits 0: data ends here until the head says run */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    b->arg = id | (2ull << 32);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    p->arg = id | (whole << 32);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    p->w0 = (p->w0 & ~VPROF_KIND_MASK) | VPROF_K_SITE_RUN;
  } else if ((p->w0 & VPROF_KIND_MASK) == 0 && h >= t->start && (h->w0 & VPROF_KIND_MASK) == VPROF_K_SITE_RUN &&
             (vprof_u32)h->arg == id &&
             (whole = now - ((h->w0 >> VPROF_TS_SHIFT) + t->tsc_base)) < (1ull << 32)) {
    /* A slot with kind bits 0 is only ever an extension: the one before it
     * is its record's head. */
    b->w0 = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    p->w0 = ((p->w0 >> VPROF_TS_SHIFT) + len) << VPROF_TS_SHIFT;
    p->arg += 1ull << 32;
    h->arg = id | (whole << 32);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->pos = b;
  } else {
    b->arg = id | (len << 32);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    b->w0 = (b->w0 & ~VPROF_KIND_MASK) | VPROF_K_SITE_SPAN;
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->busy = 0;
}

/* A call site's end. When the newest slot of this ring pass is the same
 * site's begin (the callee recorded nothing: most calls of a session's
 * sites), that slot becomes a SITE_SPAN holding the call's length, and no
 * slot is written: half the records to write out and to read. The arg goes
 * first, then the kind: a kill in between leaves the begin (the reader reads
 * its id from the low 32 bits), as a kill during the call would. When the
 * newest slot is the exit of the function the site names, the end takes its
 * time and reads no clock. */
VPROF_INLINE void vprof_site_end_body(vprof_u64 site) {
  struct vprof_thread *t = vprof_tls;
  struct vprof_slot *b;
  vprof_u64 now, began;
  const vprof_u32 id = (vprof_u32)site;
  if (!vprof_try_hold(t)) {
    vprof_slow(VPROF_K_SITE_END, id);
    return;
  }
  if ((site >> 32) != 0 && (now = vprof_newest_tick(t, VPROF_K_FUNC_EXIT, site >> 32, ~(vprof_u64)0)) != 0) {
    vprof_fill_slot(t, VPROF_K_SITE_END, id, now);
    return;
  }
  now = vprof_now();
  b = t->pos - 1;
  if (b >= t->start && b->arg == site && (b->w0 & VPROF_KIND_MASK) == VPROF_K_SITE_BEGIN) {
    began = (b->w0 >> VPROF_TS_SHIFT) + t->tsc_base;
    if (now - began < (1ull << 32)) {
      /* Calls of this site in a row are rare; the test stays one compare
       * of the slot before: a span of this site, or a run's extension
       * (which repeats the site's id). */
      if (__builtin_expect(b > t->start && (vprof_u32)(b - 1)->arg == id, 0)) {
        vprof_site_end_in_row(t, b, id, now, began);
        return;
      }
      b->arg = id | ((now - began) << 32);
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      b->w0 = (b->w0 & ~VPROF_KIND_MASK) | VPROF_K_SITE_SPAN;
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      t->busy = 0;
      return;
    }
  }
  vprof_fill_slot(t, VPROF_K_SITE_END, id, now);
}

/* The probes a rewritten file calls: the test inline, the body out of line
 * (VPROF_OUT_OF_LINE: "ool"). The test: the thread goes on while it
 * records, or when the shared window word is no longer the "off" it saw (a
 * window may have opened: the slow path looks); a thread with no state
 * (vprof_rt_none) when the process records. Between windows, and in a
 * process that never records, a probe is thus four loads, a compare and a
 * branch; recording, a call more than the body. */
VPROF_OUT_OF_LINE void vprof_fn_enter_ool(vprof_u32 id) { vprof_fn_enter_body(id); }
VPROF_OUT_OF_LINE void vprof_fn_exit_ool(vprof_u32 id) { vprof_emit(VPROF_K_FUNC_EXIT, id); }
VPROF_OUT_OF_LINE void vprof_site_begin_ool(vprof_u64 site) { vprof_emit(VPROF_K_SITE_BEGIN, site); }
VPROF_OUT_OF_LINE void vprof_site_end_ool(vprof_u64 site) { vprof_site_end_body(site); }
VPROF_INLINE int vprof_records(void) {
  const struct vprof_thread *t = vprof_tls;
  return t->off_word != *t->window_word;
}
/* Dormant probes (docs/iterate.md, "Build once"): an iterate session builds
 * the probes of more functions than a run records, and each run names the
 * ones it leaves dormant (VPROF_DORMANT, read once at start-up, before any
 * probe records: an enter and its exit always agree). A dormant probe stops
 * at the test of its id's bit, a constant offset into a page of zeros when
 * nothing is dormant: two loads and a branch, nothing called. Ids at or past
 * VPROF_DORMANT_IDS are never dormant (the test folds away: ids are
 * constants; VPROF_DORMANT_IDS is trace_format.h's).
 * The test is compiled only into files rewritten for such a build, whose
 * first line includes <vprof/dormant_probes.h> (VPROF_DORMANT_PROBES): it
 * costs a recording probe about 1 ns (docs/performance.md), which a build
 * of `vprof instrument` alone does not pay. */
VPROF_API extern unsigned char vprof_rt_dormant_fns[VPROF_DORMANT_IDS / 8];
VPROF_API extern unsigned char vprof_rt_dormant_sites[VPROF_DORMANT_IDS / 8];
#ifdef VPROF_DORMANT_PROBES
VPROF_INLINE int vprof_dormant(const unsigned char *bits, vprof_u32 id) {
  return id < VPROF_DORMANT_IDS && __builtin_expect((bits[id >> 3] >> (id & 7)) & 1, 0);
}
#else
VPROF_INLINE int vprof_dormant(const unsigned char *bits, vprof_u32 id) {
  (void)bits;
  (void)id;
  return 0;
}
#endif
/* A function whose body such a file writes twice (instrumenter/edit_plan.cc,
 * two_versions) tests this once at entry: dormant, it runs the original
 * body, with no probe of its own or of its sites. */
VPROF_INLINE int vprof_fn_is_dormant(vprof_u32 id) { return vprof_dormant(vprof_rt_dormant_fns, id); }
/* Most such bodies test this instead: the original body also runs while the
 * thread does not record (between windows, or in a process that never
 * records), so that a function costs one test there as it does dormant,
 * whatever its sites run. Not a body with a static local (both copies would
 * run in one process) nor one whose frames the analysis needs from their
 * entry (the root, the interval API's callers): edit_plan.cc, two_versions. */
VPROF_INLINE int vprof_fn_runs_plain(vprof_u32 id) {
  return vprof_dormant(vprof_rt_dormant_fns, id) || !vprof_records();
}
/* The probes of the instrumented copy of a body written twice carry their
 * id as VPROF_LIVE(id) (instrumenter/forms.cc): that copy runs only when
 * its function is on, and a run turns a site on with its function
 * (iterate/prebuild.h, run_probes), so they test no bit: the mark puts the
 * id past VPROF_DORMANT_IDS, where the test folds away, and comes off before
 * the record is written (ids are constants: both cost nothing). A recorded
 * site pair paid about 2 ns for the test (docs/performance.md). */
#define VPROF_LIVE_BIT 0x80000000u
#define VPROF_LIVE(id) ((vprof_u32)(id) | VPROF_LIVE_BIT)
VPROF_INLINE void vprof_fn_enter(vprof_u32 id) {
  if (!vprof_dormant(vprof_rt_dormant_fns, id) && vprof_records()) vprof_fn_enter_ool(id & ~VPROF_LIVE_BIT);
}
VPROF_INLINE void vprof_fn_exit(vprof_u32 id) {
  if (!vprof_dormant(vprof_rt_dormant_fns, id) && vprof_records()) vprof_fn_exit_ool(id & ~VPROF_LIVE_BIT);
}
VPROF_INLINE void vprof_site_begin(vprof_u64 site) {
  if (!vprof_dormant(vprof_rt_dormant_sites, (vprof_u32)site) && vprof_records())
    vprof_site_begin_ool(site & ~(vprof_u64)VPROF_LIVE_BIT);
}
VPROF_INLINE void vprof_site_end(vprof_u64 site) {
  if (!vprof_dormant(vprof_rt_dormant_sites, (vprof_u32)site) && vprof_records())
    vprof_site_end_ool(site & ~(vprof_u64)VPROF_LIVE_BIT);
}

/* The sync probes stop at the same test, and then call the runtime: the
 * ownership map is there. Between windows nothing is recorded of a wait or a
 * release; a wait that ends in a window gets its begin written then, at the
 * time recording resumed (runtime/recorder.cc). */
VPROF_INLINE void vprof_sync_wait_begin(const void *obj, vprof_u32 role) {
  if (vprof_records()) vprof_rt_sync_wait_begin(obj, role);
}
VPROF_INLINE void vprof_sync_cond_wait_begin(const void *obj, vprof_u32 role, const void *mutex) {
  if (vprof_records()) vprof_rt_sync_cond_wait_begin(obj, role, mutex);
}
VPROF_INLINE void vprof_sync_wait_end(const void *obj, vprof_u32 role, int acquired) {
  if (vprof_records()) vprof_rt_sync_wait_end(obj, role, acquired);
}
VPROF_INLINE void vprof_sync_release(const void *obj, vprof_u32 role) {
  if (vprof_records()) vprof_rt_sync_release(obj, role);
}

/* For C: `__attribute__((cleanup(vprof_fn_cleanup))) vprof_u32 v = ID;` runs the
 * exit probe on every way out of the scope (return, goto, break out of a
 * statement expression); not on longjmp, which the analyzer tolerates. */
VPROF_INLINE void vprof_fn_cleanup(const vprof_u32 *id) { vprof_fn_exit(*id); }

#ifdef __cplusplus
} /* extern "C" */

namespace vprof {
namespace detail {
/* Function probe: enter on construction, exit on every way out (return,
 * exception). */
class FnScope {
 public:
  __attribute__((always_inline)) explicit FnScope(vprof_u32 id) : id_(id) { vprof_fn_enter(id); }
  __attribute__((always_inline)) ~FnScope() { vprof_fn_exit(id_); }
  FnScope(const FnScope &) = delete;
  FnScope &operator=(const FnScope &) = delete;

 private:
  vprof_u32 id_;
};

/* Call-site probe: the same shape for one call's duration. */
class SiteScope {
 public:
  __attribute__((always_inline)) explicit SiteScope(vprof_u64 site) : site_(site) { vprof_site_begin(site); }
  __attribute__((always_inline)) ~SiteScope() { vprof_site_end(site_); }
  SiteScope(const SiteScope &) = delete;
  SiteScope &operator=(const SiteScope &) = delete;

 private:
  vprof_u64 site_;
};
}  // namespace detail
}  // namespace vprof
#endif /* __cplusplus */

#endif /* VPROF_PROBES_H */
