// Process-wide recorder state and the per-thread state behind vprof_tls.
//
// Ownership: each ThreadState is written only by its thread, except the
// header's `flags` (the exit handler marks live threads) and the registry
// links (under Process::registry_lock). Nothing here is touched by the probe
// fast path but ThreadState::hot.
#ifndef VPROF_RUNTIME_RECORDER_H
#define VPROF_RUNTIME_RECORDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include <vprof/probes.h>
#include <vprof/trace_format.h>

#include "clock.h"
#include "options.h"
#include "ownership_map.h"

namespace vprof::rt {

struct InternedString {
  const void *ptr;
  uint32_t id;
};

struct alignas(64) ThreadState {
  vprof_thread hot;  // first: vprof_tls points here
  alignas(64) int fd = -1;
  vprof_file_header *header = nullptr;
  vprof_slot *chunk = nullptr;  // the ring's mapping
  uint64_t chunk_slots = 0;
  bool has_chunk = false;
  bool dropping = false;
  uint32_t next_string_id = 0;
  static constexpr unsigned kStrings = 64;
  InternedString strings[kStrings] = {};
  ThreadState *prev = nullptr, *next = nullptr;
};
static_assert(offsetof(ThreadState, hot) == 0, "vprof_tls is a ThreadState*");
static_assert(offsetof(ThreadState, fd) == 64, "the hot state has its own cache line");

struct Process {
  std::atomic<bool> active{false};
  std::atomic<bool> exiting{false};
  Options opt;
  char dir[4096];
  uint32_t pid = 0, ppid = 0;
  double ticks_per_ns = 1;
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
};

extern Process g;

// The calling thread's state, created on first use; nullptr when recording is
// off, the process is exiting, or this thread already finished.
ThreadState *current_thread();

// Writes one record of 1 + n_ext slots at tick `now`. False when dropped.
bool emit_slots(ThreadState *t, uint32_t kind, uint64_t arg, uint64_t now,
                const vprof_slot *ext, unsigned n_ext);

// Per-thread file management (thread_state.cc).
ThreadState *thread_create();
bool thread_next_chunk(ThreadState *t);
void thread_finish(ThreadState *t);
void thread_count_drop(ThreadState *t);
void threads_after_fork_in_child();
void threads_mark_process_exit(ThreadState *self);

}  // namespace vprof::rt

#endif
