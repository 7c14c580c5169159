#include "analyzer/read/open_frames.h"

#include <algorithm>

namespace vprof::trace {

bool open_frames(const Event *w, const Event *end, bool complete, std::vector<Event> &enters) {
  const size_t first = enters.size();
  size_t depth = 0;  // frames entered after w and still open
  const Event *e = w + 1;
  for (; e != end; ++e) {
    Kind enter;
    switch (e->kind) {
      case Kind::FuncEnter:
      case Kind::SiteBegin:
      case Kind::WaitBegin: ++depth; continue;
      case Kind::FuncExit: enter = Kind::FuncEnter; break;
      case Kind::SiteEnd: enter = Kind::SiteBegin; break;
      case Kind::WaitEnd: enter = Kind::WaitBegin; break;
      case Kind::Window:
        if (VPROF_WINDOW_STATE(e->arg) == VPROF_WINDOW_OFF) goto stopped;
        continue;
      default: continue;
    }
    if (depth > 0) {
      --depth;
      continue;
    }
    Event &f = enters.emplace_back();  // innermost first, for now
    f.ts = w->ts;
    f.arg = e->arg;
    f.kind = enter;
    f.role = e->role;
  }
  if (!complete) {
    enters.resize(first);
    return false;
  }
stopped:
  std::reverse(enters.begin() + std::ptrdiff_t(first), enters.end());
  return true;
}

}  // namespace vprof::trace
