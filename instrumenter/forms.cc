#include "instrumenter/forms.h"

#include <fmt/format.h>

#include "instrumenter/journal.h"

namespace vprof::instr {

namespace {

std::string c_string(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string preamble(const std::string &original_sha1, const std::string &file_id,
                     const std::string &manifest_path, bool dormant) {
  // One copy of the helpers per translation unit even when several rewritten
  // files are included together; the guard macro is ours alone. extern "C++":
  // a rewritten C header may be included inside a C++ file's extern "C" block.
  // The first line is the marker that tells vprof its own output (journal.h).
  return marker_line(original_sha1, dormant) +
         "#if defined(__cplusplus) && !defined(VPROF_INSTRUMENT_HELPERS_)\n"
         "#define VPROF_INSTRUMENT_HELPERS_ 1\n"
         "extern \"C++\" { namespace vprof { namespace detail {\n"
         // The closure forms: the end is a scope's, so it also runs when the
         // call throws; inlined whatever the caller's size, as the probes are.
         "#define VPROF_CLOSURE_ __attribute__((always_inline))\n"
         "template <class F> __attribute__((always_inline)) inline auto site_call(vprof_u64 site, F &&f) "
         "-> decltype(f()) { SiteScope s(site); return f(); }\n"
         "template <class T> __attribute__((always_inline)) inline T &site_lvalue(T *p) noexcept { return *p; }\n"
         "template <class T> __attribute__((always_inline)) inline T &&site_xvalue(T *p) noexcept "
         "{ return static_cast<T &&>(*p); }\n"
         "template <class T> __attribute__((always_inline)) inline T *site_addr(T &&v) noexcept "
         "{ return __builtin_addressof(v); }\n"
         "template <class T> inline T &&site_pass(vprof_u64 site, T &&v) noexcept "
         "{ vprof_site_end(site); return static_cast<T &&>(v); }\n"
         "template <class T> inline T site_value(vprof_u64 site, T &&v) "
         "{ vprof_site_end(site); return static_cast<T &&>(v); }\n"
         "template <class T> inline T sync_always(const void *o, vprof_u32 r, T &&v) "
         "{ vprof_sync_wait_end(o, r, 1); return static_cast<T &&>(v); }\n"
         "template <class T> inline T sync_zero(const void *o, vprof_u32 r, T &&v) "
         "{ vprof_sync_wait_end(o, r, v == 0); return static_cast<T &&>(v); }\n"
         "template <class T> inline T sync_true(const void *o, vprof_u32 r, T &&v) "
         "{ vprof_sync_wait_end(o, r, v ? 1 : 0); return static_cast<T &&>(v); }\n"
         "template <class T> __attribute__((always_inline)) inline T &sync_released(T &o, vprof_u32 r) noexcept "
         "{ vprof_sync_release(__builtin_addressof(o), r); return o; }\n"
         "template <class T> __attribute__((always_inline)) inline T *sync_released(T *p, vprof_u32 r) noexcept "
         "{ vprof_sync_release(p, r); return p; }\n"
         "struct SyncRelease { const void *o; vprof_u32 r; "
         "~SyncRelease() { vprof_sync_release(o, r); } };\n"
         "} } }\n"
         "#endif\n" +
         // A build ahead's C++ body keeps its instrumented copy out of line
         // (edit_plan.cc, two_versions): clang takes the attribute before
         // `mutable`, gcc after.
         (dormant ? "#if defined(__cplusplus) && !defined(VPROF_OUTLINED_)\n#ifdef __clang__\n"
                    "#define VPROF_OUTLINED_ __attribute__((noinline)) mutable\n#else\n"
                    "#define VPROF_OUTLINED_ mutable __attribute__((noinline))\n#endif\n#endif\n"
                  : "") +
         // One constructor per rewritten file in a unit, named by its id.
         (file_id.empty() ? std::string()
                          : "#ifndef VPROF_MANIFEST_" + file_id + "_\n"
                            "#define VPROF_MANIFEST_" + file_id + "_ 1\n"
                            "static void __attribute__((constructor)) vprof_manifest_" + file_id + "_(void) "
                            "{ vprof_register_manifest(\"" + file_id + "\", " + c_string(manifest_path) + "); }\n"
                            "#endif\n") +
         "#line 1\n";
}

// An id as a probe's argument: VPROF_LIVE(id) in the instrumented copy of a
// body written twice (no dormant test), else the number.
static std::string id_word(uint32_t id, bool live) {
  return live ? fmt::format("VPROF_LIVE({})", id) : std::to_string(id);
}

std::string function_probe(Lang lang, uint32_t id, bool live) {
  const std::string w = id_word(id, live);
  if (lang == Lang::Cxx) return fmt::format(" vprof::detail::FnScope vprof_fn_({});", w);
  return fmt::format(" __attribute__((cleanup(vprof_fn_cleanup), unused)) const vprof_u32 vprof_fn_ = "
                     "(vprof_fn_enter({0}), {0}{1});",
                     w, live ? "" : "u");
}

// The site's word in the text: its id, and the callee's function id when the
// callee is instrumented too (probes.h, VPROF_SITE_CALLS).
static std::string site_word(uint32_t id, uint32_t callee_fn, bool live) {
  return callee_fn == 0 ? id_word(id, live) : fmt::format("VPROF_SITE_CALLS({}, {})", id_word(id, live), callee_fn);
}

Wrap site_wrap_both(uint32_t id, const std::string &call, uint32_t callee_fn, bool live) {
  const std::string w = site_word(id, callee_fn, live);
  return {fmt::format("__extension__ ({{ __typeof__({1}) vprof_r{0}_ = (vprof_site_begin({2}), ", id, call, w),
          fmt::format("); vprof_site_end({1}); vprof_r{0}_; }})", id, w)};
}

Wrap site_wrap(Lang lang, ValueForm form, uint32_t id, uint32_t callee_fn, Closure closure, bool live) {
  const std::string w = site_word(id, callee_fn, live);
  if (lang == Lang::Cxx) {
    const std::string call = fmt::format("vprof::detail::site_call({}, [&]() VPROF_CLOSURE_ {{ return ", w);
    switch (closure) {
      case Closure::None: break;
      case Closure::Value: return {call, "; })"};
      case Closure::Lvalue: return {"vprof::detail::site_lvalue(" + call + "__builtin_addressof(", "); }))"};
      case Closure::Xvalue: return {"vprof::detail::site_xvalue(" + call + "vprof::detail::site_addr(", "); }))"};
    }
  }
  switch (form) {
    case ValueForm::Void:
      return {fmt::format("(vprof_site_begin({}), ", w), fmt::format(", vprof_site_end({}))", w)};
    case ValueForm::NoReturn:
      return {fmt::format("(vprof_site_begin({}), ", w), ")"};
    case ValueForm::Dependent:
      return {fmt::format("((void)vprof::detail::SiteScope({}), ", w), ")"};
    case ValueForm::Glvalue:
      return {fmt::format("vprof::detail::site_pass({0}, (vprof_site_begin({0}), ", w), "))"};
    case ValueForm::Prvalue:
      if (lang == Lang::Cxx)
        return {fmt::format("vprof::detail::site_value({0}, (vprof_site_begin({0}), ", w), "))"};
      // Declaration first: trees built with -Wdeclaration-after-statement stay quiet.
      return {fmt::format("__extension__ ({{ __auto_type vprof_r{0}_ = (vprof_site_begin({1}), ", id, w),
              fmt::format("); vprof_site_end({1}); vprof_r{0}_; }})", id, w)};
  }
  return {};
}

// The C expression that says a wrapped acquire's result vprof_s<n>_ got the object.
static std::string acquired_cond(Success success, uint32_t n) {
  return success == Success::Zero   ? fmt::format("vprof_s{}_ == 0", n)
         : success == Success::True ? fmt::format("vprof_s{}_ != 0", n)
                                    : std::string("1");
}

// A value form behind its try: ((TRY) ? (VALUE) : WRAPPED). A form with no
// value used takes any try; one whose value is used needs the try's value.
static Wrap tried_first(Wrap w, const TryFirst &first, bool value) {
  if (first.expr.empty() || (value && first.value.empty())) return w;
  const std::string tried = fmt::format("(!vprof_rt_every_wait && ({}))", first.expr);
  if (!value) return {fmt::format("({} ? (void)0 : (void)", tried) + w.prefix, w.suffix + ")"};
  return {fmt::format("({} ? ({}) : ", tried, first.value) + w.prefix, w.suffix + ")"};
}

// A wait's begin; a condition wait's names the mutex it gives up.
static std::string wait_begin(const std::string &o, const std::string &r, const std::string &mutex) {
  if (mutex.empty()) return fmt::format("vprof_sync_wait_begin({}, {})", o, r);
  return fmt::format("vprof_sync_cond_wait_begin({}, {}, {})", o, r, mutex);
}

Wrap sync_wrap(Lang lang, SyncOp op, ValueForm form, Success success, const std::string &o,
               const std::string &r, uint32_t n, const TryFirst &first, const std::string &mutex) {
  if (op == SyncOp::Release) return {fmt::format("(vprof_sync_release({}, {}), ", o, r), ")"};
  if (op == SyncOp::Scoped)
    return {fmt::format("vprof_sync_wait_begin({0}, {1}); ", o, r),
            fmt::format(" vprof_sync_wait_end({0}, {1}, 1); vprof::detail::SyncRelease vprof_sync{2}_{{{0}, {1}}};",
                        o, r, n)};
  const std::string begin = wait_begin(o, r, mutex);
  if (form == ValueForm::Void || form == ValueForm::NoReturn || form == ValueForm::Dependent)
    return tried_first({fmt::format("({}, ", begin),
                        fmt::format(", vprof_sync_wait_end({}, {}, 1))", o, r)},
                       first, false);
  if (lang == Lang::Cxx) {
    const char *helper = success == Success::Zero ? "sync_zero" : success == Success::True ? "sync_true" : "sync_always";
    Wrap w{fmt::format("vprof::detail::{0}({1}, {2}, ({3}, ", helper, o, r, begin), "))"};
    // A reference the call returns would become a copy behind a try.
    return form == ValueForm::Glvalue ? w : tried_first(w, first, true);
  }
  const std::string cond = acquired_cond(success, n);
  return tried_first({fmt::format("__extension__ ({{ __auto_type vprof_s{0}_ = ({1}, ", n, begin),
                      fmt::format("); vprof_sync_wait_end({0}, {1}, {2}); vprof_s{3}_; }})", o, r, cond, n)},
                     first, true);
}

Wrap sync_receiver_wrap(const std::string &r) {
  return {"vprof::detail::sync_released(", fmt::format(", {})", r)};
}

Wrap sync_wrap_both(Success success, const std::string &o, const std::string &r, uint32_t n,
                    const std::string &call, const TryFirst &first, const std::string &mutex) {
  const std::string cond = acquired_cond(success, n);
  return tried_first({fmt::format("__extension__ ({{ __typeof__({2}) vprof_s{1}_ = ({0}, ", wait_begin(o, r, mutex),
                                  n, call),
                      fmt::format("); vprof_sync_wait_end({0}, {1}, {2}); vprof_s{3}_; }})", o, r, cond, n)},
                     first, true);
}

}  // namespace vprof::instr
