/*
 * The probe header of a file rewritten for a build whose runs may leave
 * probes dormant (an iterate session's build ahead: docs/iterate.md, "Build
 * once"): its probes test their id's bit first (probes.h). Its first line,
 * as probes.h's is otherwise, is vprof's marker (instrumenter/journal.h).
 */
#ifndef VPROF_DORMANT_PROBES
#define VPROF_DORMANT_PROBES 1
#endif
#include <vprof/probes.h>
