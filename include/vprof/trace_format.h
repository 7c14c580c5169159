/*
 * vprof trace format, on-disk layout. Shared by the runtime (writer) and the
 * analyzer's reader. Documented byte by byte in docs/trace-format.md.
 *
 * A trace directory holds one file per thread: t-<pid>-<tid>.vpt
 * and one small file per process: p-<pid>.vpp (vprof_process_header below),
 * which counts what threads without a file of their own lost.
 *   [ FileHeader: 4096 bytes ][ ring 0 ][ ring 1 ][ data chunk 0 ][ data chunk 1 ] ...  (v3)
 * A thread writes its records into ring `cur_ring`, mapped from its own file
 * (so a kill loses nothing written). When it is full the thread marks it
 * pending (`pending_chunk` = the data chunk it is to become) and goes on in
 * the other ring, which a background thread of the runtime has emptied: the
 * thread itself makes no system call there (before version 3 it appended its
 * ring with pwrite, which waited on the disk beside a busy neighbour). The
 * background thread appends the pending ring, bumps `data_chunks` (from then
 * on the pending ring is not read: pending_chunk < data_chunks), and zeroes
 * it for the next switch. When it lags (the other ring still pending) the
 * thread does that itself and counts it in `late_switches`.
 * Reading order: data chunks 0..data_chunks-1; then ring 1 - cur_ring when
 * pending_chunk == data_chunks; then ring cur_ring when `ring_valid` is set.
 * A reader never trusts `data_chunks` past the end of the file.
 * Version 2 and earlier:
 *   [ FileHeader ][ ring: chunk_bytes ][ data chunk 0 ][ data chunk 1 ] ...
 * the ring was appended to the data region when full; reading order: data
 * chunks 0..data_chunks-1, then the ring when `ring_valid` is set.
 *
 * Each chunk holds 16-byte slots. Each record starts with a slot whose low byte
 * (the kind) is non-zero; a zero kind at a record boundary ends the chunk's
 * data (the rest of the chunk was never written).
 *
 * Slot word 0: bits 0..7 kind, bits 8..63 timestamp in clock ticks relative to
 * FileHeader.tsc_base (56 bits: 278 days at 3 GHz). Slot word 1: the argument.
 * A writer stores word 1 and any extension slots (plain payload, no kind byte)
 * before word 0 of the record's first slot, separated by a compiler barrier, so
 * a process killed mid-record leaves either a whole record or a zero kind: never
 * a torn one. A record that does not fit in what is left of a chunk goes to the
 * next chunk; the rest of the old chunk stays zero.
 * The last two slots of every chunk are reserved for DROP_BEGIN and THREAD_EXIT,
 * so those can always be written.
 *
 * Versions:
 *   1  first version.
 *      Later, without a change to the thread files (so still version 1): the
 *      directory may also hold p-<pid>.vpp process files, with their own magic
 *      and version; readers that list only t-*.vpt files ignore them.
 *   2  PREEMPTED records (kind 18, two slots). A version-1 reader would stop at
 *      the unknown kind, so files of version 2 say min_readable 2. Process
 *      files: version 3 adds `preemption`.
 *   3  two rings (above); no record changes, but a version-2 reader would
 *      read data chunk 0 from the wrong place, so min_readable 3.
 *   4  SITE_SPAN records (kind 19): a call with nothing recorded inside it
 *      is one slot, not a begin and an end. A version-3 reader would stop at
 *      the unknown kind, so min_readable 4.
 *   5  RECORDER records (kind 20): the recorder's own pauses on the program's
 *      thread, so that they are not read as the program's time. A version-4
 *      reader would stop at the unknown kind, so min_readable 5.
 *   6  WINDOW records (kind 21): windowed recording (`vprof run --sample`).
 *      A version-5 reader would stop at the unknown kind, so min_readable 6.
 *   7  WAKER_AT records (kind 22): where the waker released the object, so
 *      that a waker outside instrumented code is named by the code it ran.
 *      A version-6 reader would stop at the unknown kind, so min_readable 7.
 *      Process files are unchanged; beside each, p-<pid>.maps (below).
 *   8  WINDOW records say UNKNOWN (below); min_readable 8.
 *   9  SITE_RUN records (kind 23): the calls of one site in a row with
 *      nothing recorded inside or between them are one record. A version-8
 *      reader would stop at the unknown kind, so min_readable 9.
 *  10  PREEMPTED records also for a sleep (a voluntary switch-out): the
 *      extension's arg says which. A version-9 reader would read a sleep as
 *      a preemption, so min_readable 10.
 *  11  WAIT_MUTEX records (kind 24): the mutex a condition wait gives up
 *      and takes back. A version-10 reader would stop at the unknown kind,
 *      so min_readable 11.
 */
