// The frames open when a thread resumed recording with its stack unknown
// (trace format 8: a WINDOW record with VPROF_WINDOW_UNKNOWN). Between
// recording windows a probe does nothing, so the runtime cannot say which
// frames a thread is in when the next window opens; each of them that ends
// before the thread stops recording again says so by its exit. The reader
// puts their enters right after the WINDOW record, at its time, and the
// thread's stack is whole for every frame that ends in the window: all of a
// counted interval's own frames (it begins in the window and holds it open
// until it ends), and the holders' and wakers' frames that end in it.
// A frame that stays open across the whole window (a thread's main loop
// entered while nothing recorded) is not seen: its time goes to the frame
// below it, as for code that is not instrumented (docs/method.md).
#ifndef VPROF_ANALYZER_READ_OPEN_FRAMES_H
#define VPROF_ANALYZER_READ_OPEN_FRAMES_H

#include <cstddef>
#include <vector>

#include "analyzer/read/trace_reader.h"

namespace vprof::trace {

// Whether e resumes recording with the stack unknown. Inline: the reader
// asks it of every event (out of line it was 0.7% of `vprof analyze`'s
// instructions on the bench's files).
inline bool resumes_unknown(const Event &e) {
  return e.kind == Kind::Window && VPROF_WINDOW_UNKNOWN(e.arg) && VPROF_WINDOW_STATE(e.arg) != VPROF_WINDOW_OFF;
}

// [w, end) are a thread's events from such a WINDOW record on. Appends to
// `enters`, outermost first, an enter at w's time for each exit (of a
// function, call site or wait) before the thread's next WINDOW record to OFF
// that has no enter after w. False when that record is not in [w, end) and
// `complete` is false (more events are to come): nothing is appended then.
bool open_frames(const Event *w, const Event *end, bool complete, std::vector<Event> &enters);

}  // namespace vprof::trace

#endif  // VPROF_ANALYZER_READ_OPEN_FRAMES_H
