// Start-up, the probe slow path, the annotation API (vprof.h) and the sync
// probes (probes.h).
#include "recorder.h"

#include "common/trace_dir_rules.h"
#include "dormant.h"
#include "switches.h"
#include "window.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vprof/vprof.h>

#include <algorithm>

// Until start-up decides: every probe calls in (the runtime is not on yet).
static const vprof_u64 none_word = vprof::rt::kWindowFull;
// Its flag is always set: a probe of a thread with no state goes to the slow
// path at its first look (probes.h, vprof_try_hold), which writes nothing here.
struct vprof_thread vprof_rt_none = {nullptr, nullptr, 0, 1, 0, nullptr, VPROF_NOT_OFF, &none_word};
__thread struct vprof_thread *vprof_tls __attribute__((tls_model("initial-exec"))) = &vprof_rt_none;
int vprof_rt_idle = 0;
int vprof_rt_every_wait = 0;

namespace vprof::rt {

Process g;

ThreadState *current_thread() {
  if (vprof_tls != &vprof_rt_none) return reinterpret_cast<ThreadState *>(vprof_tls);
  return thread_create();
}

// The tick of the thread's newest record in its current ring (0: none):
// what the thread's next record's time must not go below. A multi-slot record's last
// slot is payload; emit_slots notes where such a record ended.
static uint64_t newest_tick(const ThreadState *t) {
  if (!t->has_ring() || t->hot.pos <= t->hot.start) return 0;
  if (t->multi_end == t->hot.pos) return t->multi_tick;
  const vprof_slot *last = t->hot.pos - 1;
  // A run's extension (kind bits 0, probes.h) is its head's payload.
  if ((last->w0 & VPROF_KIND_MASK) == 0 && last - 1 >= t->hot.start) --last;
  const vprof_slot &s = *last;
  const uint64_t tick = (s.w0 >> VPROF_TS_SHIFT) + t->hot.tsc_base;
  // A call's span and a recorder's pause end after their record's time.
  switch (s.w0 & VPROF_KIND_MASK) {
    case VPROF_K_SITE_SPAN:
    case VPROF_K_SITE_RUN: return tick + (s.arg >> 32);
    case VPROF_K_RECORDER: return tick + s.arg;
    default: return tick;
  }
}

// A record's time, called with hot.busy set. A signal handler's probe may
// have recorded between the caller's clock read and the flag (a window's
// record: its time is chosen, the switches drained, and only then written):
// the record goes after its records, so not before their time (the reader
// clamped such records, and warned, on a server whose handlers run
// instrumented code). Never past the clock: a pause's end may be.
static uint64_t not_before_newest(const ThreadState *t, uint64_t now) {
  const uint64_t newest = newest_tick(t);
  return newest > now ? std::min(newest, vprof_now()) : now;
}

bool emit_slots(ThreadState *t, uint32_t kind, uint64_t arg, uint64_t now,
                const vprof_slot *ext, unsigned n_ext, bool counted) {
  if (t->hot.busy) {  // re-entered from a signal handler mid-record
    if (counted) thread_count_reentry(t);
    return false;
  }
  // Between windows the ring's end is parked at its position (window.h):
  // a record now would switch a ring that is not full. Nothing may write
  // then; if something does, it is counted, not written.
  if (t->parked_end) {
    if (counted) thread_count_drop(t);
    return false;
  }
  // The ring is full: a slow moment anyway. Switch it here, then drain the
  // context switches into the fresh ring at this record's time (they go
  // before it, in time order). Only into room a switch made: a switch
  // record never costs a chunk of the budget or a drop of its own.
  if (t->hot.pos + 1 + n_ext > t->hot.end && t->perf && !t->draining && !t->dropping) {
    t->hot.busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    now = not_before_newest(t, now);  // before the switch: the newest is in this ring
    // Parked since the test above: a signal handler's probe looked at the
    // window and parked the ring's end (window_set_seen).
    bool switched = !t->parked_end && thread_next_chunk(t);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->hot.busy = 0;
    if (switched) switches_drain(t, now);
  }
  t->hot.busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  now = not_before_newest(t, now);
  bool ok = true;
  // Parked meanwhile (a handler's probe, during the drain above or before
  // the flag): the end is the position, and a switch now would leave the
  // parked end pointing into the other ring (a later unpark then let probes
  // write past this one's end, and the file lost a chunk's tail).
  if (t->parked_end || (t->hot.pos + 1 + n_ext > t->hot.end && !thread_next_chunk(t))) {
    if (counted) {
      if (t->parked_end) thread_count_reentry(t);  // a handler's doing, not a full budget
      else thread_count_drop(t);
    }
    // A switch this record paid for goes unmarked with it: a later record
    // is not its time (its pause, from there, ran past the records after it).
    if (!t->draining) t->pause_ticks = 0;
    ok = false;
  } else {
    vprof_slot *s = t->hot.pos;
    for (unsigned i = 0; i < n_ext; ++i) s[1 + i] = ext[i];
    s->arg = arg;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    s->w0 = ((now - t->hot.tsc_base) << VPROF_TS_SHIFT) | kind;
    t->hot.pos = s + 1 + n_ext;
    if (n_ext) {
      t->multi_end = t->hot.pos;
      t->multi_tick = now;
    }
    // A ring switch paid for by this record: the pause follows it, from its
    // time (the switch began right after `now`), so the thread's records stay
    // in time order. Not while draining switches: the record that switched
    // comes after them.
    if (t->pause_ticks && !t->draining) {
      write_recorder(t, now, t->pause_ticks);
      t->pause_ticks = 0;
    }
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->hot.busy = 0;
  return ok;
}

// One record at a given tick, for the sync probes that must stamp the record
// and the ownership map with the same tick.
static inline void emit_at(ThreadState *t, uint32_t kind, uint64_t arg, uint64_t now) {
  if (vprof_try_hold(&t->hot))
    vprof_fill_slot(&t->hot, kind, arg, now);
  else
    emit_slots(t, kind, arg, now, nullptr, 0);
}

// One record at `now` or, when a signal handler's probe recorded since `now`
// was read, after its records (emit_slots): the annotation API's records (an
// interval's end drains the context switches between the two) and a wait's
// begin dated back to when recording resumed. (A probe reads its clock
// under its flag: probes.h.)
static void emit_after(ThreadState *t, uint32_t kind, uint64_t arg, uint64_t now) {
  emit_slots(t, kind, arg, now, nullptr, 0);
}

static uint32_t intern(ThreadState *t, const char *s) {
  if (!s) return 0;
  unsigned h = (unsigned)((reinterpret_cast<uintptr_t>(s) >> 3) % ThreadState::kStrings);
  for (unsigned i = 0; i < ThreadState::kStrings; ++i) {
    InternedString &e = t->strings[(h + i) % ThreadState::kStrings];
    if (e.ptr == s) return e.id;
    if (!e.ptr) break;
  }
  size_t len = strnlen(s, 255);
  vprof_slot payload[16] = {};
  memcpy(payload, s, len);
  uint32_t id = ++t->next_string_id;
  const uint64_t arg = id | ((uint64_t)len << 32);
  // Dropped: the interval goes unlabeled rather than naming a lost string.
  // Not counted: the program asked for one record, the interval's begin,
  // whose own drop is (each label's drop counted too read as up to 87% more
  // records than were written, under VPROF_BUFFER_MB=1).
  if (!emit_slots(t, VPROF_K_STRING, arg, vprof_now(), payload,
                  (unsigned)(vprof_record_slots(VPROF_K_STRING, arg) - 1), false))
    return 0;
  for (unsigned i = 0; i < ThreadState::kStrings; ++i) {
    InternedString &e = t->strings[(h + i) % ThreadState::kStrings];
    if (!e.ptr) {
      e = {s, id};
      break;
    }
  }  // a full table re-sends the string next time: correct, only slower
  return id;
}


static inline bool on() { return g.active.load(std::memory_order_relaxed); }

// Whether the thread records now (window.h): one compare unless the window
// changed since it last looked.
static inline bool recording(ThreadState *t) {
  const uint64_t w = *window_word_ptr;
  return w == t->observed ? window_recording(w) : window_observe(t);
}

// --- start-up and shutdown --------------------------------------------------

// measure_floor's scratch thread, at namespace scope: a function-local static
// with a constructor (ThreadState has member initialisers) is guarded by
// __cxa_guard_acquire, which links libstdc++ into every recorded program.
constexpr unsigned kFloorPairs = 1000;
static vprof_slot floor_scratch[2 * kFloorPairs + 64];
// A whole ThreadState (no switch ring): vprof_interval_end reads past `hot`.
static ThreadState floor_state;

static void measure_floor() {
  // The measurement floor (docs/method.md, "Beyond the papers"): cost of one
  // probe pair and of an empty interval, measured through the real fast path
  // into a scratch buffer.
  constexpr unsigned kPairs = kFloorPairs, kBatches = 7;
  vprof_slot *scratch = floor_scratch;
  vprof_thread &tmp = floor_state.hot;
  vprof_tls = &tmp;
  double probe[kBatches], interval[kBatches];
  for (unsigned b = 0; b < kBatches; ++b) {
    tmp.start = tmp.pos = scratch;
    tmp.end = scratch + 2 * kPairs + 32;
    tmp.tsc_base = vprof_now();
    uint64_t t0 = vprof_now();
    for (unsigned i = 0; i < kPairs; ++i) {
      vprof_fn_enter(1);
      vprof_fn_exit(1);
    }
    uint64_t t1 = vprof_now();
    tmp.pos = scratch;
    for (unsigned i = 0; i < kPairs; ++i) {
      vprof_interval_begin(i + 1);
      vprof_interval_end(i + 1);
    }
    uint64_t t2 = vprof_now();
    probe[b] = (double)(t1 - t0) / kPairs / g.ticks_per_ns;
    interval[b] = (double)(t2 - t1) / kPairs / g.ticks_per_ns;
  }
  vprof_tls = &vprof_rt_none;
  // Median of the batches: robust to one batch hit by an interrupt.
  auto median = [](double *v, unsigned n) {
    for (unsigned i = 1; i < n; ++i)
      for (unsigned j = i; j > 0 && v[j - 1] > v[j]; --j) {
        double x = v[j];
        v[j] = v[j - 1];
        v[j - 1] = x;
      }
    return v[n / 2];
  };
  g.probe_pair_ns = median(probe, kBatches);
  g.empty_interval_ns = median(interval, kBatches);
}

// A trace directory made by a process running as root is writable by all,
// sticky as /tmp is (1777): a server that drops root (httpd's children as
// www-data) makes its threads' files as its new user.
static bool make_dirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(buf, 0755);
    *p = '/';
  }
  if (mkdir(buf, 0755) == 0) {
    if (geteuid() == 0) chmod(buf, VPROF_TRACE_DIR_MODE_AS_ROOT);
    return true;
  }
  return errno == EEXIST;
}

