// Process-wide recorder state and the per-thread state behind vprof_tls.
//
// Ownership: each ThreadState is written only by its thread, except the
// header's `flags` (the exit handler marks live threads) and the registry
// links (under Process::registry_lock). Nothing here is touched by the probe
// fast path but ThreadState::hot.
#ifndef VPROF_RUNTIME_RECORDER_H
#define VPROF_RUNTIME_RECORDER_H

#include <errno.h>
#include <pthread.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include <vprof/probes.h>
#include <vprof/trace_format.h>

#include "clock.h"
#include "window.h"
#include "options.h"
#include "ownership_map.h"

namespace vprof::rt {

struct InternedString {
  const void *ptr;
  uint32_t id;
};

struct alignas(64) ThreadState {
  ThreadState() {
    hot.off_word = VPROF_NOT_OFF;
    hot.window_word = window_word_ptr;
  }
  vprof_thread hot{};  // first: vprof_tls points here
  // The thread's file, by name under Process::dir: no descriptor stays open
  // (a program near its fd limit must not lose its own open() calls to us);
  // a ring switch opens the file for its pwrite and closes it again.
  // header == nullptr: the thread got no file; its records are counted in
  // the process file (Process::loss).
  alignas(64) vprof_file_header *header = nullptr;
  char name[64] = {};
  dev_t file_dev = 0;  // the file this thread made: a file put in its place is not reopened
  ino_t file_ino = 0;
  vprof_slot *rings[2] = {};  // rings[cur] is being written; ring 1 is mapped at the first switch
  uint32_t cur = 0;
  uint64_t chunk_slots = 0;
  bool has_ring() const { return rings[0] != nullptr; }
  vprof_slot *ring() const { return rings[cur]; }
  bool dropping = false;  // for good: no budget or no space left
  // Ring 1 - cur is full and waits to be appended (trace_format.h); the
  // background writer (writer.cc) appends and zeroes it, then clears this.
  std::atomic<uint32_t> pending{0};
  uint64_t pending_used = 0;           // its bytes
  std::atomic<bool> wants_writer{false};  // has two rings: the writer serves it
  uint64_t served_pass = 0;            // the writer's: its last pass over this thread
  pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;  // an append: writer, late thread, exit
  uint32_t next_string_id = 0;
  static constexpr unsigned kStrings = 64;
  InternedString strings[kStrings] = {};
  ThreadState *prev = nullptr, *next = nullptr;
  // The context-switch ring (switches.h); perf == nullptr: not measured.
  void *perf = nullptr;
  size_t perf_bytes = 0, perf_data = 0;  // mapping size, offset of the data pages
  uint64_t out_ns = 0;                   // a preemption's switch-out awaiting its switch-in
  uint64_t slept_ns = 0;                 // a sleep's (voluntary switch-out) awaiting its switch-in
  // In switches_open or switches_drain: a signal handler's probe on this
  // thread then neither opens, drains nor unmaps the ring; a close it asks
  // for is left to the drain it interrupted (close_after_drain).
  bool draining = false, close_after_drain = false;
  // The last WAIT_BEGIN's slot while it is the newest record in the current
  // ring (else nullptr): a wait that ends within Process::min_wait_ticks
  // takes it back (recorder.cc), so an uncontended acquire leaves no record.
  vprof_slot *wait_slot = nullptr;
  uint64_t ring_switches = 0;  // bumped by every switch: a slot in an earlier pass is not ours
  // The last ring switch's length in ticks, which the record that paid for
  // it follows with a RECORDER record (emit_slots); 0: none to write.
  uint64_t pause_ticks = 0;
  uint64_t wait_switches = 0;  // ring_switches when wait_slot was written
  // The waits this thread is timing, innermost last, while releases go to
  // the ownership map only when waited for (Process::release_if_waited):
  // each one's map slot, whose count it holds up, and when it began.
  struct Waiting {
    const void *obj;
    OwnershipMap::Slot *slot;  // nullptr: the map had no slot for it (still counted by its hash)
    uint64_t began;
    // A condition wait's mutex, which it gives up and takes back: counted as
    // waited for too, so that its holders' releases meanwhile are recorded
    // (nullptr: none).
    const void *mutex;
    OwnershipMap::Slot *mutex_slot;
  };
  static constexpr unsigned kWaits = 4;
  Waiting waits[kWaits] = {};
  unsigned n_waits = 0;
  // Where emit_slots' last record of several slots ended in this ring pass,
  // and its tick: the slot before hot.pos is then payload, not a record
  // (newest_tick).
  vprof_slot *multi_end = nullptr;
  uint64_t multi_tick = 0;
  // Windowed recording (window.h). The WAIT_BEGINs written since recording
  // resumed and not yet ended: a wait that ends with none was begun while
  // off, and gets its WAIT_BEGIN then, at `resumed_tick` (the WINDOW
  // record's time).
  uint32_t waits_recorded = 0;
  uint64_t resumed_tick = 0;
  uint64_t window_open = 0;  // the tick the window this thread records in opened
  // The window word when this thread last looked (window.h); while it says
  // off, hot.end is parked at hot.pos (every probe takes the slow path) and
  // the ring's end waits here.
  uint64_t observed = kWindowFull;
  vprof_slot *parked_end = nullptr;
  bool looking = false;  // in window_observe (a handler's probe does not look then)
  uint64_t made_word = 0;    // the last word this thread moved the state to
  bool made_capped = false;  // and whether that was the cap
  uint64_t made_tick = 0;    // and when (window_advance)
};
static_assert(offsetof(ThreadState, hot) == 0, "vprof_tls is a ThreadState*");
static_assert(sizeof(vprof_thread) <= 64, "the probe's hot state is one cache line");

// What threads without a file lost: in the process file's mapping, or, when
// that file could not be made, in p-0.vpp's, or else in `fallback` (reported
// on stderr at exit).
struct LossCounters {
  uint64_t *threads;
  uint64_t *records;
};

struct Process {
  std::atomic<bool> active{false};
  std::atomic<bool> exiting{false};
  Options opt;
  char dir[4096];
  uint32_t pid = 0, ppid = 0;
  double ticks_per_ns = 1;
  uint64_t min_wait_ticks = 0;  // Options::min_wait_ns in ticks
  // Recording in full and taking short waits back: a release goes to the
  // ownership map only while a thread times a wait on its object
  // (ownership_map.h). Windowed, every release in a window does: a wait
  // that began between windows counted no waiter.
  bool release_if_waited = false;
  Anchor anchor0{};
  uint64_t start_realtime_ns = 0;
  char comm[32] = {};
  double probe_pair_ns = 0, empty_interval_ns = 0;
  bool invariant_tsc = false;
  uint64_t chunk_bytes = 0;
  uint64_t budget_bytes = 0;
  std::atomic<uint64_t> reserved_bytes{0};
  OwnershipMap owners;
  pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
  ThreadState *threads = nullptr;
  pthread_key_t exit_key;
  vprof_process_header *proc = nullptr;  // p-<pid>.vpp, mapped; nullptr if it could not be made
  vprof_process_header *spare = nullptr;  // else p-0.vpp (vprof run's), mapped, if there is one
  // vprof_register_manifest's (every rewritten file registers its own id),
  // kept for a forked child's file.
  uint64_t manifest_ids[VPROF_MANIFEST_IDS] = {};
  uint32_t manifest_ids_count = 0;
  char manifest_path[1024] = {};
  char maps_path[4200] = {};  // p-<pid>.maps beside the process file ("": none made)
  uint64_t fallback_lost[2] = {};
  LossCounters loss{&fallback_lost[0], &fallback_lost[1]};
  // The background writer (writer.cc): started at the first chunk switch.
  std::atomic<uint32_t> writer_seq{0};      // bumped to wake it (a futex word)
  std::atomic<uint32_t> writer_waiting{0};  // it sleeps on writer_seq
  std::atomic<bool> writer_started{false};
};

extern Process g;

// The runtime's syscalls run inside the program's calls (a probe's slow path):
// they must not change the errno the program is about to read.
struct ErrnoKeeper {
  int saved = errno;
  ~ErrnoKeeper() { errno = saved; }
};

// The calling thread's state, created on first use; nullptr when recording is
// off, the process is exiting, or this thread already finished.
ThreadState *current_thread();

// Writes one record of 1 + n_ext slots at tick `now`, or at the newest
// record's when that is later (a signal handler's probe recorded after the
// caller read `now`). False when dropped.
// A drop is counted (records + dropped is what the program asked to write),
// unless `counted` is false: a record the program did not ask for (a label's
// string, written with the interval that names it).
bool emit_slots(ThreadState *t, uint32_t kind, uint64_t arg, uint64_t now,
                const vprof_slot *ext, unsigned n_ext, bool counted = true);

// A RECORDER record at tick `began` for a pause of `ticks` (the recorder's
// own work on the program's thread), when the ring has room.
void write_recorder(ThreadState *t, uint64_t began, uint64_t ticks);

// Per-thread file management (thread_state.cc).
ThreadState *thread_create();
bool thread_next_chunk(ThreadState *t);
void thread_finish(ThreadState *t);
void thread_count_drop(ThreadState *t);
// A drop because a signal handler's probe interrupted a record (hot.busy):
// counted apart too, so `vprof run` does not blame the budget for it.
void thread_count_reentry(ThreadState *t);
void count_lost_record();  // a record of a thread that has no file
// The background writer (writer.cc).
void writer_start();  // once per process (again in a forked child)
void writer_wake();   // no-op unless it sleeps; never blocks
void writer_forget_after_fork();
void thread_never_records();  // the calling thread is the runtime's own
// Appends t's pending ring and empties it for the next switch, under
// t->ring_lock. False when the write failed (the ring stays pending, read in
// place). thread_state.cc.
bool append_pending(ThreadState *t);

// Whether one of our files may be grown to `end` bytes: not past the soft
// RLIMIT_FSIZE (`ulimit -f`), read at each growth since the program may
// lower it. Past it the kernel sends SIGXFSZ, whose default action kills the
// program; what does not fit is dropped and counted, as on a full disk.
bool file_may_grow_to(uint64_t end);

// Creates and maps this process's p-<pid>.vpp; 0 or an errno value (then the
// loss counters are p-0.vpp's if `vprof run` made one, else in memory).
int process_file_create();
void process_file_drop();  // unmap (a forked child drops its parent's, and p-0.vpp)
// A thread that got no file: counted in the process file (or p-0.vpp).
void process_file_thread_lost();
// A thread made its file: its effective uid joins the process file's
// thread_euids (the reader refuses thread files of any other owner).
void process_file_thread_file_made();
// Copies the executable lines of /proc/self/maps to g.maps_path (made with
// the process file; again at exit, for libraries loaded meanwhile).
void maps_file_write();

}  // namespace vprof::rt

// compat.cc's out-of-line vprof_sync_release: the release, placed at its caller.
extern "C" VPROF_API void vprof_rt_sync_release_from(const void *obj, uint32_t role, const void *pc);

namespace vprof::rt {
void threads_after_fork_in_child();
void threads_mark_process_exit(ThreadState *self);

}  // namespace vprof::rt

#endif
