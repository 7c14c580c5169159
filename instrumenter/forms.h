// The text the instrumenter inserts. Every wrapper is a pair of insertions
// (prefix before the original text, suffix after it), so the original
// spelling of callees and arguments is kept byte for byte and nested wrappers
// compose: in f(g(x)) g's pair sits inside f's pair.
//
// Function probes (inserted after the body's '{'):
//   C++  int f(int x) {                 int f(int x) { vprof::detail::FnScope vprof_fn_(1);
//   C    int f(int x) {                 int f(int x) { __attribute__((cleanup(vprof_fn_cleanup), unused)) const vprof_u32 vprof_fn_ = (vprof_fn_enter(1), 1u);
//
// Call sites, C++: the call runs inside a closure that a helper calls between
// the site's begin and end (a scope, so the end also runs when the call
// throws), and the call expression keeps its value category and identity:
// a prvalue is returned straight through (elided: no copy, no move, C++17's
// guarantee kept), a reference comes back as a pointer and is dereferenced.
//   void,       g(x)   ->  vprof::detail::site_call(2, [&]() VPROF_CLOSURE_ { return g(x); })
//   prvalue     k(x)   ->  vprof::detail::site_call(4, [&]() VPROF_CLOSURE_ { return k(x); })
//   lvalue      h(x)   ->  vprof::detail::site_lvalue(vprof::detail::site_call(3,
//                              [&]() VPROF_CLOSURE_ { return __builtin_addressof(h(x)); }))
//   xvalue      m(x)   ->  vprof::detail::site_xvalue(vprof::detail::site_call(3,
//                              [&]() VPROF_CLOSURE_ { return vprof::detail::site_addr(m(x)); }))
//   (VPROF_CLOSURE_: the closure is inlined whatever the caller's size, preamble())
// A call a closure would change (a call that names __func__ or a
// source_location default, a structured binding, a variable-length array,
// co_await, va_arg, a statement expression or a label's address: tu_scan.cc,
// closure_safe) and a class prvalue that cannot be moved keep the forms
// below, which change no value either; their site stays open when the call
// throws (the enclosing function's exit closes it):
//   void        g(x)   ->  (vprof_site_begin(2), g(x), vprof_site_end(2))
//   lvalue /    h(x)   ->  vprof::detail::site_pass(3, (vprof_site_begin(3), h(x)))
//   xvalue                 (returns T& / T&&: value category unchanged)
//   prvalue     k(x)   ->  vprof::detail::site_value(4, (vprof_site_begin(4), k(x)))
//                          (a scalar: copying it changes nothing)
//   class       k(x)   ->  ((void)vprof::detail::SiteScope(4), k(x))   (the object
//   prvalue                is the call's own; the site ends with the full-expression)
// Any standard:
//   noreturn    abort()->  (vprof_site_begin(5), abort())   the call stays visible, so
//                          -Wreturn-type and the optimizer still see control stop
//   dependent   t.m()  ->  ((void)vprof::detail::SiteScope(6), t.m())   (inside templates:
//                          the type is unknown; the site ends with the full-expression)
// Call sites (C): void and noreturn as above; a value:
//   k(x)  ->  __extension__ ({ __auto_type vprof_r4_ = (vprof_site_begin(4), k(x)); vprof_site_end(4); vprof_r4_; })
//   (the declaration comes first for trees built with -Wdeclaration-after-statement;
//   where the code throws the value away, `k(x);`, the plan puts (void) in front:
//   clang's default -Wunused-value calls such a statement expression unused)
//
// Sync wrappers (O: the object address, R: a VPROF_SYNC_* role):
//   release   unlock(&m)   ->  (vprof_sync_release(O, R), unlock(&m))
//   acquire   lock(&m)     ->  (vprof_sync_wait_begin(O, R), lock(&m), vprof_sync_wait_end(O, R, 1))
//             (a condition wait's begin names its mutex M:
//              vprof_sync_cond_wait_begin(O, R, M))
//             (value, C++)     vprof::detail::sync_zero(O, R, (vprof_sync_wait_begin(O, R), trylock(&m)))
//             (value, C)       __extension__ ({ __auto_type vprof_s7_ = (vprof_sync_wait_begin(O, R), trylock(&m));
//                                vprof_sync_wait_end(O, R, vprof_s7_ == 0); vprof_s7_; })
//   scoped    MutexLock l(&mu_);  ->  vprof_sync_wait_begin(O, R); MutexLock l(&mu_);
//             vprof_sync_wait_end(O, R, 1); vprof::detail::SyncRelease vprof_sync8_{O, R};
//             (declared after the lock, destroyed just before it: the release
//             event precedes the unlock on every way out of the scope)
//
// Every rewritten file starts with preamble(): the probe header on a line that
// is also vprof's marker (it names the original's SHA-1, journal.h), the C++
// helpers above, a constructor (one per translation unit) that tells the
// runtime which manifest names its ids, and `#line 1` so the rest of the file
// keeps its line numbers. A file that starts with a UTF-8 byte order mark
// keeps it first.
//
// Everything inserted, and probes.h with what it includes, names no system
// header and uses builtin types only (vprof_u32, probes.h: no uint32_t,
// size_t or NULL): the preamble comes before the file's own feature-test
// macros (_GNU_SOURCE, _FILE_OFFSET_BITS), which must still be the first to
// reach glibc's <features.h>, and a C file need not include <stdint.h> for
// its probes to compile (tests/instrumenter/isolation_test.cc).
#ifndef VPROF_INSTRUMENTER_FORMS_H
#define VPROF_INSTRUMENTER_FORMS_H