static void on_thread_exit(void *p) { thread_finish(static_cast<ThreadState *>(p)); }

static void on_process_exit() {
  g.exiting.store(true, std::memory_order_relaxed);
  ThreadState *self = vprof_tls != &vprof_rt_none ? reinterpret_cast<ThreadState *>(vprof_tls) : nullptr;
  threads_mark_process_exit(self);
  if (self) thread_finish(self);
  maps_file_write();  // libraries loaded since start-up (a server's modules)
  // Without a process file (ours or p-0.vpp), stderr is the only place left to say it.
  uint64_t threads = __atomic_load_n(g.loss.threads, __ATOMIC_RELAXED);
  if (!g.proc && !g.spare && threads)
    fprintf(stderr, "vprof: %llu threads of process %u got no trace file in %s; %llu records lost\n",
            (unsigned long long)threads, g.pid, g.dir,
            (unsigned long long)__atomic_load_n(g.loss.records, __ATOMIC_RELAXED));
}

// A process that leaves by _exit (a forked child, as servers' workers and
// test harnesses do) runs no atexit handler: without this its threads'
// files would read as killed. Marked as exited, unless the registry is
// taken (_exit from a signal handler that interrupted it) or this is a
// vfork child, which shares its parent's memory and must not touch it.
static void mark_quick_exit() {
  if (!on() || (uint32_t)getpid() != g.pid) return;
  if (pthread_mutex_trylock(&g.registry_lock) != 0) return;
  for (ThreadState *t = g.threads; t; t = t->next)
    if (t->header) __atomic_fetch_or(&t->header->flags, VPROF_FLAG_PROCESS_EXITED, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g.registry_lock);
}

