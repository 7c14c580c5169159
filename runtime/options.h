// Runtime options (common/runtime_options.def), read once from the environment at start-up.
#ifndef VPROF_RUNTIME_OPTIONS_H
#define VPROF_RUNTIME_OPTIONS_H

#include <stdint.h>

namespace vprof::rt {

struct Options {
#define VPROF_OPTION_STR(field, env, def, help) char field[4096];
#define VPROF_OPTION_U64(field, env, def, min, max, step, help) uint64_t field;
#include "common/runtime_options.def"
#undef VPROF_OPTION_STR
#undef VPROF_OPTION_U64
};

// Fills `o` from the environment. Each value that is not valid for its option
// (common/runtime_options.def: type, range, step; a trace directory too long for a path; a
// ring larger than the whole budget) keeps the default and produces one
// warning line on stderr naming the variable, the value and the default used.
void read_options(Options &o);

}  // namespace vprof::rt

#endif
