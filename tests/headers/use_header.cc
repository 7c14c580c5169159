// The C++ sugar and every public call, compiled under each C++ standard.
#include <vprof/vprof.h>
#ifndef VPROF_DISABLE
#include <vprof/probes.h>

#include <type_traits>
// probes.h names its types from the compiler's macros (it may include no
// system header): they are <stdint.h>'s, so C++ signatures do not change.
static_assert(std::is_same<vprof_u64, uint64_t>::value, "vprof_u64 is uint64_t");
static_assert(std::is_same<vprof_u32, uint32_t>::value, "vprof_u32 is uint32_t");
static_assert(std::is_same<vprof_u16, uint16_t>::value, "vprof_u16 is uint16_t");
static_assert(std::is_same<vprof_u8, uint8_t>::value, "vprof_u8 is uint8_t");
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
