// The probes a run leaves dormant (probes.h, VPROF_DORMANT).
#ifndef VPROF_RUNTIME_DORMANT_H
#define VPROF_RUNTIME_DORMANT_H

#include <stddef.h>

namespace vprof::rt {

// Sets the dormant bits from `path` ("f ID" / "s ID" a line). False, with
// `why`, when it cannot be read or a line is not one of those: no bit is
// then set.
bool load_dormant(const char *path, char *why, size_t why_len);

}  // namespace vprof::rt

#endif
