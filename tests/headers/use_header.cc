// The C++ sugar and every public call, compiled under each C++ standard.
#include <vprof/vprof.h>
#ifndef VPROF_DISABLE
#include <vprof/probes.h>
#endif

int use_header_cxx() {
  vprof::IntervalScope s(1, "NewOrder");
  { vprof::JoinScope j(1); }
  vprof_interval_begin_labeled(2, nullptr, "client");
  vprof_interval_end(2);
#ifndef VPROF_DISABLE
  vprof::detail::FnScope f(3);
  vprof::detail::SiteScope c(4);
#endif
  return static_cast<int>(s.id());
}