#ifndef VPROF_TRACE_FORMAT_H
#define VPROF_TRACE_FORMAT_H

/* No system header here, nor in probes.h: `vprof instrument` includes
 * probes.h (and so this header) on the first line of every file it rewrites,
 * before the file's own feature-test macros (_GNU_SOURCE, _XOPEN_SOURCE,
 * _FILE_OFFSET_BITS). <stdint.h> there would make glibc fix its feature set
 * first: siginfo_t gone under -std=c99, a 32-bit off_t on a 32-bit build.
 * The fixed-width types come from the compiler's predefined macros, which name the very types <stdint.h> does (vprof_u64 is uint64_t;
 * tests/headers check it), so C++ signatures and layouts are unchanged. */
#if !defined(__UINT8_TYPE__) || !defined(__UINT16_TYPE__) || !defined(__UINT32_TYPE__) || \
    !defined(__UINT64_TYPE__)
#error "vprof's headers need a compiler that predefines __UINT64_TYPE__ and its kin (gcc >= 4.5, clang)"
#endif
typedef __UINT8_TYPE__ vprof_u8;
typedef __UINT16_TYPE__ vprof_u16;
typedef __UINT32_TYPE__ vprof_u32;
typedef __UINT64_TYPE__ vprof_u64;

#define VPROF_TRACE_MAGIC "VPROFTRC"       /* 8 bytes, no terminator on disk */
/* The mode of a trace directory made by a process running as root (vprof
 * run, vprof iterate, the runtime): writable by all and sticky, as /tmp is,
 * so a server that drops root writes its threads' files as its new user. */
#define VPROF_TRACE_DIR_MODE_AS_ROOT 01777
#define VPROF_TRACE_VERSION 11u
#define VPROF_TRACE_MIN_READABLE 11u       /* oldest reader that can read what we write */
#define VPROF_TRACE_OLDEST_READ 8u        /* oldest format this vprof's reader reads */
#define VPROF_HEADER_BYTES 4096u
#define VPROF_SLOT_BYTES 16u

/* Record kinds (the low byte of slot word 0): one table, from which the enum
 * below, vprof_record_slots, the reader's names and its checks and the
 * summary's count are all made. A new kind is one row here (and its meaning
 * at the enum); nothing else lists the kinds.
 *   X(NAME, value, slots, writer, read, name)
 *   slots:  the record's size in slots, its first included; 0 for a STRING
 *           (1 + its payload's, from its length);
 *   writer: VPROF_BY_PROGRAM for what the program's code records (its probes,
 *           sync wrappers, the interval API), VPROF_BY_RUNTIME for the
 *           runtime's own records (strings, markers, switches, its pauses,
 *           windows, waker addresses): `vprof run` counts the program's;
 *   read:   VPROF_READ_PLAIN for a one-slot record the reader takes as it is
 *           (its time and arg), VPROF_READ_OWN for one it decodes by a rule of
 *           its own (analyzer/read/decoder.cc);
 *   name:   what `vprof dump` calls it. */
