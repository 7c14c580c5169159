/*
 * VPROF_API marks libvprof's entry points: the C functions and the one
 * variable of <vprof/vprof.h> and <vprof/probes.h>. The runtime is built with
 * hidden visibility (runtime/CMakeLists.txt), so these are the only symbols it
 * exports; the mark also keeps them default in a program or library that
 * includes the headers under -fvisibility=hidden itself.
 * No system header, as probes.h requires.
 */
#ifndef VPROF_EXPORT_H
#define VPROF_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define VPROF_API __attribute__((visibility("default")))
#else
#define VPROF_API
#endif

#endif
