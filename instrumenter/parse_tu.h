// Parses one compile-db entry with clang and hands the AST to a callback.
// Diagnostics are collected, never printed; the first error becomes the
// returned message ("<file>: does not parse: <file>:<line>:<col>: <what>"),
// and a translation unit with errors never reaches the callback.
#ifndef VPROF_INSTRUMENTER_PARSE_TU_H
#define VPROF_INSTRUMENTER_PARSE_TU_H

#include <functional>
#include <map>
#include <string>

#include "include/vprof/expected.h"
#include "instrumenter/compile_db.h"

namespace clang {
class ASTContext;
}

namespace vprof::instr {

// `overlay`: files to read with other contents than on disk (may be null).
Status parse_tu(const CompileEntry &entry, const std::map<std::string, std::string> *overlay,
                const std::function<void(clang::ASTContext &)> &on_ast);

}  // namespace vprof::instr

#endif