#define VPROF_BY_PROGRAM 1
#define VPROF_BY_RUNTIME 0
#define VPROF_READ_PLAIN 1
#define VPROF_READ_OWN 0
#define VPROF_RECORD_KINDS(X)                                                          \
  X(FUNC_ENTER, 1, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "func_enter")               \
  X(FUNC_EXIT, 2, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "func_exit")                 \
  X(SITE_BEGIN, 3, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "site_begin")               \
  X(SITE_END, 4, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "site_end")                   \
  X(IV_BEGIN, 5, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "interval_begin")             \
  X(IV_BEGIN_LABELED, 6, 2, VPROF_BY_PROGRAM, VPROF_READ_OWN, "interval_begin")       \
  X(IV_END, 7, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "interval_end")                 \
  X(IV_JOIN, 8, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "interval_join")               \
  X(IV_LEAVE, 9, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "interval_leave")             \
  X(WAIT_BEGIN, 10, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "wait_begin")              \
  X(WAIT_END, 11, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "wait_end")                  \
  X(RELEASE, 12, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "release")                    \
  X(TASK_ENQUEUE, 13, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "task_enqueue")          \
  X(TASK_DEQUEUE, 14, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "task_dequeue")          \
  X(STRING, 15, 0, VPROF_BY_RUNTIME, VPROF_READ_OWN, "string")                        \
  X(DROP_BEGIN, 16, 1, VPROF_BY_RUNTIME, VPROF_READ_OWN, "drop_begin")                \
  X(THREAD_EXIT, 17, 1, VPROF_BY_RUNTIME, VPROF_READ_OWN, "thread_exit")              \
  X(PREEMPTED, 18, 2, VPROF_BY_RUNTIME, VPROF_READ_OWN, "preempted")                  \
  X(SITE_SPAN, 19, 1, VPROF_BY_PROGRAM, VPROF_READ_OWN, "site_span")                  \
  X(RECORDER, 20, 1, VPROF_BY_RUNTIME, VPROF_READ_OWN, "recorder")                    \
  X(WINDOW, 21, 1, VPROF_BY_RUNTIME, VPROF_READ_PLAIN, "window")                      \
  X(WAKER_AT, 22, 1, VPROF_BY_RUNTIME, VPROF_READ_PLAIN, "waker_at")                  \
  X(SITE_RUN, 23, 2, VPROF_BY_PROGRAM, VPROF_READ_OWN, "site_run")                    \
  X(WAIT_MUTEX, 24, 1, VPROF_BY_PROGRAM, VPROF_READ_PLAIN, "wait_mutex")

