// Windowed recording (VPROF_SAMPLE, docs/run.md "Windowed recording"): every
// thread of every process forked from this one records everything inside
// windows that cover about VPROF_SAMPLE percent of the time, and nothing in
// between, where a probe is its inline test: four loads, a compare and a
// branch (probes.h, vprof_records).
//
// The state is one word in a MAP_SHARED page made at start-up, before any
// fork, so forked children (PostgreSQL's backends) agree on it without a
// system call per probe. It moves OFF -> ON -> DRAIN -> OFF, and only at the
// annotation API (an interval's begin or end, which reads the clock anyway):
//   OFF -> ON     at a random time about one period after the last window
//                 opened (random, so that the windows cannot lock onto a
//                 periodic phase of the workload);
//   ON -> DRAIN   VPROF_SAMPLE_WINDOW_MS after it opened;
//   DRAIN -> OFF  once every interval counted in the window has ended, or at
//                 VPROF_SAMPLE_CAP_MS after DRAIN began (`capped`).
// An interval counts only if it begins while the state is ON: inclusion by
// start time, which does not depend on the interval's latency; a counted
// interval that outlasts the window is recorded to its end.
//
// A thread looks at the word in the slow path only: at the annotation API,
// in the sync probes, when its ring is full, and, while off, at its first
// probe after the word moved (its hot.end is parked at hot.pos then, so the
// inline fast path costs nothing more when recording in full). A recording
// thread thus stops at its next look after a window closes; what it recorded
// until then is kept, and its WINDOW record comes after it. Off, nothing is
// kept: when recording resumes, its WINDOW record says the stack is unknown,
// and the reader rebuilds it from the exits that follow in the window
// (analyzer/read/open_frames.h). A wait begun while off and ended in the
// window gets its WAIT_BEGIN when it ends, at the WINDOW record's time.
#ifndef VPROF_RUNTIME_WINDOW_H
#define VPROF_RUNTIME_WINDOW_H

#include <stdint.h>

namespace vprof::rt {

struct ThreadState;

// The shared word: state (2 bits) | window number (14 bits) << 2 | the tick
// of the last change >> 8 (48 bits) << 16. kWindowFull: recording in full (no
// VPROF_SAMPLE), a constant no sampled word equals.
constexpr uint64_t kWindowFull = 3;
inline uint32_t window_state(uint64_t w) { return (uint32_t)(w & 3); }
inline uint32_t window_seq(uint64_t w) { return (uint32_t)((w >> 2) & 0x3fff); }
inline uint64_t window_since(uint64_t w) { return (w >> 16) << 8; }
inline bool window_recording(uint64_t w) { return window_state(w) != 0; }

// Start-up (before any thread records): maps the shared page when
// VPROF_SAMPLE is between 1 and 99.
void window_init();
bool window_sampled();
// The word every thread reads (a constant kWindowFull when in full).
extern const volatile uint64_t *window_word_ptr;

// At the annotation API, with the clock just read: moves the state on when
// its time has come. The thread that moves it is t (may be null).
void window_advance(ThreadState *t, uint64_t now);

// The thread looks at the word: on a change, writes its WINDOW record. True
// when it records now.
// recorder.h's `recording(t)` calls it only when the word changed.
bool window_observe(ThreadState *t);
// Sets what the thread has seen of the word; off, parks hot.end at hot.pos
// (the ring's end kept aside), on again, puts it back.
void window_set_seen(ThreadState *t, uint64_t w);

// An interval begins (the thread records): if the window is ON it counts,
// and holds the window open until it ends (window_interval_end). The
// analysis tells counted ones by the thread's WINDOW records.
// False: the window closed before it could count, and the thread no longer
// records (its IV_BEGIN must not be written).
bool window_interval_begin(ThreadState *t, uint64_t id);
void window_interval_end(ThreadState *t, uint64_t id);

// A waker's release tick (low 32 bits, the ownership map's) older than the
// window the thread records in: released while nothing recorded, so the map
// may name an earlier releaser. True: do not name it.
bool window_stale_release(const ThreadState *t, uint32_t release_low, uint64_t now);

}  // namespace vprof::rt

#endif
