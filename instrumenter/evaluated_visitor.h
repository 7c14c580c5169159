// A RecursiveASTVisitor that walks only code that runs: it never descends
// into unevaluated or constant contexts, where a probe would change meaning
// or fail to compile:
//   sizeof(f(x)), alignof, decltype(f(x)) and every other type (array
//   bounds, template arguments), noexcept(f()), typeid(f()), static_assert,
//   constexpr variables, `if constexpr` conditions, case labels, C++20
//   constant expressions and requires-expressions, the unselected branches
//   of _Generic, and local classes (their methods are functions of their own).
// Lambdas defined in the body are walked: their calls belong to the body.
#ifndef VPROF_INSTRUMENTER_EVALUATED_VISITOR_H
#define VPROF_INSTRUMENTER_EVALUATED_VISITOR_H

#include <clang/AST/RecursiveASTVisitor.h>

namespace vprof::instr {

template <class Derived>
class EvaluatedVisitor : public clang::RecursiveASTVisitor<Derived> {
  using Base = clang::RecursiveASTVisitor<Derived>;

 public:
  bool TraverseTypeLoc(clang::TypeLoc) { return true; }
  bool TraverseTemplateArgumentLoc(const clang::TemplateArgumentLoc &) { return true; }
  bool TraverseUnaryExprOrTypeTraitExpr(clang::UnaryExprOrTypeTraitExpr *) { return true; }
  bool TraverseCXXNoexceptExpr(clang::CXXNoexceptExpr *) { return true; }
  bool TraverseCXXTypeidExpr(clang::CXXTypeidExpr *) { return true; }
  bool TraverseStaticAssertDecl(clang::StaticAssertDecl *) { return true; }
  bool TraverseConstantExpr(clang::ConstantExpr *) { return true; }
  bool TraverseRequiresExpr(clang::RequiresExpr *) { return true; }
  bool TraverseCXXRecordDecl(clang::CXXRecordDecl *) { return true; }
  bool TraverseRecordDecl(clang::RecordDecl *) { return true; }
  bool TraverseEnumDecl(clang::EnumDecl *) { return true; }
  bool TraverseVarDecl(clang::VarDecl *v) {
    if (v->isConstexpr()) return true;
    return Base::TraverseVarDecl(v);
  }
  bool TraverseCaseStmt(clang::CaseStmt *s) { return this->TraverseStmt(s->getSubStmt()); }
  bool TraverseIfStmt(clang::IfStmt *s) {
    if (!s->isConstexpr()) return Base::TraverseIfStmt(s);
    return this->TraverseStmt(s->getInit()) && this->TraverseStmt(s->getThen()) &&
           this->TraverseStmt(s->getElse());
  }
  bool TraverseGenericSelectionExpr(clang::GenericSelectionExpr *g) {
    if (g->isResultDependent()) return true;
    return this->TraverseStmt(g->getResultExpr());
  }
};

}  // namespace vprof::instr

#endif
