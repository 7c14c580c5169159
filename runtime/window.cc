// Windowed recording (window.h).
#include "window.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <new>

#include "recorder.h"
#include "switches.h"

namespace vprof::rt {
namespace {

constexpr size_t kCountedSlots = 4096;  // counted intervals open at once that the table keeps
constexpr size_t kProbes = 32;          // entries an id may be found in, from its hash
constexpr uint64_t kFree = 0, kBusy = ~0ull;

// Pages shared with every process forked from this one.
struct Shared {
  alignas(64) std::atomic<uint64_t> word;
  // Counted intervals not yet ended, tagged with their window's number:
  // number << 48 | count. A count changes only under its own number, so a
  // late change for an earlier window (an interval that outlived a capped
  // window) cannot touch the next one's.
  alignas(64) std::atomic<uint64_t> open;
  alignas(64) std::atomic<uint64_t> next_open;  // tick: OFF -> ON from here on
  std::atomic<uint64_t> open_tick;              // the current window's opening tick
  uint64_t window_ticks, period_ticks, cap_ticks, seed;
  // The counted intervals, by id, with their window's number: an interval
  // may end on another thread than the one that began it (a request handed
  // from an acceptor to a worker), or in another process, and its end must
  // still take it out of its window's count, or the window drains to the
  // cap (a 10% sample recorded 79% of the time). Open addressing, a few
  // probes from the id's hash; an entry of an earlier window is free.
  struct Entry {
    std::atomic<uint64_t> id;  // kFree, kBusy (being written), or the interval's id
    std::atomic<uint32_t> seq;
  };
  Entry counted[kCountedSlots];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared across processes");

const uint64_t kFullWord = kWindowFull;
Shared *shared = nullptr;

constexpr uint64_t kCountMask = (1ull << 48) - 1;
uint32_t count_seq(uint64_t c) { return (uint32_t)(c >> 48); }

// Adds d to window seq's count; false when the count is another window's.
bool count_add(uint32_t seq, int d) {
  uint64_t c = shared->open.load();
  do {
    if (count_seq(c) != seq || (d < 0 && (c & kCountMask) == 0)) return false;
  } while (!shared->open.compare_exchange_weak(c, c + (uint64_t)(int64_t)d));
  return true;
}

size_t slot_of(uint64_t id, size_t i) {
  uint64_t z = id * 0x9e3779b97f4a7c15ull;
  return (size_t)((z >> 40) + i) & (kCountedSlots - 1);
}

// Keeps a counted interval's (id, window number); false when its probes
// are all taken by this window's intervals (it then holds the window until
// the cap, as before).
bool counted_put(uint64_t id, uint32_t seq) {
  if (id == kFree || id == kBusy) return false;
  for (size_t i = 0; i < kProbes; ++i) {
    Shared::Entry &e = shared->counted[slot_of(id, i)];
    uint64_t cur = e.id.load();
    if (cur == kBusy || (cur != kFree && e.seq.load() == seq)) continue;
    if (!e.id.compare_exchange_strong(cur, kBusy)) continue;
    e.seq.store(seq);
    e.id.store(id);
    return true;
  }
  return false;
}

// Takes a counted interval out of the table: its window number, or 0.
uint32_t counted_take(uint64_t id) {
  if (id == kFree || id == kBusy) return 0;
  for (size_t i = 0; i < kProbes; ++i) {
    Shared::Entry &e = shared->counted[slot_of(id, i)];
    uint64_t cur = e.id.load();
    if (cur != id) continue;
    const uint32_t seq = e.seq.load();
    if (e.id.compare_exchange_strong(cur, kFree)) return seq;
  }
  return 0;
}

uint64_t make_word(uint32_t state, uint32_t seq, uint64_t tick) {
  return (uint64_t)state | ((uint64_t)(seq & 0x3fff) << 2) | ((tick >> 8) << 16);
}

// A number in [0, 1) from the window's number: where the next window opens
// within its period (splitmix64).
double jitter(uint64_t seed, uint32_t seq) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (seq + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / (double)(1ull << 53);
}

}  // namespace

const volatile uint64_t *window_word_ptr = &kFullWord;

void window_init() {
  const uint64_t p = g.opt.sample;
  if (p == 0 || p >= 100) return;
  void *m = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return;  // recorded in full: the trace says so (no WINDOW record)
  shared = new (m) Shared();
  const double tpn = g.ticks_per_ns;
  shared->window_ticks = (uint64_t)((double)g.opt.sample_window_ms * 1e6 * tpn);
  shared->period_ticks = (uint64_t)((double)shared->window_ticks * 100.0 / (double)p);
  shared->cap_ticks = (uint64_t)((double)g.opt.sample_cap_ms * 1e6 * tpn);
  const uint64_t now = vprof_now();
  shared->seed = now ^ ((uint64_t)g.pid << 32);
  // The first window opens at a random point of the first period.
  shared->next_open.store(now + (uint64_t)(jitter(shared->seed, 0) * (double)shared->period_ticks));
  shared->word.store(make_word(VPROF_WINDOW_OFF, 0, now));
  window_word_ptr = reinterpret_cast<const volatile uint64_t *>(&shared->word);
}

bool window_sampled() { return shared != nullptr; }

void window_set_seen(ThreadState *t, uint64_t w) {
  t->observed = w;
  // The probes' inline test (probes.h, vprof_records): off as seen, until the word moves.
  t->hot.window_word = window_word_ptr;
  t->hot.off_word = window_recording(w) ? VPROF_NOT_OFF : w;
  if (t->dropping || !t->has_ring()) return;  // every probe takes the slow path anyway
  if (!window_recording(w)) {
    if (!t->parked_end) {
      t->parked_end = t->hot.end;
      t->hot.end = t->hot.pos;
    }
  } else if (t->parked_end) {
    t->hot.end = t->parked_end;
    t->parked_end = nullptr;
  }
}

void window_advance(ThreadState *t, uint64_t now) {
  if (!shared) return;
  uint64_t w = shared->word.load();
  const uint32_t st = window_state(w), seq = window_seq(w);
  const uint64_t since = window_since(w);
  uint64_t next = 0;
  bool capped = false;
  if (st == VPROF_WINDOW_OFF) {
    if (now >= shared->next_open.load(std::memory_order_relaxed)) {
      next = make_word(VPROF_WINDOW_ON, seq + 1, now);
      // The new window's count, before anyone can see the window on: it
      // replaces only an earlier window's (another maker may have been first).
      const uint32_t k = window_seq(next);
      uint64_t c = shared->open.load();
      if (count_seq(c) != k) shared->open.compare_exchange_strong(c, (uint64_t)k << 48);
    }
  } else if (st == VPROF_WINDOW_ON) {
    if (now - since >= shared->window_ticks) next = make_word(VPROF_WINDOW_DRAIN, seq, now);
  } else if (st == VPROF_WINDOW_DRAIN) {
    const uint64_t c = shared->open.load();
    if (count_seq(c) != seq || (c & kCountMask) == 0) next = make_word(VPROF_WINDOW_OFF, seq, now);
    else if (now - since >= shared->cap_ticks) next = make_word(VPROF_WINDOW_OFF, seq, now), capped = true;
  }
  if (!next || !shared->word.compare_exchange_strong(w, next)) return;
  if (window_state(next) == VPROF_WINDOW_ON) {
    shared->open_tick.store(now, std::memory_order_relaxed);
    shared->next_open.store(
        now + (uint64_t)((0.5 + jitter(shared->seed, window_seq(next))) * (double)shared->period_ticks),
        std::memory_order_relaxed);
  }
  if (t) {
    t->made_word = next;
    t->made_capped = capped;
    // The change's exact time, read after it: the word keeps it to 256
    // ticks, and a thread that read the word just before the change may
    // have records later than that rounded time, though not than this.
    t->made_tick = vprof_now();
  }
}

static bool observe_change(ThreadState *t, uint64_t w);

bool window_observe(ThreadState *t) {
  const uint64_t w = *window_word_ptr;
  if (w == t->observed) return window_recording(w);
  // A signal handler's probe while its thread writes a record, switches
  // rings or looks at the window itself: the look is the thread's, at its
  // next probe, and the thread records as it saw until then. (A handler's
  // look parked the ring's end under a ring switch, which left the parked
  // end in the other ring: probes later wrote past the ring's end.)
  if (t->hot.busy || t->looking) return window_recording(t->observed);
  t->looking = true;
  const bool is = observe_change(t, w);
  t->looking = false;
  return is;
}

static bool observe_change(ThreadState *t, uint64_t w) {
  const uint64_t old = t->observed;
  const uint64_t now = vprof_now();
  const bool was = window_recording(old), is = window_recording(w);
  const bool made = w == t->made_word;
  // Context switches are measured only while the thread records: the kernel
  // pays perf's work at every switch of a thread with the event open
  // (docs/performance.md), so it is closed between windows. What the window
  // saw is written first (before the WINDOW record's time is chosen).
  if (was && !is && t->perf) {
    switches_drain(t, now);
    switches_close(t);
  }
  // When it changed, and not after now; emit_slots puts it after the
  // thread's newest record (it recorded on until it looked).
  const uint64_t ts = std::min(made ? t->made_tick : window_since(w), now);
  if (!was) {  // (no switch event is open while off: nothing came to let go)
    if (!is) {
      // Off and still off (a window came and went while the thread ran no
      // probe): only a change it made is written, with the ring's end back
      // for that record.
      if (made) {
        window_set_seen(t, kWindowFull);
        emit_slots(t, VPROF_K_WINDOW, VPROF_WINDOW_ARG(VPROF_WINDOW_OFF, 1, 0, t->made_capped, 0, window_seq(w)),
                   ts, nullptr, 0);
      }
      window_set_seen(t, w);
      return false;
    }
    window_set_seen(t, w);  // the ring's end back: records can be written
  }
  if (is && (!was || window_seq(w) != window_seq(old)))
    t->window_open = shared ? shared->open_tick.load(std::memory_order_relaxed) : 0;
  // Back on, the stack is not known: nothing ran a probe's body while off.
  // The reader rebuilds it from the exits that follow (trace_format.h).
  emit_slots(t, VPROF_K_WINDOW,
             VPROF_WINDOW_ARG(window_state(w), made, 0, made && t->made_capped, 0, window_seq(w)) |
                 (was ? 0 : VPROF_WINDOW_UNKNOWN_BIT),
             ts, nullptr, 0);
  if (!was) {
    t->waits_recorded = 0;  // a wait open now was begun while off
    t->resumed_tick = ts;
    // After the WINDOW record: perf_event_open is a system call, and a
    // signal is delivered on its return. A handler's probe then records
    // (its test passes from window_set_seen on): before the WINDOW record,
    // at a later time, it read as a corrupt one (PostgreSQL's SIGUSR1
    // handler posting its latch's semaphore, once a backend at 10%).
    switches_open(t);
  }
  window_set_seen(t, w);  // off: the ring's end parked from here on
  return is;
}

bool window_interval_begin(ThreadState *t, uint64_t id) {
  if (!shared || window_state(t->observed) != VPROF_WINDOW_ON) return true;
  const uint32_t seq = window_seq(t->observed);
  // Counted only if the window was still ON after the count went up: the
  // thread that moves it to DRAIN then sees this interval before closing.
  const bool added = count_add(seq, +1);
  if (!added || shared->word.load() != t->observed) {
    if (added) count_add(seq, -1);
    // Its WINDOW record says it does not count; the window may even have
    // closed meanwhile (this thread stopped: nothing more is written).
    return window_observe(t);
  }
  // In the shared table, so that its end is found wherever it happens. With
  // no room this one holds the window until the cap.
  counted_put(id, seq);
  return true;
}

void window_interval_end(ThreadState *, uint64_t id) {
  if (!shared) return;
  // A capped window's intervals are in no count now: count_add refuses them.
  if (const uint32_t seq = counted_take(id)) count_add(seq, -1);
}

bool window_stale_release(const ThreadState *t, uint32_t release_low, uint64_t now) {
  if (!shared || !t->window_open || now < t->window_open) return false;
  const uint64_t in = now - t->window_open;
  if (in >= (1ull << 32)) return false;  // the low 32 bits cannot tell
  return (uint64_t)((uint32_t)now - release_low) > in;
}

}  // namespace vprof::rt