/* What each kind's time and arg hold:
 *   NONE: never written: end of data
 *   FUNC_ENTER: arg: function id
 *   FUNC_EXIT: arg: function id
 *   SITE_BEGIN: arg: call-site id
 *   SITE_END: arg: call-site id
 *   IV_BEGIN: arg: interval id
 *   IV_BEGIN_LABELED: arg: interval id; +1 extension slot: w0 = type string id,
 *     arg = client string id (0 = none)
 *   IV_END: arg: interval id
 *   IV_JOIN: arg: interval id
 *   IV_LEAVE: arg: 0
 *   WAIT_BEGIN: arg: role<<56 | object address (low 56 bits)
 *   WAIT_END: arg: waker tid (low 32) | (uint32)(this tick - the waker's release
 *     tick) (high 32; modular: the reader matches it against the waker's
 *     RELEASE record on the same object). Waker tid 0 = none (the map had
 *     no other thread's release). VPROF_WAIT_NOT_ACQUIRED (bit 31) set:
 *     the wait did not get the object (try-lock failed, timed out). The
 *     object is the one of this thread's preceding WAIT_BEGIN.
 *   RELEASE: arg: role<<56 | object address
 *   TASK_ENQUEUE: arg: task pointer
 *   TASK_DEQUEUE: arg: task pointer
 *   STRING: arg: string id (low 32) | byte length (high 32); followed by
 *     ceil(len/16) payload slots holding the bytes (no terminator)
 *   DROP_BEGIN: arg: 0. The budget ran out here: records after this time are lost
 *     and counted in FileHeader.dropped_records
 *   THREAD_EXIT: arg: 0. The thread ended cleanly; nothing follows
 *   PREEMPTED: arg: CLOCK_MONOTONIC ns when the kernel switched the thread out
 *     involuntarily (perf's SWITCH_OUT_PREEMPT); +1 extension slot:
 *     w0 = CLOCK_MONOTONIC ns when it switched back in, arg = 0. With
 *     arg = 1 (version 10) the switch-out was a sleep (the thread blocked:
 *     a wait, I/O), and w0 is when it ran again: a wake-up between the two
 *     left it runnable, waiting for a core, until w0. The
 *     record's own time is when the runtime drained the switches (at
 *     interval end, a full ring, thread exit): the off-CPU stretch
 *     lies before it, among records already written
 *   SITE_SPAN: a whole call at a call site, in one slot: the site's begin turned
 *     into this when its end came next (nothing recorded in between,
 *     the call shorter than 2^32 ticks). Time: the begin; arg: call-site
 *     id (low 32) | ticks from begin to end (high 32). Read as a
 *     SITE_BEGIN and a SITE_END
 *   SITE_RUN: calls of one site in a row (a loop), each with nothing recorded
 *     inside and nothing recorded between them: a SITE_SPAN the next such
 *     call turned into this. Time: the first call's begin; arg: call-site
 *     id (low 32) | ticks from the first begin to the last end (high 32);
 *     +1 extension slot: w0 = the calls' summed ticks << 8 (kind bits 0,
 *     so that a reader stops there until the head says SITE_RUN), arg =
 *     call-site id (low 32) | the number of calls (high 32). Read as the time between the calls (the
 *     caller's) and then one SITE_BEGIN and SITE_END around the calls' sum
 *   RECORDER: the recorder's own pause on the program's thread: its file made
 *     (the thread's first record), a ring switched, a ring appended
 *     because the writer lagged. Time: when the pause began (the
 *     record that paid for it has the same time; this one follows it);
 *     arg: the pause's length in ticks. The program's code did not run
 *     in it: the analysis shows it as a (recorder) leaf
 *   WINDOW: windowed recording (VPROF_SAMPLE): this thread saw the recording
 *     window change. arg: VPROF_WINDOW_* fields below. Time: when the
 *     change happened (the thread recorded nothing since). To OFF:
 *     nothing more is recorded until a WINDOW record to ON or DRAIN.
 *     That one says UNKNOWN (version 8): the thread's stack is not
 *     known. Each frame open at its time is read from the exit that
 *     ends it before the thread's next WINDOW record to OFF; a wait
 *     begun meanwhile gets its WAIT_BEGIN at the record's time, written
 *     by its end. Up to version 7 it said instead how many frames of the
 *     stack at the stop ended meanwhile (`pops`), and was followed by a
 *     FUNC_ENTER, SITE_BEGIN or WAIT_BEGIN at its own time for each
 *     frame begun meanwhile and still open, outermost first.
 *     An interval counts only if its IV_BEGIN comes while the thread's
 *     last WINDOW record says ON
 *   WAKER_AT: arg: the return address at the waker's release (an address in
 *     the code that released or signalled the object, in the waker's
 *     process: p-<pid>.maps says which file). Right after the WAIT_END
 *     whose waker it names, at the same time; written only when the
 *     ownership map knew the place. Said of every named waker: a waker
 *     outside instrumented code (no frame of its own) is read as the
 *     function holding this address
 *   WAIT_MUTEX: arg: VPROF_SYNC_MUTEX<<56 | the address of the mutex that the
 *     condition wait of the WAIT_BEGIN just before it (same time) gives up
 *     and takes back before it returns (pthread_cond_wait's second
 *     argument). The runtime recorded the wait's release of the mutex
 *     before it, and records the mutex's releases by other threads while
 *     the wait lasts: the analysis tiles the stretch from the signal to the
 *     wait's end by the threads that held the mutex in turn
 */
enum vprof_kind {
  VPROF_K_NONE = 0, /* never written: end of data */
#define VPROF_KIND_ENUM_(NAME, value, slots, writer, read, name) VPROF_K_##NAME = value,
  VPROF_RECORD_KINDS(VPROF_KIND_ENUM_)
#undef VPROF_KIND_ENUM_
  VPROF_K_MAX_ /* one past the last kind */
};
/* The table's values run 1, 2, ... without a gap: as many rows as kinds. */
#define VPROF_KIND_ROW_(NAME, value, slots, writer, read, name) +1
typedef char vprof_kind_rows_without_a_gap_[(0 VPROF_RECORD_KINDS(VPROF_KIND_ROW_)) == VPROF_K_MAX_ - 1 ? 1 : -1];
#undef VPROF_KIND_ROW_
/* A WINDOW record's argument. State: what recording is from the record's time. */
#define VPROF_WINDOW_OFF 0u      /* nothing recorded: a probe is its inline test */
#define VPROF_WINDOW_ON 1u       /* everything recorded; an interval begun now counts */
#define VPROF_WINDOW_DRAIN 2u    /* everything recorded; intervals begun now do not count: the
                                    window waits for those counted to end */
