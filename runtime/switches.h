// Context switches of a traced thread (Linux perf_event_open, context_switch):
// when the kernel took the thread off its CPU involuntarily (preemption) and
// when it got it back. The kernel writes them into a small per-thread ring;
// the runtime drains it into the thread's trace as PREEMPTED records only at
// moments that are already slow (interval end, a full trace ring, thread
// exit). The probe fast path never touches any of this.
#ifndef VPROF_RUNTIME_SWITCHES_H
#define VPROF_RUNTIME_SWITCHES_H

#include <stdint.h>

namespace vprof::rt {

struct ThreadState;

// Opens the calling thread's switch ring (its file's creation: the slow
// path). Where perf_event_open is refused, says so once per process on
// stderr and marks the process file; the thread then records no switches.
void switches_open(ThreadState *t);
// Writes the involuntary off-CPU stretches the ring holds as PREEMPTED
// records stamped `now`. Call outside a record (hot.busy == 0).
void switches_drain(ThreadState *t, uint64_t now);
// Unmaps the ring (thread exit; a forked child drops its parent's).
void switches_close(ThreadState *t);

}  // namespace vprof::rt

#endif