static void before_fork() { pthread_mutex_lock(&g.registry_lock); }
static void after_fork_parent() { pthread_mutex_unlock(&g.registry_lock); }
static void after_fork_child() {
  pthread_mutex_init(&g.registry_lock, nullptr);
  g.pid = (uint32_t)getpid();
  g.ppid = (uint32_t)getppid();
  g.anchor0 = take_anchor_narrow();
  g.reserved_bytes.store(0, std::memory_order_relaxed);
  threads_after_fork_in_child();  // the child writes files of its own from its first record
  process_file_drop();            // the parent's, shared: its counts are not ours
  process_file_create();          // on failure the child counts in memory, as at start-up
}

static void read_comm() {
  FILE *f = fopen("/proc/self/comm", "r");
  if (!f) return;
  if (fgets(g.comm, sizeof g.comm, f)) g.comm[strcspn(g.comm, "\n")] = '\0';
  fclose(f);
}

static void vprof_runtime_init() {
  read_options(g.opt);
  if (!g.opt.trace_dir[0]) return;  // recording off: every API call is one branch
  if (!make_dirs(g.opt.trace_dir) || !realpath(g.opt.trace_dir, g.dir)) {
    fprintf(stderr, "vprof: cannot create trace directory %s: %s; recording is off\n",
            g.opt.trace_dir, strerror(errno));
    return;
  }
  // A directory another user could steer writes through (common/trace_dir_rules.h).
  char why[256];
  if (tracedir::refuse_trace_dir(g.opt.trace_dir, why, sizeof why)) {
    fprintf(stderr, "vprof: trace directory %s %s; recording is off\n", g.opt.trace_dir, why);
    return;
  }
  // Before any probe records (this runs before the program's constructors):
  // a function's enter and exit agree on whether it is dormant.
  if (g.opt.dormant[0] && !load_dormant(g.opt.dormant, why, sizeof why)) {
    fprintf(stderr, "vprof: VPROF_DORMANT file %s: %s; recording is off\n", g.opt.dormant, why);
    return;
  }
  g.chunk_bytes = g.opt.chunk_kb * 1024;  // validated: a multiple of 4 KiB, within the budget
  g.budget_bytes = g.opt.buffer_mb * 1024 * 1024;
  g.pid = (uint32_t)getpid();
  g.ppid = (uint32_t)getppid();
  g.invariant_tsc = invariant_tsc();
  g.start_realtime_ns = realtime_ns();
  read_comm();
  if (!g.owners.init(g.opt.ownership_slots))
    fprintf(stderr, "vprof: cannot map the ownership map; wake-up edges will be missing\n");
  if (int err = process_file_create(); err != 0 && err != ENOSPC && err != EMFILE &&
                                       err != ENFILE && err != EDQUOT && err != ENOMEM && err != EFBIG) {
    // Not a passing shortage: the directory refuses files. Recording would
    // only lose every thread: leave the program alone, and say so once.
    fprintf(stderr, "vprof: cannot write in trace directory %s: %s; recording is off\n", g.dir,
            strerror(err));
    return;
  }
  g.anchor0 = take_anchor_narrow();
  g.ticks_per_ns = calibrate(g.opt.calibrate_us);
  g.min_wait_ticks = (uint64_t)((double)g.opt.min_wait_ns * g.ticks_per_ns);
  vprof_rt_every_wait = g.opt.min_wait_ns == 0;
  g.release_if_waited = !vprof_rt_every_wait && (g.opt.sample == 0 || g.opt.sample >= 100);
  if (pthread_key_create(&g.exit_key, on_thread_exit) != 0) {
    fprintf(stderr, "vprof: pthread_key_create failed; recording is off\n");
    return;
  }
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  atexit(on_process_exit);
  g.active.store(true, std::memory_order_relaxed);
  measure_floor();  // a recording probe's cost, before windows can park it
  window_init();    // before any fork: forked children share its page
}

