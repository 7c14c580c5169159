// Reads perf's context-switch records (PERF_RECORD_SWITCH, one per switch
// out and in, with sample_id_all's pid/tid and time on CLOCK_MONOTONIC) and
// pairs each involuntary switch-out with the next switch-in. Voluntary
// switch-outs (sleep, I/O, futex) are dropped: a wait stays where the
// program's own records put it.
//
// The event's descriptor is closed once the ring is mapped (the mapping
// keeps the event alive): no descriptor stays open, as for the trace file.
#include "switches.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "window.h"

#ifndef PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
#define PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (1 << 14)
#endif

namespace vprof::rt {

namespace {

constexpr size_t kDataPages = 8;  // 32 KiB: ~1300 switch records between drains

void mark_process(uint32_t bit) {
  if (g.proc) __atomic_fetch_or(&g.proc->preemption, bit, __ATOMIC_RELAXED);
}

void refused(int err) {
  mark_process(VPROF_PREEMPT_REFUSED);
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  if (err == 0) return;  // turned off (VPROF_PREEMPT=0): nothing to explain
  fprintf(stderr,
          "vprof: preemption not measured: perf_event_open refused (%s); "
          "/proc/sys/kernel/perf_event_paranoid must be 2 or lower\n",
          strerror(err));
}

// perf_event_open refused once: not asked again (a sampled thread opens its
// event at every window).
std::atomic<bool> given_up{false};

// The event and its ring mapped (switches_open).
void open_ring(ThreadState *t) {
  perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.context_switch = 1;
  a.sample_id_all = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  a.exclude_kernel = 1;  // what paranoid level 2 allows; switch records still come
  a.exclude_hv = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    given_up.store(true, std::memory_order_relaxed);
    refused(errno);
    return;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t bytes = (1 + kDataPages) * page;
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    refused(err);
    return;
  }
  t->perf = p;
  t->perf_bytes = bytes;
  t->perf_data = page;
  mark_process(VPROF_PREEMPT_MEASURED);
}

}  // namespace

void switches_open(ThreadState *t) {
  if (!g.opt.preempt) {
    refused(0);
    return;
  }
  if (t->perf || t->draining || given_up.load(std::memory_order_relaxed)) return;
  // A handler's probe that looks at the window meanwhile opens no second
  // ring (the first would stay mapped, its event counting, unread).
  t->draining = true;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  open_ring(t);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->draining = false;
  if (t->close_after_drain) switches_close(t);  // a handler saw the window close meanwhile
}

void switches_drain(ThreadState *t, uint64_t now) {
  if (!t->perf || t->draining) return;
  auto *meta = static_cast<perf_event_mmap_page *>(t->perf);
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  if (head == tail) return;
  t->draining = true;
  // `now` in perf's clock (CLOCK_MONOTONIC): the records are written at
  // `now`, and the thread may have been switched out after it was read (a
  // full ring's switch takes tens of us): what came after `now` waits for
  // the next drain. A clock pair now, and the short way back to `now`.
  const Anchor here = take_anchor();
  const uint64_t now_ns =
      here.ns - (here.ticks > now ? (uint64_t)((double)(here.ticks - now) / g.ticks_per_ns) : 0);
  const char *data = static_cast<const char *>(t->perf) + t->perf_data;
  const uint64_t size = t->perf_bytes - t->perf_data;
  while (tail < head) {
    // A record may wrap around the ring's end: copy it out first.
    union {
      perf_event_header h;
      char bytes[64];
    } rec;
    uint64_t off = tail % size;
    memcpy(&rec.h, data + off, sizeof rec.h);  // headers are 8-aligned: never split
    if (rec.h.size < sizeof rec.h || tail + rec.h.size > head) break;
    size_t n = rec.h.size < sizeof rec ? rec.h.size : sizeof rec;
    for (size_t i = 0; i < n; ++i) rec.bytes[i] = data[(off + i) % size];
    if (rec.h.type == PERF_RECORD_LOST) {
      t->out_ns = t->slept_ns = 0;  // switches were lost: a pending switch-out may pair wrongly
      tail += rec.h.size;
      continue;
    }
    if (rec.h.type != PERF_RECORD_SWITCH || n < sizeof rec.h + 16) {
      tail += rec.h.size;
      continue;
    }
    uint64_t ns;  // sample_id: pid, tid (u32 each), then time
    memcpy(&ns, rec.bytes + sizeof rec.h + 8, sizeof ns);
    const bool out = rec.h.misc & PERF_RECORD_MISC_SWITCH_OUT;
    // After `now`: a switch-out waits for the next drain, and so does a
    // switch-in, whose stretch is cut at `now` (the part before it here).
    const bool late = ns > now_ns;
    if (late && (out || !t->out_ns)) break;
    if (out) {
      const bool preempt = rec.h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
      t->out_ns = preempt ? ns : 0;
      t->slept_ns = preempt ? 0 : ns;
    } else if (t->slept_ns) {
      // A sleep's end (trace format 10): when the thread ran again. A wait's
      // wake-up came before it; the time between was the thread runnable
      // and waiting for a core, which the analysis tells from the code's.
      if (ns > t->slept_ns && window_recording(t->observed)) {
        if (t->dropping || t->hot.pos + 2 > t->hot.end) break;
        vprof_slot ext{ns, 1};
        emit_slots(t, VPROF_K_PREEMPTED, t->slept_ns, now, &ext, 1);
      }
      t->slept_ns = 0;
    } else if (t->out_ns) {
      const uint64_t in = late ? now_ns : ns;
      // Outside a recording window (window.h) a stretch is let go: nothing
      // it could be part of is recorded.
      if (in > t->out_ns && window_recording(t->observed)) {
        // Only where the trace ring has room: the rest waits in perf's ring
        // for the next drain (a full trace ring drains after its switch).
        if (t->dropping || t->hot.pos + 2 > t->hot.end) break;
        vprof_slot ext{in, 0};
        emit_slots(t, VPROF_K_PREEMPTED, t->out_ns, now, &ext, 1);
      }
      if (late) {  // the rest, from `now` on, when the next drain reads this switch-in again
        if (t->out_ns < now_ns) t->out_ns = now_ns;
        break;
      }
      t->out_ns = 0;
    }
    tail += rec.h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->draining = false;
  if (t->close_after_drain) switches_close(t);
}

// Signal-safe against the thread's own handlers: a handler's probe can look
// at the window (window_observe) and drain or close the ring at any point
// here. The ring is forgotten before it is unmapped, so such a probe never
// reads an unmapped page (a PostgreSQL backend at 10% died of it in
// switches_drain, its SIGUSR1 or SIGALRM handler running instrumented code
// between the unmap and the pointer's reset), and a handler that closes it
// during a drain leaves the unmap to that drain.
void switches_close(ThreadState *t) {
  if (t->draining) {
    t->close_after_drain = true;
    return;
  }
  t->close_after_drain = false;
  void *p = t->perf;
  t->perf = nullptr;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (p) munmap(p, t->perf_bytes);
  t->out_ns = 0;
  t->slept_ns = 0;
}

}  // namespace vprof::rt
