// How a call through a pointer and the functions it may reach are matched,
// for the instrumenter's manifest (tu_scan.cc: a site's `targets`) and the
// call graph's pointer callees (callgraph.cc) alike.
#ifndef VPROF_INSTRUMENTER_FUNCTION_TYPES_H
#define VPROF_INSTRUMENTER_FUNCTION_TYPES_H

#include <string>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>

namespace vprof::instr {

// A function type as a pointer call and a target are compared: canonical,
// without its exception specification (a noexcept function converts to a
// pointer without one). "" when t is no function, pointer or reference to one.
std::string function_type(clang::QualType t, const clang::ASTContext &ast);

// The method a virtual call names (an unqualified member call of a virtual
// method), or nullptr.
const clang::CXXMethodDecl *virtual_callee(const clang::CallExpr *ce);

// The function a cast converts to a function pointer type (`(T)f`, `(T)&f`),
// or nullptr: a call through T may reach it too (PostgreSQL passes
// (ExecScanAccessMtd) IndexNext, whose own type takes an IndexScanState *,
// to ExecScan, which calls (*accessMtd)(node) with a ScanState *).
const clang::FunctionDecl *cast_function(const clang::ExplicitCastExpr *e);

// The key under which a function whose address is taken as `type` is
// listed (function_type's), or "" when a pointer call cannot reach it as
// such: an instance method (a pointer to member has no targets listed).
std::string address_key(const clang::FunctionDecl *fd, clang::QualType type, const clang::ASTContext &ast);

// Every method md overrides, transitively.
std::vector<const clang::CXXMethodDecl *> overridden_methods(const clang::CXXMethodDecl *md);

}  // namespace vprof::instr

#endif
