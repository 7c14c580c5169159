// Sync packs: JSON files in annotations/ that say which functions of a code
// base acquire, release or wait on which object. Format (docs/instrument.md):
//
//   { "schema_version": 1, "name": "pthreads",
//     "functions": [
//       { "name": "pthread_mutex_lock",    "op": "acquire", "role": "mutex",     "object": "{0}" },
//       { "name": "pthread_mutex_trylock", "op": "acquire", "role": "mutex_try", "object": "{0}",
//         "success": "zero" },
//       { "name": "pthread_mutex_unlock",  "op": "release", "role": "mutex",     "object": "{0}" },
//       { "name": "leveldb::MutexLock",    "op": "scoped",  "role": "mutex",     "object": "{0}",
//         "args": 1 } ] }
//
// "name" is a function's qualified name, or a class's for "scoped" (its
// constructor acquires, its destructor releases). "object" is an expression
// for the object's address built from the call's argument texts {0}, {1}, ...
// and {this} (the address of the object a member function is called on).
// Optional: "success" (always | zero | true: how a result says "acquired"),
// "args" (match only calls with this many written arguments), "role_if"
// ({"arg": 1, "equals": "LW_SHARED", "role": "shared"}), "try" and
// "try_value" for an acquire tried first ("pthread_mutex_trylock({0}) == 0",
// "0": forms.h, TryFirst), "mutex" for a condition wait (the mutex it gives
// up and takes back: "{1}" for pthread_cond_wait, "({0}).mutex()" for
// std::condition_variable::wait).
#ifndef VPROF_INSTRUMENTER_SYNC_PACK_H
#define VPROF_INSTRUMENTER_SYNC_PACK_H

#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "instrumenter/forms.h"

namespace vprof::instr {

struct SyncRule {
  std::string name;
  SyncOp op = SyncOp::Acquire;
  std::string role;  // a VPROF_SYNC_* enumerator
  std::string object;
  Success success = Success::Always;
  // Tried first (forms.h, TryFirst): an expression over the call's
  // arguments, as `object` is written, true when it took the object without
  // waiting; the call's value then ("" for a call with none).
  std::string try_first, try_value;
  // A condition wait's: an expression, as `object` is written, for the
  // address of the mutex it gives up and takes back ("{1}" for
  // pthread_cond_wait; "": none).
  std::string mutex;
  int args = -1;
  int role_if_arg = -1;
  std::string role_if_equals, role_if_role;
  std::string pack;
};

struct SyncRules {
  std::map<std::string, SyncRule> by_name;  // normalized qualified name -> rule
};

// The file a pack spec names: <annotations_dir>/NAME.json for a name, else the spec.
std::string sync_pack_path(const std::string &spec, const std::string &annotations_dir);

// `spec` is a pack name ("pthreads": <annotations_dir>/pthreads.json) or a path.
Status load_sync_pack(const std::string &spec, const std::string &annotations_dir, SyncRules &into);

// Expands {0}, {1}, {this} in a rule's object template; "" if an index is missing.
std::string expand_object(const std::string &tmpl, const std::vector<std::string> &args, const std::string &self);

}  // namespace vprof::instr

#endif