#define VPROF_WINDOW_STATE(arg) ((vprof_u32)((arg) & 3u))
#define VPROF_WINDOW_MADE(arg) ((vprof_u32)(((arg) >> 2) & 1u))    /* this thread changed the state
                                                                       (one record per change) */
#define VPROF_WINDOW_LOST(arg) ((vprof_u32)(((arg) >> 3) & 1u))    /* more frames were begun
                                                                       meanwhile than it could keep
                                                                       (up to version 7) */
#define VPROF_WINDOW_CAPPED(arg) ((vprof_u32)(((arg) >> 4) & 1u))  /* to OFF at the cap, with counted
                                                                       intervals still open */
#define VPROF_WINDOW_UNKNOWN(arg) ((vprof_u32)(((arg) >> 5) & 1u)) /* recording resumes with the
                                                                       stack unknown (version 8) */
#define VPROF_WINDOW_POPS(arg) ((vprof_u32)(((arg) >> 8) & 0xffffffu))  /* up to version 7 */
#define VPROF_WINDOW_SEQ(arg) ((vprof_u32)((arg) >> 32))           /* the window's number, from 1 */
#define VPROF_WINDOW_ARG(state, made, lost, capped, pops, seq)                                     \
  ((vprof_u64)(state) | ((vprof_u64)(made) << 2) | ((vprof_u64)(lost) << 3) |                      \
   ((vprof_u64)(capped) << 4) | ((vprof_u64)(pops) << 8) | ((vprof_u64)(seq) << 32))
#define VPROF_WINDOW_UNKNOWN_BIT ((vprof_u64)1 << 5)

/* Sync roles, the top byte of WAIT_BEGIN / RELEASE arguments. */
enum vprof_sync_role {
  VPROF_SYNC_MUTEX = 1,        /* exclusive lock acquire / release */
  VPROF_SYNC_MUTEX_TRY = 2,    /* try-acquire (wait-end says whether it got it) */
  VPROF_SYNC_SHARED = 3,       /* rwlock shared acquire / release */
  VPROF_SYNC_CONDVAR = 4,      /* condvar wait / signal */
  VPROF_SYNC_CONDVAR_TIMED = 5,/* timed condvar wait */
  VPROF_SYNC_BROADCAST = 6,    /* condvar broadcast (release side only) */
  VPROF_SYNC_SEMAPHORE = 7,    /* semaphore wait / post */
  VPROF_SYNC_QUEUE = 8,        /* blocking queue dequeue / enqueue */
  VPROF_SYNC_IO = 9            /* an I/O wait (no waker) */
};

#define VPROF_WAIT_NOT_ACQUIRED 0x80000000ull /* in WAIT_END's arg; tids are < 2^22 */

/* Whether the runtime writes a RELEASE record for a release of this role by
 * default. A lock's releases (mutex, try, shared) are the most frequent sync
 * events of a server and their waiters wake microseconds later: the
 * WAIT_END's delta names the release time, and the record is written only
 * when a thread was waiting for the lock (the analysis tiles a wait by the
 * holders in turn), or for every release with VPROF_MUTEX_RELEASES=1.
 * Signals, posts and enqueues keep theirs. */
/* Whether a role is a lock's (its holders hold it in turn: the analysis
 * tiles a wait on it by each holder's stretch). */
static inline int vprof_sync_role_is_lock(vprof_u32 role) {
  return role == VPROF_SYNC_MUTEX || role == VPROF_SYNC_MUTEX_TRY || role == VPROF_SYNC_SHARED;
}
static inline int vprof_release_recorded_by_default(vprof_u32 role) { return !vprof_sync_role_is_lock(role); }
#define VPROF_OBJ_MASK 0x00ffffffffffffffull
#define VPROF_TS_SHIFT 8
#define VPROF_KIND_MASK 0xffull
#define VPROF_STRING_MAX_BYTES 4096u /* the longest string a reader believes (the runtime writes <= 255) */

/* The slots a record takes, its first included, read from its first slot:
 * the one rule the runtime writes by and every reader skips by. 0: not a
 * record (end of data, or a kind this version does not know). A string's
 * length is bounded by VPROF_STRING_MAX_BYTES, so that a damaged length
 * never makes a reader skip further than a string can reach. */
