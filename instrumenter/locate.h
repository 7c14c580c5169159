// Where the text of an expression can be edited.
//
// Three cases, decided from the token range through Lexer::makeFileCharRange
// (via tooling::getRangeForEdit, LLVM 14; getFileRangeForEdit, 16):
//   file text         f(x)                      -> edited in place
//   macro argument    assert(f(x))              -> edited in the argument's spelling
//   whole macro       LOCK(m) where             -> the invocation is wrapped as a whole
//                     #define LOCK(m) mutex_enter(&(m)->mu)   and named "LOCK"
// Anything else (a call produced by a macro body, part of an expansion) has no
// safe edit and is reported to the caller, never guessed.
#ifndef VPROF_INSTRUMENTER_LOCATE_H
#define VPROF_INSTRUMENTER_LOCATE_H

#include <optional>
#include <string>

#include <clang/Basic/LangOptions.h>
#include <clang/Basic/SourceLocation.h>
#include <clang/Basic/SourceManager.h>

namespace vprof::instr {

struct Located {
  std::string file;  // real path
  unsigned begin = 0, end = 0;  // byte offsets, end exclusive
  unsigned line = 0, column = 0;
  std::string macro;  // set when a whole macro invocation is the edited text
};

std::optional<Located> locate(clang::SourceRange range, const clang::SourceManager &sm,
                              const clang::LangOptions &lo);

// Real path of the file holding `loc` (its expansion), "" if none.
std::string file_of(clang::SourceLocation loc, const clang::SourceManager &sm);

// Source text of a range as written (macro arguments keep their spelling).
std::string text_of(clang::SourceRange range, const clang::SourceManager &sm, const clang::LangOptions &lo);

}  // namespace vprof::instr

#endif