// Start-up runs from a static object defined after `g`: dynamic initialisation
// within one file follows definition order, whereas a constructor attribute
// could run before `g` is initialised and be overwritten by it.
struct Startup {
  Startup() {
    vprof_runtime_init();
    // Not recording, for good: probes of threads with no state stop inline.
    if (!on()) {
      vprof_rt_idle = 1;
      vprof_rt_none.off_word = none_word;
    }
  }
} startup;

}  // namespace vprof::rt

using namespace vprof::rt;

extern "C" {

void vprof_rt_emit_slow(uint32_t kind, uint64_t arg) {
  if (!on()) return;
  ThreadState *t = current_thread();
  // The window changed, or the thread records: look, then write or not.
  if (!t || !recording(t)) return;
  emit_slots(t, kind, arg, vprof_now(), nullptr, 0);
}

// An interval begun between recording windows: counted in the thread's
// header, so that the analysis can say how many it left out.
static void count_off_interval(ThreadState *t) {
  if (t->header) __atomic_fetch_add(&t->header->off_intervals, 1u, __ATOMIC_RELAXED);
}

// The annotation API reads the clock anyway: it is where the recording
// window moves on (window.h). What it records, it records only inside one.
void vprof_interval_begin(uint64_t id) {
  if (!on()) return;
  ThreadState *t = current_thread();
  if (!t) return;
  window_advance(t, vprof_now());
  if (!recording(t)) return count_off_interval(t);
  if (!window_interval_begin(t, id)) return count_off_interval(t);
  // Its time after the look: a WINDOW record just written may be later than
  // the clock read above.
  emit_after(t, VPROF_K_IV_BEGIN, id, vprof_now());
}

void vprof_interval_begin_labeled(uint64_t id, const char *type, const char *client) {
  if (!on()) return;
  ThreadState *t = current_thread();
  if (!t) return;
  window_advance(t, vprof_now());
  if (!recording(t)) return count_off_interval(t);
  vprof_slot ext{intern(t, type), intern(t, client)};
  if (!window_interval_begin(t, id)) return count_off_interval(t);
  // Its time after the label strings it may have written (theirs are later than `now`).
  emit_slots(t, VPROF_K_IV_BEGIN_LABELED, id, vprof_now(), &ext, 1);
}

void vprof_interval_end(uint64_t id) {
  if (!on()) return;
  ThreadState *t = current_thread();
  if (!t) return;
  if (recording(t) && !t->hot.busy) {
    // An API call, not a probe: the preemptions inside the interval go into
    // the trace before its end, so the analysis has them when it walks it.
    // Its time after the look (a WINDOW record just written may be later).
    const uint64_t now = vprof_now();
    switches_drain(t, now);
    emit_after(t, VPROF_K_IV_END, id, now);
  }
  // Its count goes down only after its end is written: a counted interval
  // holds its window open, and the look above must still find it recording.
  // Counted down first, another thread's window_advance could close the
  // window in between, and this thread then stopped without the end.
  window_interval_end(t, id);
  window_advance(t, vprof_now());  // after its count went down: the window may close
}

// One record of the API at the thread's current window (nothing while off).
static void api_record(uint32_t kind, uint64_t arg) {
  if (!on()) return;
  ThreadState *t = current_thread();
  if (t && recording(t)) emit_after(t, kind, arg, vprof_now());
}

void vprof_interval_join(uint64_t id) { api_record(VPROF_K_IV_JOIN, id); }

void vprof_interval_leave(void) { api_record(VPROF_K_IV_LEAVE, 0); }

void vprof_task_enqueue(const void *task) { api_record(VPROF_K_TASK_ENQUEUE, reinterpret_cast<uint64_t>(task)); }

void vprof_task_dequeue(const void *task) { api_record(VPROF_K_TASK_DEQUEUE, reinterpret_cast<uint64_t>(task)); }

// A wait timed or a signal recorded on a sync object the ownership map had
// no slot for: its wake-ups name no waker. Counted (each time, not each
// object) where the analysis reads it: the process file's ownership_misses;
// VPROF_OWNERSHIP_SLOTS makes more room.
static void count_ownership_miss() {
  if (g.proc) __atomic_fetch_add(&g.proc->ownership_misses, 1, __ATOMIC_RELAXED);
}

// A wait's map counts end: its object's, and its mutex's for a condition wait.
static void waiting_ends(const ThreadState::Waiting &w) {
  g.owners.wait_ends(w.obj, w.slot);
  if (w.mutex) g.owners.wait_ends(w.mutex, w.mutex_slot);
}

// The wait's begin on a recording thread; `mutex`: a condition wait's (or
// nullptr), named by a WAIT_MUTEX record right after the WAIT_BEGIN.
static void wait_begin(ThreadState *t, const void *obj, uint32_t role, const void *mutex) {
  const uint64_t arg = vprof_sync_arg(obj, role);
  const uint64_t now = vprof_now();
  emit_at(t, VPROF_K_WAIT_BEGIN, arg, now);
  if (mutex) emit_at(t, VPROF_K_WAIT_MUTEX, vprof_sync_arg(mutex, VPROF_SYNC_MUTEX), now);
  ++t->waits_recorded;
  if (g.release_if_waited) {
    if (t->n_waits == ThreadState::kWaits) {  // the oldest never ended (a longjmp, a throw): let it go
      waiting_ends(t->waits[0]);
      for (unsigned j = 1; j < t->n_waits; ++j) t->waits[j - 1] = t->waits[j];
      --t->n_waits;
    }
    OwnershipMap::Slot *slot = g.owners.wait_begins(obj);
    if (!slot) count_ownership_miss();
    OwnershipMap::Slot *mutex_slot = nullptr;
    if (mutex && !(mutex_slot = g.owners.wait_begins(mutex))) count_ownership_miss();
    t->waits[t->n_waits++] = {obj, slot, now, mutex, mutex_slot};
  }
  // Taken back whole if short (take_back_short_wait): the WAIT_BEGIN and
  // the WAIT_MUTEX after it, both still the newest records of this ring.
  vprof_slot *s = t->hot.pos - 1 - (mutex ? 1 : 0);
  bool ours = t->has_ring() && s >= t->ring() && s->arg == arg && (s->w0 & VPROF_KIND_MASK) == VPROF_K_WAIT_BEGIN &&
              (!mutex || (s[1].w0 & VPROF_KIND_MASK) == VPROF_K_WAIT_MUTEX);
  t->wait_slot = ours ? s : nullptr;
  t->wait_switches = t->ring_switches;
}

void vprof_rt_sync_wait_begin(const void *obj, uint32_t role) {
  if (!on()) return;
  ThreadState *t = current_thread();
  if (!t || !recording(t)) return;
  wait_begin(t, obj, role, nullptr);
}

// Takes back the thread's WAIT_BEGIN when it is still the newest record of
// the current ring (nothing ran in between: no nested wait, no signal
// handler's probe, no ring switch) and began less than min_wait_ticks before
// `now`. Most lock acquires are uncontended: they cost the program a slot
// written and zeroed, not a wait-begin/wait-end pair kept, written out and
// analysed.
static bool take_back_short_wait(ThreadState *t, uint64_t now) {
  vprof_slot *s = t->wait_slot;
  t->wait_slot = nullptr;
  if (!s || g.min_wait_ticks == 0 || t->hot.busy || t->wait_switches != t->ring_switches) return false;
  // Nothing after the wait's own records: its WAIT_BEGIN, and a condition
  // wait's WAIT_MUTEX.
  const bool named_mutex = s + 2 == t->hot.pos && (s[1].w0 & VPROF_KIND_MASK) == VPROF_K_WAIT_MUTEX;
  if (s + 1 != t->hot.pos && !named_mutex) return false;
  uint64_t began = (s->w0 >> VPROF_TS_SHIFT) + t->hot.tsc_base;
  if (now - began >= g.min_wait_ticks) return false;
  t->hot.busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  s->w0 = 0;  // first: a kill from here on leaves an empty slot, not half a wait
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  s->arg = 0;
  if (named_mutex) s[1].w0 = s[1].arg = 0;
  t->hot.pos = s;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->hot.busy = 0;
  return true;
}

// The wait on obj this thread counted in the map (the innermost such), no
// longer counted; when it began (0: not counted).
static uint64_t wait_counted_ends(ThreadState *t, const void *obj) {
  for (unsigned i = t->n_waits; i-- > 0;) {
    if (t->waits[i].obj != obj) continue;
    OwnershipMap::Slot *s = t->waits[i].slot;
    const uint64_t began = t->waits[i].began;
    waiting_ends(t->waits[i]);
    for (unsigned j = i + 1; j < t->n_waits; ++j) t->waits[j - 1] = t->waits[j];
    --t->n_waits;
    return s ? began : 0;
  }
  return 0;
}

void vprof_rt_sync_wait_end(const void *obj, uint32_t role, int acquired) {
  (void)role;
  if (!on()) return;
  ThreadState *t = current_thread();
  if (!t) return;
  const uint64_t counted = t->n_waits ? wait_counted_ends(t, obj) : 0;
  if (!recording(t)) return;
  if (t->waits_recorded == 0) {
    // Begun while nothing recorded (window.h): its begin now, at the time
    // recording resumed, so that the wait names its object. Not taken back.
    // A wait around another one begun while off (PostgreSQL's LWLock wait
    // around its semaphore's) ends after it: its begin then comes at the
    // inner one's end, not before it (emit_after: not before the newest record).
    if (window_sampled()) emit_after(t, VPROF_K_WAIT_BEGIN, vprof_sync_arg(obj, role), t->resumed_tick);
    t->wait_slot = nullptr;
  } else {
    --t->waits_recorded;
  }
  uint64_t now = vprof_now();
  if (take_back_short_wait(t, now)) return;
  uint64_t arg = VPROF_WAIT_NOT_ACQUIRED;
  uint64_t place = 0;
  if (acquired) {
    arg = 0;
    const OwnershipMap::Release r = g.owners.get(obj);
    const uint64_t v = r.value;
    uint32_t waker = (uint32_t)v;
    // A release from before this window may not be the last one: releases
    // go to the map only while recording.
    // Releases no one waited for are not in the map: the last one there may
    // be from before this wait began, and then it did not end it.
    const uint64_t since = (uint32_t)((uint32_t)now - (uint32_t)(v >> 32));
    const bool before = counted && now - counted < (uint64_t{1} << 32) && since > now - counted;
    if (waker && waker != t->hot.tid && !before && !window_stale_release(t, (uint32_t)(v >> 32), now)) {
      arg = waker | ((uint64_t)(uint32_t)((uint32_t)now - (uint32_t)(v >> 32)) << 32);
      place = r.pc;
    }
  }
  emit_at(t, VPROF_K_WAIT_END, arg, now);
  if (place) emit_at(t, VPROF_K_WAKER_AT, place, now);
}

// The release itself; `pc` is the return address into the code that
// released (the inline probe's caller: the program's own function).
static void sync_release_at(const void *obj, uint32_t role, uint64_t pc) {
  if (!on()) return;
  ThreadState *t = current_thread();
  if (!t || !recording(t)) return;  // between windows: not even the map
  // A lock's release is recorded when a thread waits for it (or with
  // VPROF_MUTEX_RELEASES=1): the analysis tiles a wait by each thread that
  // held the lock in turn, newcomers that barged in included.
  bool record = g.opt.mutex_releases || vprof_release_recorded_by_default(role);
  uint64_t now = 0;
  bool waited = false;
  if (!g.release_if_waited || record) {
    now = vprof_now();
    if (!g.owners.put(obj, t->hot.tid, now, pc, &waited)) count_ownership_miss();
  } else {
    waited = g.owners.put_if_waited(obj, t->hot.tid, [&] { return now = vprof_now(); }, pc);
  }
  if (record || waited) emit_at(t, VPROF_K_RELEASE, vprof_sync_arg(obj, role), now);
}

void vprof_rt_sync_release(const void *obj, uint32_t role) {
  sync_release_at(obj, role, (uint64_t)__builtin_extract_return_addr(__builtin_return_address(0)));
}

// A condition wait gives its mutex up as it begins to wait (a release like
// any other: it ends a wait on the mutex, and names this thread and place)
// and takes it back before it returns. While it waits, the mutex counts as
// waited for, so that the releases of the threads that hold it meanwhile are
// recorded: the analysis tiles the stretch from the signal to the wait's end
// by them (a newcomer that took the mutex before the woken waiter did).
void vprof_rt_sync_cond_wait_begin(const void *obj, uint32_t role, const void *mutex) {
  if (!on()) return;
  ThreadState *t = current_thread();
  if (!t || !recording(t)) return;
  if (mutex)
    sync_release_at(mutex, VPROF_SYNC_MUTEX, (uint64_t)__builtin_extract_return_addr(__builtin_return_address(0)));
  wait_begin(t, obj, role, mutex);
}

// The out-of-line entry point of programs instrumented before the sync
// probes were inline (compat.cc): the place is its caller's.
void vprof_rt_sync_release_from(const void *obj, uint32_t role, const void *pc) {
  sync_release_at(obj, role, (uint64_t)pc);
}

}  // extern "C"

// The program's _exit and _Exit (they interpose libc's: libvprof.so comes
// before libc.so in the program's libraries). exit() runs the atexit
// handler instead (libc calls its own _exit).
extern "C" VPROF_API __attribute__((noreturn)) void _exit(int status) {
  vprof::rt::mark_quick_exit();
  for (;;) syscall(SYS_exit_group, status);
}
extern "C" VPROF_API __attribute__((noreturn)) void _Exit(int status) { _exit(status); }