static inline vprof_u64 vprof_record_slots(vprof_u64 w0, vprof_u64 arg) {
  vprof_u64 kind = w0 & VPROF_KIND_MASK, len = arg >> 32;
  switch (kind) {
#define VPROF_KIND_SLOTS_(NAME, value, slots, writer, read, name) \
  case value:                                                     \
    if (slots) return slots;                                      \
    break;
    VPROF_RECORD_KINDS(VPROF_KIND_SLOTS_)
#undef VPROF_KIND_SLOTS_
    default: return 0;
  }
  if (len > VPROF_STRING_MAX_BYTES) len = VPROF_STRING_MAX_BYTES;  /* a STRING */
  return 1 + (len + VPROF_SLOT_BYTES - 1) / VPROF_SLOT_BYTES;
}

/* Whether a record of this kind is the program's (the table's writer), and
 * whether the reader takes it as it is (its `read`): 0 for an unknown kind. */
static inline int vprof_kind_by_program(vprof_u64 kind) {
  switch (kind) {
#define VPROF_KIND_BY_(NAME, value, slots, writer, read, name) \
  case value: return writer;
    VPROF_RECORD_KINDS(VPROF_KIND_BY_)
#undef VPROF_KIND_BY_
    default: return 0;
  }
}

enum vprof_clock_source {
  VPROF_CLOCK_TSC = 1,        /* x86-64 rdtsc */
  VPROF_CLOCK_CNTVCT = 2,     /* aarch64 virtual counter */
  VPROF_CLOCK_MONOTONIC = 3   /* clock_gettime(CLOCK_MONOTONIC), ticks are ns */
};

/* Flags in FileHeader.flags. */
#define VPROF_FLAG_CLOSED 1u          /* the thread wrote THREAD_EXIT and the file was trimmed */
#define VPROF_FLAG_PROCESS_EXITED 2u  /* the process ran its exit handler while this thread lived */
#define VPROF_FLAG_INVARIANT_TSC 4u   /* cpuid reported an invariant TSC */

/*
 * The first 4096 bytes of each file. Little-endian, naturally aligned. Fields after
 * `header_bytes` may grow in later versions; readers use the offsets below.
 * Fields marked (live) are updated while the thread runs, through the mapping.
 */
struct vprof_file_header {
  char magic[8];                 /*   0 "VPROFTRC" */
  vprof_u16 version;             /*   8 */
  vprof_u16 min_readable;        /*  10 */
  vprof_u32 header_bytes;        /*  12 = 4096 */
  vprof_u32 pid;                 /*  16 */
  vprof_u32 tid;                 /*  20 */
  vprof_u32 ppid;                /*  24 */
  vprof_u32 clock_source;        /*  28 enum vprof_clock_source */
  vprof_u64 chunk_bytes;         /*  32 size of the ring and of every data chunk */
  vprof_u64 tsc_base;            /*  40 record timestamps are relative to this tick value */
  double ticks_per_ns;           /*  48 start-up calibration */
  vprof_u64 anchor0_ticks;       /*  56 a (ticks, CLOCK_MONOTONIC ns) pair taken at process start */
  vprof_u64 anchor0_ns;          /*  64 */
  vprof_u64 anchor1_ticks;       /*  72 (live) a later pair: chunk switches and exit */
  vprof_u64 anchor1_ns;          /*  80 (live) */
  vprof_u64 dropped_records;     /*  88 (live) records lost: budget or disk full, no fd, re-entry */
  vprof_u32 flags;               /*  96 (live) VPROF_FLAG_* */
  vprof_u32 reentered_records;   /* 100 (live) of dropped_records, those of a signal handler's probe
                                    that interrupted a record (0 in files before 2026-12) */
  double probe_pair_ns;          /* 104 measured at process start: one enter/exit probe pair */
  double empty_interval_ns;      /* 112 measured at process start: begin+end of an empty interval */
  vprof_u64 start_realtime_ns;   /* 120 CLOCK_REALTIME at process start, for humans */
  char comm[32];                 /* 128 process name (NUL-padded) */
  char thread_name[32];          /* 160 thread name at file creation (NUL-padded) */
  vprof_u64 data_chunks;         /* 192 (live) chunks appended after the ring(s) */
  vprof_u32 ring_valid;          /* 200 (live) 1 when ring cur_ring holds records not yet appended */
  vprof_u32 late_switches;       /* 204 (live, v3) ring switches that found the other ring still
                                    pending: the thread appended it itself (the writer lagged) */
  vprof_u32 cur_ring;            /* 208 (live, v3) the ring being written: 0 or 1 */
  vprof_u32 off_intervals;       /* 212 (live, v6) intervals begun between recording windows
                                    (VPROF_SAMPLE): not recorded, counted here */
  vprof_u64 pending_chunk;       /* 216 (live, v3) ring 1 - cur_ring is full and becomes data
                                    chunk pending_chunk; read only while == data_chunks */
  vprof_u8 pad[4096 - 224];
};

