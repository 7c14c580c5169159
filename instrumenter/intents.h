// What one translation unit asks to change, before ids are assigned. The same
// header seen from several translation units yields the same intents (same
// file and offsets); the planner keeps one of each.
#ifndef VPROF_INSTRUMENTER_INTENTS_H
#define VPROF_INSTRUMENTER_INTENTS_H

#include <string>
#include <vector>

#include "instrumenter/forms.h"
#include "instrumenter/locate.h"

namespace vprof::instr {

struct FunctionIntent {
  std::string name;      // normalized qualified name
  std::string pattern;   // the --function text it matched
  Located decl;          // where the function's name is (manifest line/column)
  std::string file;      // where the probe goes
  unsigned insert_at = 0;  // just after the body's '{'
  Lang lang = Lang::Cxx;
  // The body's '}' offset, and whether the body may be written twice (a
  // build whose probes may be dormant: edit_plan.h): no labels (a label's
  // scope is the function), no asm (its labels are global), not a
  // function-try-block, its braces in the file as written.
  unsigned body_end = 0;
  bool two_versions = false;
  // Written twice, its original copy also runs between windows (windowed
  // recording: probes.h, vprof_fn_runs_plain): it holds no static local and
  // no call of the interval API (tu_scan.cc, WindowBound).
  bool plain_between_windows = false;
  // C++, written twice: the instrumented copy goes in a lambda kept out of
  // line, so that the function a dormant run calls is the original and one
  // test, and is inlined where the original was (tu_scan.cc, outline_of):
  // outline: the lambda up to its body ("": not outlined); outline_returns:
  // whether the function returns what the lambda does.
  std::string outline;
  bool outline_returns = false;
};

struct SiteIntent {
  Located at;
  ValueForm form = ValueForm::Void;
  Closure closure = Closure::None;  // C++: the closure form, when the call allows one (forms.h)
  Lang lang = Lang::Cxx;
  std::string function_file;  // the enclosing selected function's probe position
  unsigned function_at = 0;
  std::string callee, callee_text;
  // A call through a pointer or a virtual call: its callee is not known until
  // it runs. callee_type: the called function type (canonical, exception
  // specification dropped) of a pointer call; virtual_method: the method a
  // virtual call names. The manifest lists the functions it may reach.
  bool indirect = false;
  std::string callee_type, virtual_method;
  // A call in a template's own code whose callee depends on the template's
  // arguments (InnoDB's sux_lock<ssux>::s_lock calls lock.rd_lock()): the
  // name it calls ("rd_lock"). It may reach the tree's functions of that
  // name, whatever their class or namespace.
  std::string dependent_name;
  // A pointer call through a variable or field of the tree (tu_scan.cc,
  // holder_of): when every value the tree stores there is a named function,
  // those are its targets, not every function of its type (MariaDB's
  // os_file_sync_posix calls `func`, set to fdatasync, and 4 more int(int)).
  std::string holder;
  // C, a value form (a statement expression) whose value the code throws
  // away: the wrapped call gets a (void) in front (tu_scan.cc, discarded()).
  bool discarded = false;
};

struct SyncIntent {
  Located at;
  SyncOp op = SyncOp::Acquire;
  ValueForm form = ValueForm::Void;
  Success success = Success::Always;
  Lang lang = Lang::Cxx;
  std::string object, role, callee;
  std::string try_first, try_value;  // SyncRule's, expanded ("": not tried first)
  std::string mutex;  // SyncRule's, expanded: a condition wait's mutex ("": none)
  bool discarded = false;  // as SiteIntent::discarded
  // A C++ member call's release whose receiver has side effects
  // (`writers_.front()->cv.Signal()`): `at` is the receiver, wrapped so that
  // it is evaluated once and its address recorded (forms.h).
  bool receiver = false;
};

// A selected function vprof cannot open (its body's '{' comes from a macro,
// as APR's hook dispatchers are written, or it is defined outside the
// source tree): what its body calls, so that a session can reach below it
// by instrumenting those.
struct OpaqueIntent {
  std::string name, pattern;
  std::string where;  // file:line
  std::string why;    // "its body's '{' comes from the macro M", "it is defined outside the source tree (R)"
  std::vector<std::string> callees;        // direct calls (normalized names)
  std::vector<std::string> callee_types;   // pointer calls, by type (SiteIntent::callee_type)
  std::vector<std::string> virtual_methods;
  std::vector<std::string> dependent_names;  // SiteIntent::dependent_name
};

struct ScanResult {
  std::vector<FunctionIntent> functions;
  std::vector<OpaqueIntent> opaque;
  std::vector<SiteIntent> sites;
  std::vector<SyncIntent> syncs;
  std::vector<std::string> names_seen;  // every definition's name, for "did you mean"
  std::vector<std::string> notes;       // sync sites left alone, with why ("file:line: ...")
  size_t skipped_macro_sites = 0;       // sync sites a macro body produces
  // What the selection adds (with functions, opaque and sites): call sites
  // left alone and selected definitions skipped, apart from the sync packs'
  // notes, so that a stored scan serves a selection that names none of the
  // unit's functions (scan_cache.h).
  std::vector<std::string> selected_notes;
  size_t selected_skipped_macro_sites = 0;
  // Selected definitions found and left alone (constexpr, a coroutine; a note
  // says which): their patterns are matched, not "no definition".
  std::vector<std::string> skipped_patterns;
  // Functions whose address is taken in the tree's own code, by type
  // (callee_type's form): the targets a pointer call of that type may reach.
  std::vector<std::pair<std::string, std::string>> address_taken;  // (type, name)
  // Values stored into the tree's function-pointer variables and fields
  // (SiteIntent::holder): a named function, (holder, name); a null pointer,
  // nothing; anything else, or its address taken, the holder in stored_unknown.
  std::vector<std::pair<std::string, std::string>> stored;
  std::vector<std::string> stored_unknown;
  // Methods defined in the tree and what they override, transitively.
  std::vector<std::pair<std::string, std::string>> overrides;  // (overridden, overrider)
  // Every file the unit read (real paths): what a cached scan depends on.
  std::vector<std::string> files_read;
};

}  // namespace vprof::instr

#endif
