#include "instrumenter/locate.h"

#include <clang/Basic/FileManager.h>
#include <clang/Basic/Version.h>
#include <clang/Lex/Lexer.h>
#include <clang/Tooling/Transformer/SourceCode.h>
#include <llvm/Support/FileSystem.h>

#include "instrumenter/names.h"

namespace vprof::instr {

std::string file_of(clang::SourceLocation loc, const clang::SourceManager &sm) {
  clang::FileID fid = sm.getFileID(sm.getExpansionLoc(loc));
  const clang::FileEntry *fe = sm.getFileEntryForID(fid);
  if (!fe) return "";
  // Names are relative to the parse's own working directory (the compile
  // command's), not the process's: make them absolute through the FileManager.
  llvm::SmallString<256> abs(fe->tryGetRealPathName());
  if (abs.empty()) {
    abs = fe->getName();
    sm.getFileManager().makeAbsolutePath(abs);
  }
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(abs, real)) return std::string(abs.str());
  return std::string(real.str());
}

std::optional<Located> locate(clang::SourceRange range, const clang::SourceManager &sm,
                              const clang::LangOptions &lo) {
  auto token_range = clang::CharSourceRange::getTokenRange(range);
#if CLANG_VERSION_MAJOR >= 16
  auto fr = clang::tooling::getFileRangeForEdit(token_range, sm, lo, /*IncludeMacroExpansion=*/true);
#else
  auto fr = clang::tooling::getRangeForEdit(token_range, sm, lo);
#endif
  if (!fr || !fr->isCharRange()) return std::nullopt;
  Located out;
  auto b = sm.getDecomposedLoc(fr->getBegin());
  auto e = sm.getDecomposedLoc(fr->getEnd());
  if (b.first != e.first || e.second < b.second) return std::nullopt;
  out.file = file_of(fr->getBegin(), sm);
  if (out.file.empty()) return std::nullopt;
  out.begin = b.second;
  out.end = e.second;
  out.line = sm.getSpellingLineNumber(fr->getBegin());
  out.column = sm.getSpellingColumnNumber(fr->getBegin());
  if (range.getBegin().isMacroID() && !sm.isMacroArgExpansion(range.getBegin())) {
    // The range starts at a macro invocation's name: name the macro.
    bool invalid = false;
    llvm::StringRef buf = sm.getBufferData(b.first, &invalid);
    if (invalid) return std::nullopt;
    size_t i = b.second;
    while (i < e.second && ident_char(buf[i])) ++i;
    out.macro = buf.substr(b.second, i - b.second).str();
  }
  return out;
}

std::string text_of(clang::SourceRange range, const clang::SourceManager &sm, const clang::LangOptions &lo) {
  auto cr = clang::Lexer::makeFileCharRange(clang::CharSourceRange::getTokenRange(range), sm, lo);
  if (cr.isInvalid()) return "";
  return clang::Lexer::getSourceText(cr, sm, lo).str();
}

}  // namespace vprof::instr