#ifdef __cplusplus
static_assert(sizeof(vprof_file_header) == VPROF_HEADER_BYTES, "header is one page");
#else
_Static_assert(sizeof(struct vprof_file_header) == VPROF_HEADER_BYTES, "header is one page");
#endif

/* The layout at the top, for readers of every version: how many rings come
 * before data chunk 0, which ring is current, and whether the other one is a
 * full ring not yet appended (read in place, between the data and the
 * current ring). */
static inline vprof_u64 vprof_rings_before_data(const struct vprof_file_header *h) {
  return h->version >= 3 ? 2u : 1u;
}
static inline vprof_u64 vprof_current_ring(const struct vprof_file_header *h) {
  return h->version >= 3 && h->cur_ring == 1 ? 1u : 0u;
}
static inline int vprof_ring_pending(const struct vprof_file_header *h) {
  return h->version >= 3 && h->pending_chunk == h->data_chunks;
}

/*
 * p-<pid>.vpp (p-<pid>.<n>.vpp if a pid is reused): one page per process,
 * created at start-up (and in a forked child) before any thread file, space
 * reserved before it is mapped. It counts threads that wrote records but could
 * get no file of their own (file descriptors exhausted, no space, the file
 * system refused) and the records they lost; a thread that has a file counts
 * its own drops in its header. Both counters are live: written through the
 * mapping, so they survive SIGKILL.
 *
 * p-<pid>.maps (p-<pid>.<n>.maps beside p-<pid>.<n>.vpp): the executable
 * lines of the process's /proc/self/maps, copied when its process file is
 * made and again at exit (libraries loaded meanwhile), so that a WAKER_AT
 * address can be read as a file and an offset in it, and named from that
 * file's symbol table offline. Missing or unreadable: such addresses stay
 * unnamed.
 */
#define VPROF_PROCESS_MAGIC "VPROFPRC"   /* 8 bytes, no terminator on disk */
#define VPROF_PROCESS_VERSION 8u /* 2: manifest_id, manifest_path; 3: preemption; 4: file_errno, file_euid;
                                    5: manifest_ids (one per rewritten file; manifest_id left empty);
                                    6: ownership_misses; 7: budget_mb, chunk_bytes; 8: thread_euids */
#define VPROF_THREAD_EUIDS 4u    /* effective uids a process file keeps for its threads' files */
#define VPROF_MANIFEST_IDS 256u  /* registered ids a process file holds (more are counted, not kept) */
#define VPROF_MANIFEST_ID_DIGITS 16 /* hex digits of a manifest's or a rewritten file's id */
#define VPROF_DORMANT_IDS (1u << 20) /* function and call-site ids a run can leave dormant (probes.h) */

/* vprof_process_header.preemption, bits. 0 (and files before version 3): not recorded. */
#define VPROF_PREEMPT_MEASURED 1u  /* at least one thread recorded its context switches */
#define VPROF_PREEMPT_REFUSED 2u   /* perf_event_open failed for a thread (or VPROF_PREEMPT=0) */

