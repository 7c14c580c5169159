#include "instrumenter/function_types.h"

#include <set>

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>

namespace vprof::instr {

using namespace clang;

std::string function_type(QualType t, const ASTContext &ast) {
  if (const auto *p = t->getAs<PointerType>()) t = p->getPointeeType();
  if (const auto *r = t->getAs<ReferenceType>()) t = r->getPointeeType();
  const auto *ft = t->getAs<FunctionType>();
  if (!ft) return "";
  QualType c = t.getCanonicalType();
  if (const auto *fp = c->getAs<FunctionProtoType>()) {
    FunctionProtoType::ExtProtoInfo info = fp->getExtProtoInfo();
    info.ExceptionSpec = FunctionProtoType::ExceptionSpecInfo();
    c = ast.getFunctionType(fp->getReturnType(), fp->getParamTypes(), info).getCanonicalType();
  }
  return c.getAsString();
}

const CXXMethodDecl *virtual_callee(const CallExpr *ce) {
  const auto *md = dyn_cast_or_null<CXXMethodDecl>(ce->getDirectCallee());
  if (!md || !md->isVirtual()) return nullptr;
  const auto *me = dyn_cast<MemberExpr>(ce->getCallee()->IgnoreParenImpCasts());
  return me && !me->hasQualifier() ? md : nullptr;
}

const FunctionDecl *cast_function(const ExplicitCastExpr *e) {
  const Expr *sub = e->getSubExpr()->IgnoreParenImpCasts();
  if (const auto *u = dyn_cast<UnaryOperator>(sub); u && u->getOpcode() == UO_AddrOf)
    sub = u->getSubExpr()->IgnoreParenImpCasts();
  const auto *ref = dyn_cast<DeclRefExpr>(sub);
  return ref ? dyn_cast<FunctionDecl>(ref->getDecl()) : nullptr;
}

std::string address_key(const FunctionDecl *fd, QualType type, const ASTContext &ast) {
  if (const auto *md = dyn_cast<CXXMethodDecl>(fd); md && md->isInstance()) return "";
  return function_type(type, ast);
}

std::vector<const CXXMethodDecl *> overridden_methods(const CXXMethodDecl *md) {
  std::vector<const CXXMethodDecl *> out, todo(md->begin_overridden_methods(), md->end_overridden_methods());
  std::set<const CXXMethodDecl *> seen;
  while (!todo.empty()) {
    const CXXMethodDecl *o = todo.back();
    todo.pop_back();
    if (!seen.insert(o).second) continue;
    out.push_back(o);
    todo.insert(todo.end(), o->begin_overridden_methods(), o->end_overridden_methods());
  }
  return out;
}

}  // namespace vprof::instr