#include <cstdint>
#include <string>

namespace vprof::instr {

enum class Lang { C, Cxx };

enum class ValueForm {
  Void,       // result discarded or void
  Glvalue,    // lvalue or xvalue result (C++)
  Prvalue,    // value result
  NoReturn,   // the callee never returns
  Dependent,  // type unknown (template pattern), or a class prvalue that cannot move
};

// How a C++ call site is wrapped, beside its value form (forms.h's table).
enum class Closure {
  None,    // the forms that put no closure around the call (C; calls closure_safe refuses)
  Value,   // void or prvalue: the closure returns the call
  Lvalue,  // the closure returns the address, the helper the lvalue
  Xvalue,  // the same, as an xvalue
};

struct Wrap {
  std::string prefix, suffix;
};

// The text a rewritten file starts with: vprof's marker, the helpers, and a
// constructor that registers file_id (its entry in the manifest's "files")
// and manifest_path with the runtime; file_id "": none (sync wraps alone).
// With `dormant`, the probes test their id's bit first (probes.h,
// <vprof/dormant_probes.h>): a build whose runs may leave some off.
std::string preamble(const std::string &original_sha1, const std::string &file_id,
                     const std::string &manifest_path, bool dormant = false);
// live: the probe is in the instrumented copy of a body written twice,
// which runs only when the function is on: its id is VPROF_LIVE(id), and it
// tests no dormant bit (probes.h).
std::string function_probe(Lang lang, uint32_t id, bool live = false);
// callee_fn: the function probe id of the site's callee when that function is
// instrumented in the same plan (0: none, or not one known definition); the
// callee's enter and the site's end then share the clock reads around them.
// live: as function_probe's, for the site of such a body.
Wrap site_wrap(Lang lang, ValueForm form, uint32_t id, uint32_t callee_fn = 0, Closure closure = Closure::None,
               bool live = false);
// In a header that C and C++ units both include (MariaDB's mysql_thread.h,
// whose inline_mysql_cond_wait held 78.7% of a session's variance): the
// function probe is C's, the cleanup variable, which GNU C++ takes too (it
// runs on unwinding, as C++ enables exceptions); a call whose value is used is
// a statement expression with __typeof__ of the call's text (as sync_wrap_both).
Wrap site_wrap_both(uint32_t id, const std::string &call, uint32_t callee_fn = 0, bool live = false);

enum class SyncOp { Acquire, Release, Scoped };
enum class Success { Always, Zero, True };

// An acquire tried first: `expr` takes the object without
// waiting when it can and is true then, and the call's value is then `value`
// ("" for a call whose value is not used). Only when it fails is the call
// made, and timed: an uncontended acquire reads no clock and records
// nothing, as a wait shorter than the threshold was taken back before.
struct TryFirst {
  std::string expr, value;
};

// `object` is an expression for the object's address; `n` makes local names unique.
// A call whose value is used, in a header that C and C++ units both include
// (MariaDB's mysql_thread.h): GNU C and GNU C++ both take a statement
// expression and __typeof__, given the call's text again (not evaluated).
// `mutex`: a condition wait's (the address of the mutex it gives up and takes
// back), whose begin is then vprof_sync_cond_wait_begin(O, R, MUTEX); "": none.
Wrap sync_wrap_both(Success success, const std::string &object, const std::string &role, uint32_t n,
                    const std::string &call, const TryFirst &first = {}, const std::string &mutex = {});
Wrap sync_wrap(Lang lang, SyncOp op, ValueForm form, Success success, const std::string &object,
               const std::string &role, uint32_t n, const TryFirst &first = {}, const std::string &mutex = {});
// A C++ release whose receiver has side effects (LevelDB's
// `writers_.front()->cv.Signal()`, the hand-off to the next writer): the
// receiver alone is wrapped, `vprof::detail::sync_released(RECEIVER, role)`,
// which records the release of its address and gives it back, the same
// lvalue, evaluated once, before the call as the plain form's probe is; a
// pointer receiver (`next()->Signal()`) takes the overload that records the
// pointer and gives it back.
Wrap sync_receiver_wrap(const std::string &role);

}  // namespace vprof::instr

#endif