struct vprof_process_header {
  char magic[8];                 /*   0 "VPROFPRC" */
  vprof_u16 version;             /*   8 VPROF_PROCESS_VERSION */
  vprof_u16 min_readable;        /*  10 VPROF_PROCESS_MIN_READABLE */
  vprof_u32 header_bytes;        /*  12 = 4096 */
  vprof_u32 pid;                 /*  16 */
  vprof_u32 ppid;                /*  20 */
  vprof_u64 lost_threads;        /*  24 (live) threads that recorded but got no trace file */
  vprof_u64 lost_records;        /*  32 (live) records of those threads */
  vprof_u64 start_realtime_ns;   /*  40 CLOCK_REALTIME at process start */
  char comm[32];                 /*  48 process name (NUL-padded) */
  char manifest_id[24];          /*  80 versions 2-4: the instrumenter's manifest id (16 hex digits)
                                        that the program's instrumented code registered, NUL-padded;
                                        "" none; "mixed" when two different ones did. Version 5:
                                        "" (the ids are in manifest_ids) */
  char manifest_path[1024];      /* 104 where that manifest was written (NUL-terminated) */
  vprof_u32 preemption;          /*1128 (live) VPROF_PREEMPT_* bits */
  vprof_u32 ownership_misses;    /*1132 (live) version 6: waits timed and signals recorded on sync
                                        objects the ownership map had no slot for (VPROF_OWNERSHIP_SLOTS;
                                        each one, not each object): their wake-ups name no waker;
                                        0 before version 6 */
  vprof_u32 file_errno;          /*1136 (live) why the first thread file the process could not
                                        create was refused (an errno; 0: none was), and */
  vprof_u32 file_euid;           /*1140 (live) the process's effective uid then (a server that
                                        dropped root: EACCES as its new user) */
  vprof_u32 manifest_ids_count;  /*1144 (live) distinct ids registered (vprof_register_manifest:
                                        one per rewritten file, its signature in the manifest's
                                        "files"), up to VPROF_MANIFEST_IDS; one more than that:
                                        more were registered than the file holds */
  vprof_u32 budget_mb;           /*1148 version 7: the budget of each of the process's threads'
                                        files, VPROF_BUFFER_MB as the process read it (so what a
                                        run lost is explained with the program's own setting,
                                        whatever environment its command gave it); 0 before */
  vprof_u64 manifest_ids[VPROF_MANIFEST_IDS]; /*1152 (live) those ids, the 16 hex digits' value */
  vprof_u64 chunk_bytes;         /*3200 version 7: a ring's size, VPROF_CHUNK_KB as read; 0 before */
  vprof_u32 thread_euids[VPROF_THREAD_EUIDS]; /*3208 (live) version 8: the effective uids the process's
                                        threads made their files as (a server that drops root makes
                                        them as its new user), ~0u for an unused slot: a thread file
                                        owned by any other user was not written by this process (a
                                        trace directory root shares, docs/run.md), and the reader
                                        refuses it. Not kept past VPROF_THREAD_EUIDS (counted in */
  vprof_u32 thread_euids_more;   /*3224 (live) version 8: files made as yet another uid: the reader
                                        then checks none) */
  vprof_u32 reserved8;           /*3228 */
  vprof_u8 pad[4096 - 1160 - 8 * VPROF_MANIFEST_IDS - 24];
};

#ifdef __cplusplus
static_assert(sizeof(vprof_process_header) == VPROF_HEADER_BYTES, "process file is one page");
#else
_Static_assert(sizeof(struct vprof_process_header) == VPROF_HEADER_BYTES, "process file is one page");
#endif

/* What every process file starts with, written in one place: the runtime's
   own p-<pid>.vpp and the p-0.vpp that `vprof run` makes for processes that
   cannot make theirs. A reader refuses min_readable above its version. */
#define VPROF_PROCESS_MIN_READABLE 1u
static inline void vprof_process_header_identity(struct vprof_process_header *h) {
  __builtin_memcpy(h->magic, VPROF_PROCESS_MAGIC, 8);
  h->version = VPROF_PROCESS_VERSION;
  h->min_readable = VPROF_PROCESS_MIN_READABLE;
  h->header_bytes = VPROF_HEADER_BYTES;
}

struct vprof_slot {
  vprof_u64 w0; /* kind | ticks << 8 */
  vprof_u64 arg;
};

#ifdef __cplusplus
static_assert(sizeof(vprof_slot) == VPROF_SLOT_BYTES, "records are 16 bytes");
#endif

#endif /* VPROF_TRACE_FORMAT_H */
