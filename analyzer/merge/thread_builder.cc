// The merge's per-thread half (thread_builder.h).
#include "analyzer/merge/thread_builder.h"

#include "analyzer/read/open_frames.h"

#include <algorithm>
#include <iterator>

namespace vprof::analyzer {

using trace::Event;
using trace::Kind;

void ThreadBuilder::feed(const Event *b, const Event *e, int64_t until, bool last,
                         int64_t drop_begin_ts) {
  if (finished_) return;
  if (provisional_) {
    th_.segs.pop_back();
    provisional_ = false;
  }
  first_new_change_ = th_.stack.size();  // changes from here on hold local node ids
  if (!started_ && b != e) {
    started_ = true;
    th_.first_ts = b->ts;
    th_.drop_begin_ts = drop_begin_ts;
    seg_begin_ = th_.first_ts;
    th_.stack.push_back({th_.first_ts, StackTrie::kRoot});
  }
  for (const Event *p = b; p != e; ++p) on_event(*p);
  if (b != e) th_.last_ts = std::prev(e)->ts;
  if (last) {
    finished_ = true;
    if (!started_) return;
    cut(th_.last_ts);
    counters.unclosed_frames += stack_.size();
  } else if (started_ && until > seg_begin_) {
    // The open segment, up to the epoch's end: replaced next epoch (I1).
    append_segment(seg_begin_, until);
    provisional_ = true;
  }
}

// A stretch the thread's code did not run in, kept in order and disjoint
// (the walker's add_running needs both). A preemption comes after the fact,
// drained at a later record, so it may lie before a recorder's pause
// already kept: it goes in its place, cut to what its neighbours leave.
void ThreadBuilder::add_off_cpu(Preemption p) {
  auto &w = th_.preempted;
  if (w.empty() || p.out >= w.back().in) {
    if (p.in > p.out) w.push_back(p);
    return;
  }
  const Preemption *at = std::upper_bound(w.begin(), w.end(), p.out,
                                          [](int64_t v, const Preemption &x) { return v < x.out; });
  if (at != w.begin()) p.out = std::max(p.out, std::prev(at)->in);
  if (at != w.end()) p.in = std::min(p.in, at->out);
  if (p.in > p.out) w.insert(at, p);
}

// A sleep, in order (drained after the fact, like a preemption).
void ThreadBuilder::add_sleep(Preemption p) {
  auto &w = th_.slept;
  if (p.in <= p.out) return;
  if (w.empty() || p.out >= w.back().out) return w.push_back(p);
  const Preemption *at = std::upper_bound(w.begin(), w.end(), p.out,
                                          [](int64_t v, const Preemption &x) { return v < x.out; });
  w.insert(at, p);
}

void ThreadBuilder::fold_trie(StackTrie &g) {
  for (uint32_t n = uint32_t(map_.size()); n < trie_.size(); ++n) {
    const StackNode &l = trie_[n];
    map_.push_back(n < 3 ? n : g.child(map_[l.parent], l.kind, l.id));
  }
  // callee_fn is set on a local node when a function is first entered under
  // the site, which may be in a later epoch than the node's creation.
  // Threads may disagree (counted at the end): the smallest id wins, so the
  // choice does not depend on which thread or epoch came first.
  for (uint32_t n : callee_set_) {
    const StackNode &l = trie_[n];
    StackNode &gn = g.at(map_[n]);
    // A callee the manifest vouches for names the site (a pointer site's
    // may also enter others); among equals the smallest id.
    if (gn.callee_fn == 0 || (l.vouched && !gn.vouched)) gn.callee_fn = l.callee_fn;
    else if (l.vouched == gn.vouched && gn.callee_fn != l.callee_fn) {
      gn.callee_fn = std::min(gn.callee_fn, l.callee_fn);
      if (!l.vouched) ++gn.not_direct;  // threads saw different functions under it
    }
    gn.vouched = gn.vouched || l.vouched;
  }
  callee_set_.clear();
  for (uint32_t n = 0; n < not_direct_.size(); ++n) {
    g.at(map_[n]).not_direct += not_direct_[n];
    not_direct_[n] = 0;
  }
  for (size_t i = first_new_change_; i < th_.stack.size(); ++i)
    th_.stack[i].node = map_[th_.stack[i].node];
  first_new_change_ = th_.stack.size();
}

void ThreadBuilder::count_callee_mismatches(const StackTrie &g) {
  for (uint32_t n = 3; n < trie_.size(); ++n)
    if (trie_[n].callee_fn && g[map_[n]].callee_fn != trie_[n].callee_fn)
      ++counters.callee_mismatches;
}

// Appends write each field in place: a struct built aside and copied in is
// reloaded with wider loads than it was stored with, and the store
// forwarding fails (a stall per record; these were most of the merge).
void ThreadBuilder::append_segment(int64_t b, int64_t e) {
  Segment &g = th_.segs.emplace_back();
  g.begin = b;
  g.end = e;
  g.label = label_;
  g.wait_begin = wait_begin_ < 0 ? -1 : wait_begin_;
  g.wait_end = wait_begin_ < 0 ? 0 : kStillWaiting;
  g.release_ts = -1;
  g.waker_tid = 0;
  g.waker_place = 0;
}

void ThreadBuilder::set_top(int64_t ts) {
  uint32_t n = top();
  // Changes of earlier epochs are older than ts (epochs partition time).
  if (th_.stack.size() > first_new_change_ && th_.stack.back().ts == ts) {
    th_.stack.back().node = n;  // several changes at one instant: the last one holds
  } else if (last_local_ != n) {
    StackChange &c = th_.stack.emplace_back();
    c.ts = ts;
    c.node = n;
  }
  last_local_ = n;
}

// Closes the current segment at ts (zero-length segments are dropped).
void ThreadBuilder::cut(int64_t ts) {
  if (ts > seg_begin_) append_segment(seg_begin_, ts);
  seg_begin_ = std::max(seg_begin_, ts);
}

// The trie's hash map costs more than everything else per record; stacks
// repeat, so a small direct-mapped cache in front of it hits nearly always.
uint32_t ThreadBuilder::child(uint32_t parent, FrameKind kind, uint32_t id) {
  uint64_t key = (uint64_t{parent} << 35) | (uint64_t(kind) << 32) | id;
  CacheEntry &c = cache_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
  if (c.key != key + 1) c = {key + 1, trie_.child(parent, kind, id)};
  return c.node;
}

// A function entered directly inside a wrapped call: the site's callee, or
// (a second entry, or only in some calls) code its uninstrumented callee
// re-entered; canonical() tells them apart by the site's not_direct. The
// manifest's direct callee shares the site's node right away.
inline __attribute__((always_inline)) uint32_t ThreadBuilder::enter_site(Frame &site, uint32_t id) {
  const bool direct_call = direct_ && direct_->direct(site.id, id);
  bool vouched = site.entries == 0 && direct_call;
  const uint32_t node = vouched ? site.node : child(site.node, FrameKind::Function, id);
  StackNode &sn = trie_.at(site.node);  // after child(): a new node may move the others
  ++site.entries;
  // A named call's callee re-entered this function, or an indirect site
  // reached another function than before: this call was not direct.
  if (!vouched && ((direct_ && direct_->calls_a_named_function(site.id)) ||
                   (sn.callee_fn != 0 && sn.callee_fn != id)))
    site.foreign = true;
  // A call through a pointer (or a virtual call) that reaches another
  // function than before is dispatch doing its job: info, not a warning.
  auto mismatch = [&] {
    if (direct_ && direct_->through_a_pointer(site.id)) ++counters.dispatch_changes;
    else ++counters.callee_mismatches;
  };
  if (sn.callee_fn == 0 || (vouched && !sn.vouched)) {
    if (sn.callee_fn && sn.callee_fn != id) mismatch();
    sn.callee_fn = id;
    sn.vouched = sn.vouched || vouched;
    callee_set_.push_back(site.node);
  } else if (sn.callee_fn != id) {
    mismatch();
  }
  return node;
}

void ThreadBuilder::push(FrameKind kind, uint32_t id, int64_t ts) {
  uint32_t node;
  if (kind == FrameKind::Function && !stack_.empty() && stack_.back().kind == FrameKind::Site) {
    Frame &site = stack_.back();
    if (site.entries != 0 && !site.foreign && direct_ && direct_->lasts_to_full_expression(site.id)) {
      // The site's callee was entered and returned (an entry that was not
      // the callee would have made the call foreign), and its site lasts to
      // the end of the full expression: this is the caller's own code after
      // the call (`s = f()`'s assignment), the caller's call, not the site's.
      node = child(trie_[site.node].parent, kind, id);
    } else {
      node = enter_site(site, id);
    }
  } else {
    node = child(top(), kind, id);
  }
  Frame &f = stack_.push();
  f.kind = kind;
  f.entries = 0;
  f.foreign = false;
  f.id = id;
  f.node = node;
  set_top(ts);
}

// A site's call ends (or is cut short by an outer exit): was it a direct
// call of one function? Not counted once the thread lost records: a lost
// enter would make a direct call look like none. Calls still open when the
// data ends are not counted either (the process may have been killed).
void ThreadBuilder::close_call(const Frame &f, int64_t ts) {
  if (f.kind != FrameKind::Site || (f.entries == 1 && !f.foreign)) return;
  if (th_.drop_begin_ts >= 0 && ts >= th_.drop_begin_ts) return;
  if (f.node >= not_direct_.size()) not_direct_.resize(trie_.size(), 0);
  ++not_direct_[f.node];
}

void ThreadBuilder::pop(FrameKind kind, uint32_t id, int64_t ts) {
  // Nearly always the innermost frame: no search.
  if (!stack_.empty() && stack_.back().kind == kind && stack_.back().id == id) {
    close_call(stack_.back(), ts);
    stack_.pop_back();
    set_top(ts);
    return;
  }
  pop_below(kind, id, ts);
}

// Match the innermost open frame of this kind and id; frames above it lost
// their exits (longjmp, exceptions through unwrapped code). Rare: out of line.
void ThreadBuilder::pop_below(FrameKind kind, uint32_t id, int64_t ts) {
  for (size_t i = stack_.size(); i-- > 0;) {
    if (stack_[i].kind == kind && stack_[i].id == id) {
      counters.missing_exits += stack_.size() - 1 - i;
      for (size_t j = i; j < stack_.size(); ++j) close_call(stack_[j], ts);
      stack_.resize(i);
      set_top(ts);
      return;
    }
  }
  ++counters.exits_without_enter;
}

void ThreadBuilder::interval_event(bool begin, const Event &e, uint32_t type_label,
                                         uint32_t client_label) {
  IntervalEvent &v = iv_events.emplace_back();
  v.begin = begin;
  v.counted = window_state_ == VPROF_WINDOW_ON;
  v.id = e.arg;
  v.ts = e.ts;
  v.thread = index_;
  v.type_label = type_label;
  v.client_label = client_label;
}

void ThreadBuilder::set_label(uint64_t label, int64_t ts) {
  if (label == label_) return;
  cut(ts);
  label_ = label;
}

void ThreadBuilder::on_event(const Event &e) {
  switch (e.kind) {
    case Kind::FuncEnter: push(FrameKind::Function, static_cast<uint32_t>(e.arg), e.ts); break;
    case Kind::FuncExit: pop(FrameKind::Function, static_cast<uint32_t>(e.arg), e.ts); break;
    case Kind::SiteBegin: push(FrameKind::Site, static_cast<uint32_t>(e.arg), e.ts); break;
    case Kind::SiteEnd:
      // The end of calls in a row (type_label: how many): the site is a loop's.
      if (e.type_label > 1 &&
          std::find(th_.looped_sites.begin(), th_.looped_sites.end(), uint32_t(e.arg)) == th_.looped_sites.end())
        th_.looped_sites.push_back(static_cast<uint32_t>(e.arg));
      pop(FrameKind::Site, static_cast<uint32_t>(e.arg), e.ts);
      break;
    case Kind::IntervalBegin:
      interval_event(true, e, e.type_label, e.client_label);
      set_label(e.arg, e.ts);
      break;
    case Kind::IntervalEnd:
      interval_event(false, e, 0, 0);
      if (label_ == e.arg) set_label(0, e.ts);
      break;
    case Kind::IntervalJoin: set_label(e.arg, e.ts); break;
    case Kind::IntervalLeave: set_label(0, e.ts); break;
    case Kind::WaitBegin:
      ++waits_open_;
      if (wait_begin_ >= 0) {
        ++counters.nested_waits;  // keep the outer wait open: it is the one that blocks
        break;
      }
      cut(e.ts);
      wait_begin_ = e.ts;
      if (vprof_sync_role_is_lock(e.role)) th_.lock_waits.push_back({e.ts, e.arg});
      break;
    case Kind::WaitEnd: {
      if (wait_begin_ < 0) {
        // A nested wait's outer end (the blocked stretch ended at the first
        // end, whose waker woke the thread) closes nothing; only an end with
        // no wait begun at all is unmatched.
        if (waits_open_) {
          --waits_open_;
          last_waker_ = 0;
        } else {
          ++counters.unmatched_wait_ends;
        }
        break;
      }
      if (waits_open_) --waits_open_;
      cut(e.ts);
      // Every piece of this wait (a label change inside it splits it) learns
      // how it ended.
      for (size_t i = th_.segs.size(); i-- > 0;) {
        Segment &g = th_.segs[i];
        if (g.wait_begin != wait_begin_ || g.wait_end != kStillWaiting) break;
        g.wait_end = e.ts;
        g.waker_tid = e.waker_tid;
        g.release_ts = e.waker_tid ? e.release_ts : -1;
      }
      last_waker_ = e.waker_tid;
      last_wait_begin_ = wait_begin_;
      wait_begin_ = -1;
      break;
    }
    case Kind::WakerAt:
      // Right after its wait's end: every piece of that wait learns where
      // the waker released.
      if (last_waker_ && places_) {
        const uint32_t place = places_->number(last_waker_, e.arg);
        for (size_t i = th_.segs.size(); i-- > 0;) {
          Segment &g = th_.segs[i];
          if (g.wait_begin != last_wait_begin_ || g.waker_tid != last_waker_) break;
          g.waker_place = place;
        }
      }
      last_waker_ = 0;
      break;
    case Kind::WaitMutex:
      // Right after its condition wait's begin, at its time; a nested
      // wait's is not the blocking one's.
      if (wait_begin_ == e.ts && waits_open_ == 1)
        th_.cond_mutexes.push_back({e.ts, e.arg & VPROF_OBJ_MASK});
      break;
    case Kind::TaskEnqueue: {
      EnqueueEvent &q = enqueues.emplace_back();
      q.ts = e.ts;
      q.task = e.arg;
      q.thread = index_;
      q.label = label_;
      break;
    }
    case Kind::TaskDequeue: {
      DequeueRef &r = dequeues.emplace_back();
      r.ts = e.ts;
      r.task = e.arg;
      r.thread = index_;
      r.index = uint32_t(th_.dequeues.size());
      Dequeue &d = th_.dequeues.emplace_back();
      d.ts = e.ts;
      d.enq.ts = -1;
      break;
    }
    case Kind::DropBegin:
      // Read from a file, the drop is known when its record comes.
      if (th_.drop_begin_ts < 0) th_.drop_begin_ts = e.ts;
      break;
    case Kind::Preempted:  // drained after the fact: the stretch lies before this record
    case Kind::Recorder:   // the stretch begins at this record
      if (e.kind == Kind::Preempted && e.role == 1) {
        add_sleep({e.release_ts, static_cast<int64_t>(e.arg)});
        break;
      }
      add_off_cpu({e.release_ts, static_cast<int64_t>(e.arg), e.kind == Kind::Recorder});
      break;
    case Kind::Window: on_window(e); break;
    case Kind::Release:
      if (vprof_sync_role_is_lock(e.role)) th_.releases.push_back({e.ts, e.arg});
      break;
    case Kind::ThreadExit: break;
  }
}

// A WINDOW record (trace_format.h): back on, the frames of the stack the
// thread had when it stopped that ended meanwhile end here, innermost first
// (an open wait is innermost: no probe runs inside one); the frames open now
// follow as enters at this time. Since version 8 the stack is unknown: every
// frame of the stop's ends here, and the reader put in the enters of the
// frames that end in the window (analyzer/read/open_frames.h). Up to
// version 7 the record said how many ended (`pops`), and the runtime wrote
// the enters.
void ThreadBuilder::on_window(const Event &e) {
  sampled = true;
  if (VPROF_WINDOW_MADE(e.arg)) window_changes.push_back({e.ts, e.arg});
  if (VPROF_WINDOW_LOST(e.arg)) ++counters.window_frames_lost;
  uint32_t pops = trace::resumes_unknown(e) ? uint32_t(waits_open_ + stack_.size()) : VPROF_WINDOW_POPS(e.arg);
  // The waits first (nested ones too: the runtime's shadow counts each wait
  // begun, as waits_open_ does; the timeline keeps only the outermost).
  if (const uint32_t waits = std::min(pops, waits_open_)) {
    const uint32_t left = waits_open_ - waits;
    if (wait_begin_ >= 0) {
      Event end{};
      end.ts = e.ts;
      end.kind = Kind::WaitEnd;
      on_event(end);  // no waker: it ended unrecorded (as a nested wait's end ends the timeline's)
    }
    waits_open_ = left;
    pops -= waits;
  }
  if (pops) {
    const size_t n = std::min<size_t>(pops, stack_.size());
    counters.window_pops_unmatched += pops - n;
    stack_.resize(stack_.size() - n);
    set_top(e.ts);
  }
  window_state_ = VPROF_WINDOW_STATE(e.arg);
}

}  // namespace vprof::analyzer
