#include "instrumenter/tu_scan.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/ASTLambda.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/QualTypeNames.h>
#include <clang/Basic/Builtins.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Lex/Lexer.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "instrumenter/evaluated_visitor.h"
#include "instrumenter/function_types.h"
#include "instrumenter/names.h"
#include "instrumenter/parse_tu.h"

namespace vprof::instr {

namespace {

using namespace clang;

struct Context {
  const ScanOptions &opt;
  ASTContext &ast;
  ScanResult &out;
  Lang lang;

  bool editable(const std::string &file) const {
    if (file.empty() || file.compare(0, opt.source_root.size(), opt.source_root) != 0) return false;
    for (const auto &d : opt.excluded_dirs)
      if (!d.empty() && file.compare(0, d.size(), d) == 0) return false;
    return true;
  }
  std::string where(SourceLocation loc) const {
    const SourceManager &sm = ast.getSourceManager();
    PresumedLoc p = sm.getPresumedLoc(sm.getExpansionLoc(loc));
    if (p.isInvalid()) return "<unknown>";
    return std::string(p.getFilename()) + ":" + std::to_string(p.getLine());
  }
  std::string text(SourceRange r) const { return text_of(r, ast.getSourceManager(), ast.getLangOpts()); }
};

bool in_tree(const Context &cx, SourceLocation loc) {
  const SourceManager &sm = cx.ast.getSourceManager();
  if (sm.isInSystemHeader(sm.getExpansionLoc(loc))) return false;
  return cx.editable(file_of(loc, sm));
}

bool is_function_pointer(QualType t) {
  return !t.isNull() && (t->isFunctionPointerType() || t->isFunctionReferenceType());
}

// A variable or field of the tree that holds a function pointer, by a key
// every unit spells alike (ScanResult::stored): a field or a variable of
// external linkage by its qualified name, any other by where it is
// declared. "" for anything else (a parameter, an array's element, what a
// call returns), and for one declared outside the tree, which its library
// may fill.
std::string holder_key(const ValueDecl *d, const Context &cx) {
  if (!d || !is_function_pointer(d->getType()) || !in_tree(cx, d->getLocation())) return "";
  if (isa<FieldDecl>(d)) return "field:" + normalize_qualified(d->getQualifiedNameAsString());
  const auto *vd = dyn_cast<VarDecl>(d);
  if (!vd || isa<ParmVarDecl>(vd)) return "";
  if (!vd->isLocalVarDecl() && vd->isExternallyVisible())
    return "var:" + normalize_qualified(vd->getQualifiedNameAsString());
  const SourceManager &sm = cx.ast.getSourceManager();
  PresumedLoc p = sm.getPresumedLoc(sm.getExpansionLoc(vd->getLocation()));
  if (p.isInvalid()) return "";
  return fmt::format("var:{}:{}:{}:{}", p.getFilename(), p.getLine(), p.getColumn(), vd->getName().str());
}

// The holder an expression names: `v`, `s.f`, `p->f`, `*v`.
std::string holder_of(const Expr *e, const Context &cx) {
  if (!e) return "";
  e = e->IgnoreParenImpCasts();
  if (const auto *u = dyn_cast<UnaryOperator>(e); u && u->getOpcode() == UO_Deref)
    e = u->getSubExpr()->IgnoreParenImpCasts();
  if (const auto *r = dyn_cast<DeclRefExpr>(e)) return holder_key(r->getDecl(), cx);
  if (const auto *m = dyn_cast<MemberExpr>(e)) return holder_key(m->getMemberDecl(), cx);
  return "";
}

// The functions a stored value names: `f`, `&f`, a cast of either, a
// null pointer (none), `c ? f : g`. Nullopt for any other value (another
// pointer, a call's result): the holder's targets are then its type's.
std::optional<std::vector<std::string>> stored_functions(const Expr *e, ASTContext &ast) {
  if (!e) return std::vector<std::string>{};
  e = e->IgnoreParenCasts();
  if (isa<ImplicitValueInitExpr>(e) || isa<CXXNullPtrLiteralExpr>(e) ||
      e->isNullPointerConstant(ast, Expr::NPC_ValueDependentIsNotNull))
    return std::vector<std::string>{};
  if (const auto *u = dyn_cast<UnaryOperator>(e); u && u->getOpcode() == UO_AddrOf)
    e = u->getSubExpr()->IgnoreParenCasts();
  if (const auto *r = dyn_cast<DeclRefExpr>(e))
    if (const auto *fd = dyn_cast<FunctionDecl>(r->getDecl()))
      return std::vector<std::string>{normalize_qualified(fd->getQualifiedNameAsString())};
  if (const auto *c = dyn_cast<ConditionalOperator>(e)) {
    auto a = stored_functions(c->getTrueExpr(), ast), b = stored_functions(c->getFalseExpr(), ast);
    if (!a || !b) return std::nullopt;
    a->insert(a->end(), b->begin(), b->end());
    return a;
  }
  return std::nullopt;
}

// Returns twice (setjmp, vfork) or works on its caller's frame (alloca): a
// call of it cannot be wrapped, nor its caller's body moved into a lambda.
bool frame_bound(const FunctionDecl *fd) {
  if (!fd) return false;
  if (fd->hasAttr<ReturnsTwiceAttr>()) return true;
  const std::string n = fd->getNameAsString();
  static const char *const bound[] = {"setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "savectx",
                                      "vfork", "getcontext", "alloca"};
  for (const char *t : bound)
    if (n == t) return true;
  return false;
}

bool never_wrapped(const FunctionDecl *fd) {
  if (!fd) return false;
  if (frame_bound(fd)) return true;
  // Not real calls (builtins, probes).
  const std::string n = fd->getNameAsString();
  if (n.rfind("__builtin", 0) == 0 || n.rfind("__sync_", 0) == 0 || n.rfind("__atomic_", 0) == 0) return true;
  if (n.rfind("vprof_", 0) == 0) return true;
  return false;
}

bool is_noreturn(const CallExpr *ce) {
  if (const FunctionDecl *fd = ce->getDirectCallee())
    if (fd->isNoReturn()) return true;
  QualType t = ce->getCallee()->getType();
  if (const auto *p = t->getAs<PointerType>()) t = p->getPointeeType();
  if (const auto *ft = t->getAs<FunctionType>()) return ft->getNoReturnAttr();
  return false;
}

// Whether a class prvalue may be returned through a closure in every
// standard the file may be built with: before C++17 that needs a copy or
// move constructor anyone may call (the compilers elide it, as they do the
// original's); a type without one keeps the scope form (forms.h).
bool movable(QualType t) {
  const CXXRecordDecl *rd = t->getAsCXXRecordDecl();
  if (!rd || !rd->hasDefinition()) return true;
  // Not isTriviallyCopyable(): a class whose copy constructor is deleted is
  // trivially copyable through its implicit assignment.
  for (const CXXConstructorDecl *c : rd->ctors())
    if ((c->isMoveConstructor() || c->isCopyConstructor()) && !c->isDeleted() && c->getAccess() == AS_public)
      return true;
  return rd->needsImplicitMoveConstructor() || rd->needsImplicitCopyConstructor();
}

bool thread_safety_attrs(const FunctionDecl *fd) {
  return fd->hasAttr<AcquireCapabilityAttr>() || fd->hasAttr<ReleaseCapabilityAttr>() ||
         fd->hasAttr<TryAcquireCapabilityAttr>() || fd->hasAttr<RequiresCapabilityAttr>() ||
         fd->hasAttr<AssertCapabilityAttr>() || fd->hasAttr<LocksExcludedAttr>() ||
         fd->hasAttr<ExclusiveTrylockFunctionAttr>() || fd->hasAttr<SharedTrylockFunctionAttr>() ||
         fd->hasAttr<AssertExclusiveLockAttr>() || fd->hasAttr<AssertSharedLockAttr>();
}

// What a call's text would mean otherwise inside a closure, or not compile
// there: __func__ and its kin and a source_location default (they would name
// the closure), a structured binding (a closure cannot capture one before
// C++20), a variable-length array (nor that), co_await and co_yield (they
// suspend the enclosing coroutine), va_arg and va_start (the enclosing
// function's arguments), alloca (the closure's frame), a GNU statement expression (a return, break or goto
// in it would leave the closure) and a label's address. And a temporary the
// call's arguments make, when the call's value may refer to it (a reference,
// a pointer, a class: same(std::string("abc")).size()): inside the closure
// the temporary dies when the closure returns, not at the end of the
// caller's full-expression.
class ClosureHazards : public RecursiveASTVisitor<ClosureHazards> {
  static bool guarded(const ValueDecl *d) { return d->hasAttr<GuardedByAttr>() || d->hasAttr<PtGuardedByAttr>(); }

 public:
  bool found = false, temporary = false;
  bool VisitMaterializeTemporaryExpr(MaterializeTemporaryExpr *) { return (temporary = true); }
  bool VisitCXXBindTemporaryExpr(CXXBindTemporaryExpr *) { return (temporary = true); }
  bool VisitPredefinedExpr(PredefinedExpr *) { return !(found = true); }
  bool VisitSourceLocExpr(SourceLocExpr *) { return !(found = true); }
  bool VisitCoroutineSuspendExpr(CoroutineSuspendExpr *) { return !(found = true); }
  bool VisitVAArgExpr(VAArgExpr *) { return !(found = true); }
  bool VisitStmtExpr(StmtExpr *) { return !(found = true); }
  bool VisitAddrLabelExpr(AddrLabelExpr *) { return !(found = true); }
  bool VisitDeclRefExpr(DeclRefExpr *r) {
    const ValueDecl *d = r->getDecl();
    if (isa<BindingDecl>(d) || d->getType()->isVariablyModifiedType() || guarded(d)) return !(found = true);
    // va_start and its kin name the enclosing function's arguments; alloca's
    // memory would be the closure's frame, gone when it returns.
    if (const auto *fd = dyn_cast<FunctionDecl>(d)) {
      const std::string n = fd->getNameAsString();
      if ((fd->getBuiltinID() && n.find("va_") != std::string::npos) || n.find("alloca") != std::string::npos)
        return !(found = true);
    }
    return true;
  }
  // clang's thread safety analysis reads a closure as a function of its own:
  // a lock taken or a guarded member read there would be reported (and fail
  // a -Werror build) though the caller holds what it needs.
  bool VisitCallExpr(CallExpr *c) {
    if (const FunctionDecl *fd = c->getDirectCallee())
      if (thread_safety_attrs(fd)) return !(found = true);
    return true;
  }
  bool VisitMemberExpr(MemberExpr *m) {
    if (guarded(m->getMemberDecl())) found = true;
    return !found;
  }
  // A default argument is evaluated where the call is: inside the closure.
  bool VisitCXXDefaultArgExpr(CXXDefaultArgExpr *e) { return TraverseStmt(e->getExpr()); }
};

// Whether a call's value may refer to another object: anything but void and
// plain scalars (numbers, enums, nullptr).
bool may_refer(const CallExpr *ce) {
  if (ce->isGLValue()) return true;
  QualType t = ce->getType();
  return !(t->isVoidType() || t->isArithmeticType() || t->isEnumeralType() || t->isNullPtrType());
}

bool closure_safe(const CallExpr *ce) {
  ClosureHazards h;
  h.TraverseStmt(const_cast<CallExpr *>(ce));
  return !h.found && !(h.temporary && may_refer(ce));
}

Closure closure_of(const CallExpr *ce, ValueForm form, Lang lang, const LangOptions &lo) {
  // C++03 has no lambdas: a unit built as such would keep the forms without
  // one (and so would a header it shares with newer units: make_plan); the
  // probes header itself needs C++11, though.
  if (lang != Lang::Cxx || !lo.CPlusPlus11 || !closure_safe(ce)) return Closure::None;
  // An implicit conversion (`if (stop)` calls std::atomic<bool>::operator
  // bool()) is spelled by its object alone: a closure around that text would
  // return the object, not the call's value.
  if (const auto *mc = dyn_cast<CXXMemberCallExpr>(ce))
    if (isa_and_nonnull<CXXConversionDecl>(mc->getMethodDecl())) return Closure::None;
  switch (form) {
    case ValueForm::Void:
    case ValueForm::Prvalue: return Closure::Value;
    case ValueForm::Glvalue: return ce->isXValue() ? Closure::Xvalue : Closure::Lvalue;
    default: return Closure::None;
  }
}

// Whether a C call's value is thrown away: it is a statement (of a block,
// an if's or a loop's body, a label's), a for's init or increment, or the
// left of a comma. Its value form is a statement expression, which clang's
// -Wunused-value (on by default) reports as "expression result unused" where
// the plain call was quiet: a -Werror build then fails.
bool discarded(const CallExpr *ce, ASTContext &ast) {
  const Stmt *s = ce;
  for (;;) {
    auto parents = ast.getParents(*s);
    if (parents.size() != 1) return false;
    const DynTypedNode &p = parents[0];
    if (const auto *pe = p.get<ParenExpr>()) {
      s = pe;
      continue;
    }
    if (p.get<CompoundStmt>() || p.get<LabelStmt>() || p.get<DefaultStmt>()) return true;
    if (const auto *cs = p.get<CaseStmt>()) return cs->getSubStmt() == s;
    if (const auto *is = p.get<IfStmt>()) return is->getThen() == s || is->getElse() == s;
    if (const auto *ws = p.get<WhileStmt>()) return ws->getBody() == s;
    if (const auto *ds = p.get<DoStmt>()) return ds->getBody() == s;
    if (const auto *fs = p.get<ForStmt>()) return fs->getInit() == s || fs->getInc() == s || fs->getBody() == s;
    if (const auto *bo = p.get<BinaryOperator>()) return bo->getOpcode() == BO_Comma && bo->getLHS() == s;
    return false;
  }
}

ValueForm value_form(const CallExpr *ce, Lang lang) {
  if (ce->isTypeDependent()) return ValueForm::Dependent;
  if (is_noreturn(ce)) return ValueForm::NoReturn;
  if (ce->getType()->isVoidType()) return ValueForm::Void;
  if (lang == Lang::C) return ValueForm::Prvalue;
  if (ce->isGLValue()) return ValueForm::Glvalue;
  // A class prvalue that cannot move keeps the scope form, whose site ends
  // with the full-expression (forms.h).
  return movable(ce->getType()) ? ValueForm::Prvalue : ValueForm::Dependent;
}

size_t written_args(const CallExpr *ce) {
  size_t n = 0;
  for (const Expr *a : ce->arguments())
    if (!isa<CXXDefaultArgExpr>(a)) ++n;
  return n;
}

std::string callee_name(const CallExpr *ce, const Context &cx) {
  const FunctionDecl *fd = ce->getDirectCallee();
  bool virtual_call = false;
  if (const auto *md = dyn_cast_or_null<CXXMethodDecl>(fd)) {
    const auto *me = dyn_cast<MemberExpr>(ce->getCallee()->IgnoreParenImpCasts());
    virtual_call = md->isVirtual() && me && !me->hasQualifier();
  }
  // Calls through pointers and virtual calls are named by the expression.
  if (fd && !virtual_call) return normalize_qualified(fd->getQualifiedNameAsString());
  return cx.text(ce->getCallee()->IgnoreImplicit()->getSourceRange());
}

// What a call calls, for a call vprof times: a function named directly, a
// virtual method (its overriders may run), or a function type (a call through
// a pointer: the functions of that type whose address the tree takes; "" for
// a pointer to member function, which has no targets we list). Null for what
// is no call to time: an overloaded operator, a literal, a builtin, setjmp.
struct CallKind {
  const FunctionDecl *direct = nullptr;
  const CXXMethodDecl *virtual_method = nullptr;
  std::string pointer_type;
  std::string dependent_name;  // SiteIntent::dependent_name
};

// The name a call in a template's own code calls when clang cannot resolve
// it until the template is instantiated: x.f(), p->f(), T::f(), f(t) with a
// dependent argument. "" for any other call.
std::string dependent_name(const CallExpr *ce) {
  if (!ce->isTypeDependent() && !ce->isValueDependent()) return "";
  const Expr *callee = ce->getCallee()->IgnoreParens();
  DeclarationName n;
  if (const auto *m = dyn_cast<CXXDependentScopeMemberExpr>(callee)) n = m->getMember();
  else if (const auto *m = dyn_cast<UnresolvedMemberExpr>(callee)) n = m->getMemberName();
  else if (const auto *l = dyn_cast<UnresolvedLookupExpr>(callee)) n = l->getName();
  else if (const auto *d = dyn_cast<DependentScopeDeclRefExpr>(callee)) n = d->getDeclName();
  return n.isIdentifier() ? n.getAsString() : "";
}

std::optional<CallKind> call_kind(const CallExpr *ce, const ASTContext &ast) {
  if (isa<UserDefinedLiteral>(ce)) return std::nullopt;
  if (const auto *op = dyn_cast<CXXOperatorCallExpr>(ce))
    if (op->getOperator() != OO_Call) return std::nullopt;  // overloaded operators are expressions
  const FunctionDecl *fd = ce->getDirectCallee();
  if (never_wrapped(fd) || (fd && fd->getBuiltinID() && fd->getNameAsString().rfind("__", 0) == 0))
    return std::nullopt;
  CallKind k;
  if ((k.virtual_method = virtual_callee(ce))) return k;
  if (fd) {
    k.direct = fd;
    return k;
  }
  k.dependent_name = dependent_name(ce);
  if (k.dependent_name.empty() && !isa<CXXMemberCallExpr>(ce))
    k.pointer_type = function_type(ce->getCallee()->getType(), ast);
  return k;
}

class SiteFinder : public EvaluatedVisitor<SiteFinder> {
 public:
  SiteFinder(Context &cx, const FunctionIntent &fn) : cx_(cx), fn_(fn) {}
  bool VisitCallExpr(CallExpr *ce) {
    const std::optional<CallKind> kind = call_kind(ce, cx_.ast);
    if (!kind) return true;
    const SourceManager &sm = cx_.ast.getSourceManager();
    auto at = locate(ce->getSourceRange(), sm, cx_.ast.getLangOpts());
    if (!at) {
      ++cx_.out.selected_skipped_macro_sites;
      cx_.out.selected_notes.push_back(cx_.where(ce->getBeginLoc()) + ": call to " + callee_name(ce, cx_) +
                              " is produced by a macro body; not timed");
      return true;
    }
    if (!cx_.editable(at->file)) return true;
    SiteIntent s;
    s.at = *at;
    s.form = value_form(ce, cx_.lang);
    s.lang = cx_.lang;
    s.closure = closure_of(ce, s.form, s.lang, cx_.ast.getLangOpts());
    // A class prvalue kept out of a closure (an argument temporary it may
    // refer to, __func__, ...) takes the scope form: the value form's helper
    // takes the value and returns it, a copy or a move the original never
    // made (a class with a hand-written destructor and no copy constructor
    // freed twice).
    if (s.lang == Lang::Cxx && s.closure == Closure::None && s.form == ValueForm::Prvalue &&
        ce->getType()->isRecordType())
      s.form = ValueForm::Dependent;
    s.discarded = s.lang == Lang::C && s.form == ValueForm::Prvalue && discarded(ce, cx_.ast);
    s.function_file = fn_.file;
    s.function_at = fn_.insert_at;
    s.callee = callee_name(ce, cx_);
    // A call through a pointer that a macro spells (APR's apr_bucket_read(e,
    // ...) is (e)->type->read(e, ...)) has no text of its own: the macro
    // names it ("site#130" in Apache's reports).
    if (s.callee.empty() && !s.at.macro.empty()) s.callee = s.at.macro;
    s.indirect = !kind->direct;
    if (kind->virtual_method) s.virtual_method = normalize_qualified(kind->virtual_method->getQualifiedNameAsString());
    s.callee_type = kind->pointer_type;
    if (!s.callee_type.empty()) s.holder = holder_of(ce->getCallee(), cx_);
    s.dependent_name = kind->dependent_name;
    bool invalid = false;
    llvm::StringRef buf = sm.getBufferData(sm.getFileID(sm.getExpansionLoc(ce->getBeginLoc())), &invalid);
    if (!invalid && at->end <= buf.size()) s.callee_text = buf.substr(at->begin, std::min(200u, at->end - at->begin)).str();
    cx_.out.sites.push_back(std::move(s));
    return true;
  }

 private:
  Context &cx_;
  const FunctionIntent &fn_;
};

class SyncFinder : public EvaluatedVisitor<SyncFinder> {
 public:
  explicit SyncFinder(Context &cx) : cx_(cx) {}

  bool VisitCallExpr(CallExpr *ce) {
    const FunctionDecl *fd = ce->getDirectCallee();
    if (!fd) return dependent_member_call(ce);
    auto it = cx_.opt.sync->by_name.find(normalize_qualified(fd->getQualifiedNameAsString()));
    if (it == cx_.opt.sync->by_name.end() || it->second.op == SyncOp::Scoped) return true;
    const SyncRule &rule = it->second;
    if (rule.args >= 0 && written_args(ce) != static_cast<size_t>(rule.args)) return true;
    std::vector<const Expr *> args(ce->arg_begin(), ce->arg_end());
    std::string self;
    const Expr *base = nullptr;
    const MemberExpr *me = nullptr;
    if (const auto *mc = dyn_cast<CXXMemberCallExpr>(ce)) {
      base = mc->getImplicitObjectArgument();
      me = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
    } else if ((me = dyn_cast<MemberExpr>(ce->getCallee()->IgnoreParenImpCasts()))) {
      // In a class template's own code a call of a member of the current
      // instantiation is a plain CallExpr of a MemberExpr (InnoDB's
      // srw_mutex_impl<spinloop>::wr_unlock calling wake()).
      base = me->getBase();
    }
    if (base) self = object_address(base, me && me->isArrow());
    add(rule, ce, ce->getSourceRange(), args, self, base, value_form(ce, cx_.lang));
    return true;
  }

  // Whether the function a rule's try calls first (`pthread_mutex_trylock({0})
  // == 0`) is declared in the unit: a tree may declare the lock function it
  // calls and not its try (and C99 refuses an undeclared call). A member's
  // try (`{this}->try_lock()`) is its class's.
  bool try_declared(const std::string &tmpl) const {
    size_t n = 0;
    while (n < tmpl.size() && ident_char(tmpl[n])) ++n;
    if (n == 0) return true;
    return !cx_.ast.getTranslationUnitDecl()->lookup(DeclarationName(&cx_.ast.Idents.get(tmpl.substr(0, n)))).empty();
  }

  // The address of the object a member is called on, as {this} expands.
  std::string object_address(const Expr *base, bool arrow) const {
    if (base->IgnoreParenImpCasts()->isImplicitCXXThis()) return "this";
    if (arrow) return cx_.text(base->getSourceRange());
    return "__builtin_addressof(" + cx_.text(base->getSourceRange()) + ")";
  }

  // A member call whose object has a dependent type in a template's own code,
  // where clang has no callee yet: InnoDB's ssux_lock_impl<spinloop>::rd_wait
  // calls writer.wait(wl) on its srw_mutex_impl<spinloop> member. The rule is
  // found by the template's name and the member's: `srw_mutex_impl::wait`.
  bool dependent_member_call(CallExpr *ce) {
    const auto *me = dyn_cast<CXXDependentScopeMemberExpr>(ce->getCallee()->IgnoreParens());
    if (!me || !me->getMember().isIdentifier()) return true;
    QualType t = me->getBaseType();
    if (me->isArrow() && !t.isNull())
      if (const auto *p = t->getAs<PointerType>()) t = p->getPointeeType();
    if (t.isNull()) return true;
    std::string cls;
    if (const auto *ts = t->getAs<TemplateSpecializationType>()) {
      if (const TemplateDecl *td = ts->getTemplateName().getAsTemplateDecl()) cls = td->getQualifiedNameAsString();
    } else if (const auto *rd = t->getAsCXXRecordDecl()) {
      cls = rd->getQualifiedNameAsString();
    }
    if (cls.empty()) return true;
    auto it = cx_.opt.sync->by_name.find(normalize_qualified(cls + "::" + me->getMember().getAsString()));
    if (it == cx_.opt.sync->by_name.end() || it->second.op == SyncOp::Scoped) return true;
    const SyncRule &rule = it->second;
    if (rule.args >= 0 && written_args(ce) != static_cast<size_t>(rule.args)) return true;
    std::vector<const Expr *> args(ce->arg_begin(), ce->arg_end());
    const Expr *base = me->isImplicitAccess() ? nullptr : me->getBase();
    const std::string self = base ? object_address(base, me->isArrow()) : "this";
    add(rule, ce, ce->getSourceRange(), args, self, base, value_form(ce, cx_.lang));
    return true;
  }

  // RAII locks: `MutexLock l(&mu_);` as a statement of a block.
  bool TraverseCompoundStmt(CompoundStmt *cs) {
    for (Stmt *s : cs->body()) {
      auto *ds = dyn_cast<DeclStmt>(s);
      if (ds && ds->isSingleDecl())
        if (auto *vd = dyn_cast<VarDecl>(ds->getSingleDecl()))
          if (const Expr *init = vd->getInit())
            if (const auto *ctor = dyn_cast<CXXConstructExpr>(init->IgnoreImplicit())) scoped(ds, ctor);
      if (!TraverseStmt(s)) return false;
    }
    return true;
  }

 private:
  void scoped(DeclStmt *ds, const CXXConstructExpr *ctor) {
    const CXXRecordDecl *rd = ctor->getConstructor()->getParent();
    auto it = cx_.opt.sync->by_name.find(normalize_qualified(rd->getQualifiedNameAsString()));
    if (it == cx_.opt.sync->by_name.end() || it->second.op != SyncOp::Scoped) return;
    size_t written = 0;
    for (const Expr *a : ctor->arguments())
      if (!isa<CXXDefaultArgExpr>(a)) ++written;
    if (it->second.args >= 0 && written != static_cast<size_t>(it->second.args)) return;
    std::vector<const Expr *> args(ctor->arg_begin(), ctor->arg_end());
    add(it->second, nullptr, ds->getSourceRange(), args, "", nullptr, ValueForm::Void);
  }

  void add(const SyncRule &rule, const CallExpr *ce, SourceRange range, const std::vector<const Expr *> &args,
           const std::string &self, const Expr *base, ValueForm form) {
    std::vector<std::string> texts;
    const bool base_effects = base && base->HasSideEffects(cx_.ast);
    bool side_effects = false;
    for (const Expr *a : args) {
      // A macro that parenthesizes its parameters (MariaDB's
      // `#define my_cond_wait(A,B) pthread_cond_wait((A), (B))`) writes the
      // parentheses in its body: the argument as written is inside them.
      std::string t = cx_.text(a->getSourceRange());
      if (t.empty()) t = cx_.text(a->IgnoreParenImpCasts()->getSourceRange());
      texts.push_back(t);
      if (a->HasSideEffects(cx_.ast)) side_effects = true;
    }
    SourceLocation loc = range.getBegin();
    // The value helpers (sync_zero and its kin) take the value and return
    // it: a class would be copied, and the program must not change.
    if (ce && cx_.lang == Lang::Cxx && form == ValueForm::Prvalue && ce->getType()->isRecordType()) {
      cx_.out.notes.push_back(cx_.where(loc) + ": " + rule.name + ": returns a class by value; not wrapped");
      return;
    }
    // The object expression is evaluated again by the probes: only when that
    // is harmless. A release on a receiver that has side effects (LevelDB's
    // hand-off, `writers_.front()->cv.Signal()`) wraps the receiver alone,
    // evaluated once: an lvalue of a member call whose object is {this}, or
    // a built-in pointer (`next()->Signal()`; not a smart pointer's
    // operator->, whose object is not the pointer written).
    const bool pointer = base && base->getType()->isPointerType();
    const bool receiver = base_effects && !side_effects && rule.op == SyncOp::Release && ce &&
                          cx_.lang == Lang::Cxx && rule.object == "{this}" && isa<CXXMemberCallExpr>(ce) &&
                          (pointer ? !isa<CXXOperatorCallExpr>(base->IgnoreParenImpCasts()) : base->isLValue());
    if ((base_effects || side_effects) && !receiver) {
      cx_.out.notes.push_back(cx_.where(loc) + ": " + rule.name + ": arguments have side effects; not wrapped");
      return;
    }
    std::string object = expand_object(rule.object, texts, self);
    if (object.empty()) {
      cx_.out.notes.push_back(cx_.where(loc) + ": " + rule.name + ": no object for \"" + rule.object + "\"");
      return;
    }
    auto at = locate(receiver ? base->getSourceRange() : range, cx_.ast.getSourceManager(), cx_.ast.getLangOpts());
    if (!at) {
      ++cx_.out.skipped_macro_sites;
      cx_.out.notes.push_back(cx_.where(loc) + ": " + rule.name + " is produced by a macro body; not wrapped");
      return;
    }
    if (!cx_.editable(at->file)) return;
    SyncIntent s;
    s.at = *at;
    s.op = rule.op;
    s.form = form;
    s.success = rule.success;
    s.lang = cx_.lang;
    s.object = object;
    s.role = rule.role;
    s.callee = rule.name;
    s.receiver = receiver;
    if (!rule.mutex.empty()) s.mutex = expand_object(rule.mutex, texts, self);
    if (!rule.try_first.empty() && try_declared(rule.try_first)) {
      s.try_first = expand_object(rule.try_first, texts, self);
      s.try_value = rule.try_value;
    }
    if (rule.role_if_arg >= 0 && static_cast<size_t>(rule.role_if_arg) < texts.size() &&
        texts[rule.role_if_arg] == rule.role_if_equals)
      s.role = rule.role_if_role;
    s.discarded = s.lang == Lang::C && s.form == ValueForm::Prvalue && s.op == SyncOp::Acquire &&
                  discarded(ce, cx_.ast);
    cx_.out.syncs.push_back(std::move(s));
  }

  Context &cx_;
};

// What the body of a function vprof cannot open calls: direct callees by
// name, pointer calls by type, virtual calls by method (instrument() turns
// these into the functions of the tree they may reach).
class ReachFinder : public EvaluatedVisitor<ReachFinder> {
 public:
  explicit ReachFinder(OpaqueIntent &out, const ASTContext &ast) : out_(out), ast_(ast) {}
  bool VisitCallExpr(CallExpr *ce) {
    const std::optional<CallKind> kind = call_kind(ce, ast_);
    if (!kind) return true;
    if (kind->virtual_method)
      add(out_.virtual_methods, normalize_qualified(kind->virtual_method->getQualifiedNameAsString()));
    else if (kind->direct)
      add(out_.callees, normalize_qualified(kind->direct->getQualifiedNameAsString()));
    else if (!kind->dependent_name.empty())
      add(out_.dependent_names, kind->dependent_name);
    else
      add(out_.callee_types, kind->pointer_type);
    return true;
  }

 private:
  static void add(std::vector<std::string> &v, std::string s) {
    if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
  }
  OpaqueIntent &out_;
  const ASTContext &ast_;
};

std::string signature_of(const FunctionDecl *fd, const PrintingPolicy &pp) {
  std::string s;
  for (const ParmVarDecl *p : fd->parameters()) {
    if (!s.empty()) s += ", ";
    s += p->getType().getAsString(pp);
  }
  if (fd->isVariadic()) s += s.empty() ? "..." : ", ...";
  return normalize_signature(s);
}

// What a body written twice cannot hold (FunctionIntent::two_versions): a
// label (one function, two of the same label) or asm (its labels are the
// assembler's, one per object file).
class BodyOnce : public RecursiveASTVisitor<BodyOnce> {
 public:
  static bool holds(Stmt *body) {
    BodyOnce v;
    v.TraverseStmt(body);
    return !v.found_;
  }
  bool VisitLabelStmt(LabelStmt *) { return found_ = true, false; }
  bool VisitAsmStmt(AsmStmt *) { return found_ = true, false; }

 private:
  bool found_ = false;
};

// What keeps a body written twice from running its original copy between
// windows (FunctionIntent::plain_between_windows): a static local (both
// copies then run in one process, each with its own), or the interval API
// (vprof_interval_*, vprof::IntervalScope and its kin: the frame an interval
// begins or ends in is recorded from its entry, or a counted interval would
// miss it).
class WindowBound : public RecursiveASTVisitor<WindowBound> {
 public:
  static bool holds(Stmt *body) {
    WindowBound v;
    v.TraverseStmt(body);
    return v.found_;
  }
  bool VisitVarDecl(VarDecl *v) { return !(found_ |= v->isStaticLocal()); }
  bool VisitCallExpr(CallExpr *ce) { return !(found_ |= interval_api(ce->getDirectCallee())); }
  bool VisitCXXConstructExpr(CXXConstructExpr *ce) {
    return !(found_ |= ce->getConstructor() && interval_api(ce->getConstructor()->getParent()));
  }

 private:
  static bool interval_api(const NamedDecl *d) {
    if (!d) return false;
    const std::string n = d->getQualifiedNameAsString();
    return n.rfind("vprof_interval_", 0) == 0 || n.rfind("vprof::", 0) == 0;
  }
  bool found_ = false;
};

// What moving a body into a lambda would change: __func__ and its kin name
// the lambda's operator(), the frame and return address builtins see the
// lambda's frame, and setjmp, vfork and alloca work on the lambda's frame
// (frame_bound). (A variadic function's va_start is ruled out with it.)
class FrameBound : public RecursiveASTVisitor<FrameBound> {
 public:
  static bool holds(Stmt *body) {
    FrameBound v;
    v.TraverseStmt(body);
    return v.found_;
  }
  bool VisitPredefinedExpr(PredefinedExpr *) { return found_ = true, false; }
  bool VisitSourceLocExpr(SourceLocExpr *) { return found_ = true, false; }  // __builtin_FUNCTION()
  bool VisitCallExpr(CallExpr *ce) {
    const unsigned b = ce->getBuiltinCallee();
    if (b == Builtin::BI__builtin_return_address || b == Builtin::BI__builtin_frame_address ||
        b == Builtin::BI__builtin_alloca || frame_bound(ce->getDirectCallee()))
      found_ = true;
    return !found_;
  }

 private:
  bool found_ = false;
};

// The parameters a body names (DeclRefExprs to them).
class ParamsUsed : public RecursiveASTVisitor<ParamsUsed> {
 public:
  explicit ParamsUsed(const FunctionDecl *fd) : fd_(fd) {}
  bool VisitDeclRefExpr(DeclRefExpr *e) {
    if (const auto *p = dyn_cast<ParmVarDecl>(e->getDecl()); p && p->getDeclContext() == fd_) used.insert(p);
    return true;
  }
  std::set<const ParmVarDecl *> used;

 private:
  const FunctionDecl *fd_;
};

// A C++ body written twice keeps its instrumented copy out of line, in a
// lambda the compiler may not inline (edit_plan.cc, two_versions): the
// lambda up to its body, `[&, n]() VPROF_OUTLINED_ -> T` (mutable,
// noinline: forms.cc).
// It takes the parameters of scalar type it names by value: taken by
// reference, their address escaped, and gcc kept them in memory in the
// original copy too (db_bench's EmitPhysicalRecord ran 40% more
// instructions dormant). The return type is spelled fully qualified; none
// for a body that returns nothing (*returns false). nullopt where a lambda
// would not behave as the body (a variadic function, __func__, setjmp), or
// where the type cannot be spelled from here (deduced, dependent).
std::optional<std::string> outline_of(const FunctionDecl *fd, Stmt *body, ASTContext &ast, bool *returns) {
  if (!ast.getLangOpts().CPlusPlus11 || fd->isVariadic() || FrameBound::holds(body)) return std::nullopt;
  std::string ret;
  const QualType rt = fd->getReturnType();
  *returns = !(isa<CXXConstructorDecl>(fd) || isa<CXXDestructorDecl>(fd) || rt->isVoidType());
  if (*returns) {
    if (fd->getDeclaredReturnType()->getContainedDeducedType() || rt->isDependentType() ||
        rt->isInstantiationDependentType())
      return std::nullopt;
    PrintingPolicy pp(ast.getLangOpts());
    pp.SuppressUnwrittenScope = true;  // no "(anonymous namespace)::"
    ret = " -> " + TypeName::getFullyQualifiedName(rt, ast, pp, /*WithGlobalNsPrefix=*/true);
  }
  ParamsUsed used(fd);
  used.TraverseStmt(body);
  std::string capture = "&";
  for (const ParmVarDecl *p : fd->parameters())
    if (used.used.count(p) && !p->getName().empty() && !p->isParameterPack() && p->getType()->isScalarType() &&
        !p->getType().isVolatileQualified())
      capture += ", " + p->getName().str();
  return "[" + capture + "]() VPROF_OUTLINED_" + ret;
}

class DefinitionVisitor : public RecursiveASTVisitor<DefinitionVisitor> {
 public:
  explicit DefinitionVisitor(Context &cx) : cx_(cx) {}

  bool VisitFunctionDecl(FunctionDecl *fd) {
    if (!fd->doesThisDeclarationHaveABody() || !fd->isThisDeclarationADefinition() || fd->isImplicit() ||
        fd->getTemplateInstantiationPattern() || isLambdaCallOperator(fd) || fd->isDefaulted())
      return true;
    const SourceManager &sm = cx_.ast.getSourceManager();
    std::string file = file_of(fd->getLocation(), sm);
    if (sm.isInSystemHeader(sm.getExpansionLoc(fd->getLocation()))) return true;
    std::string name = normalize_qualified(fd->getQualifiedNameAsString());
    cx_.out.names_seen.push_back(name);
    if (cx_.opt.sync && !cx_.opt.sync->by_name.empty() && cx_.editable(file) && !fd->isConstexpr()) {
      SyncFinder sync(cx_);
      sync.TraverseStmt(fd->getBody());
      if (const auto *ctor = dyn_cast<CXXConstructorDecl>(fd))
        for (const CXXCtorInitializer *ci : ctor->inits())
          if (ci->isWritten()) sync.TraverseStmt(ci->getInit());
    }
    for (const NamePattern &p : cx_.opt.patterns) {
      if (p.name != name || !path_has_suffix(file, p.file)) continue;
      if (p.has_signature && signature_of(fd, cx_.ast.getPrintingPolicy()) != p.signature) continue;
      select(fd, p, file);
      break;
    }
    return true;
  }

  // Callees of direct calls: a reference to a function anywhere else takes
  // its address (a pointer, a table entry, a callback argument). Calls are
  // visited before their callee expressions.
  // A holder bound to a reference parameter may be written by the callee.
  bool VisitCallExpr(CallExpr *ce) {
    if (Expr *callee = ce->getCallee()) callees_.insert(callee->IgnoreParenImpCasts());
    const FunctionDecl *fd = ce->getDirectCallee();
    if (fd && in_tree(ce->getBeginLoc()))
      for (unsigned i = 0; i < ce->getNumArgs() && i < fd->getNumParams(); ++i)
        if (writable_reference(fd->getParamDecl(i)->getType())) escape(ce->getArg(i));
    return true;
  }

  bool VisitDeclRefExpr(DeclRefExpr *e) {
    const auto *fd = dyn_cast<FunctionDecl>(e->getDecl());
    if (fd && !callees_.count(e) && in_tree(e->getLocation())) take_address(fd, fd->getType());
    return true;
  }

  // What the tree stores into its function-pointer variables and fields
  // (ScanResult::stored): an initializer, an assignment, a constructor's or
  // an aggregate's initializer, a member's default. A holder whose address
  // is taken may be written anywhere: its targets are its type's.
  bool VisitVarDecl(VarDecl *vd) {
    if (!vd->hasInit() || isa<ParmVarDecl>(vd) || !in_tree(vd->getLocation())) return true;
    if (writable_reference(vd->getType())) escape(vd->getInit());  // auto &r = s.fn: r may store there
    else store(holder_key(vd, cx_), vd->getInit());
    return true;
  }

  bool VisitFieldDecl(FieldDecl *fd) {
    if (fd->hasInClassInitializer() && in_tree(fd->getLocation()))
      store(holder_key(fd, cx_), fd->getInClassInitializer());
    return true;
  }
  bool VisitBinaryOperator(BinaryOperator *bo) {
    if (bo->getOpcode() == BO_Assign && in_tree(bo->getOperatorLoc()))
      store(holder_of(bo->getLHS(), cx_), bo->getRHS());
    return true;
  }
  bool VisitCXXConstructorDecl(CXXConstructorDecl *ctor) {
    if (!ctor->hasBody() || !in_tree(ctor->getLocation())) return true;
    for (const CXXCtorInitializer *ci : ctor->inits())
      if (ci->isMemberInitializer()) store(holder_key(ci->getMember(), cx_), ci->getInit());
    return true;
  }
  bool VisitInitListExpr(InitListExpr *ile) {
    // Without implicit code only one form is visited: a designated list's
    // syntactic one. The semantic form has the fields' values in order.
    if (!ile->isSemanticForm()) ile = ile->getSemanticForm();
    const RecordDecl *rd = ile ? ile->getType()->getAsRecordDecl() : nullptr;
    if (!rd || !in_tree(ile->getBeginLoc())) return true;
    if (rd->isUnion()) {
      if (const FieldDecl *f = ile->getInitializedFieldInUnion(); f && ile->getNumInits() == 1)
        store(holder_key(f, cx_), ile->getInit(0));
      return true;
    }
    unsigned i = 0;
    for (const FieldDecl *f : rd->fields()) {
      if (f->isUnnamedBitfield()) continue;
      if (i >= ile->getNumInits()) break;
      store(holder_key(f, cx_), ile->getInit(i++));
    }
    return true;
  }
  bool VisitUnaryOperator(UnaryOperator *u) {
    if (u->getOpcode() == UO_AddrOf && in_tree(u->getOperatorLoc())) escape(u->getSubExpr());
    return true;
  }
  static bool writable_reference(QualType t) {
    return t->isLValueReferenceType() && !t.getNonReferenceType().isConstQualified();
  }
  void escape(const Expr *e) {
    if (std::string h = holder_of(e, cx_); !h.empty()) cx_.out.stored_unknown.push_back(h);
  }
  void store(const std::string &holder, const Expr *value) {
    if (holder.empty()) return;
    auto fns = stored_functions(value, cx_.ast);
    if (!fns) {
      cx_.out.stored_unknown.push_back(holder);
      return;
    }
    for (auto &f : *fns) cx_.out.stored.emplace_back(holder, std::move(f));
  }

  // A function cast to a function pointer type may be called through that
  // type too (function_types.h, cast_function).
  bool VisitExplicitCastExpr(ExplicitCastExpr *e) {
    const FunctionDecl *fd = cast_function(e);
    if (fd && in_tree(e->getBeginLoc())) take_address(fd, e->getType());
    return true;
  }

  // fd's address is taken as a `type` (its own, or what it is cast to): a
  // call through a pointer of that type may reach it.
  void take_address(const FunctionDecl *fd, QualType type) {
    std::string t = address_key(fd, type, cx_.ast);
    if (!t.empty()) cx_.out.address_taken.emplace_back(t, normalize_qualified(fd->getQualifiedNameAsString()));
  }

  bool VisitCXXMethodDecl(CXXMethodDecl *md) {
    if (!md->isVirtual() || !md->doesThisDeclarationHaveABody() || !in_tree(md->getLocation())) return true;
    std::string name = normalize_qualified(md->getQualifiedNameAsString());
    for (const CXXMethodDecl *o : overridden_methods(md))
      cx_.out.overrides.emplace_back(normalize_qualified(o->getQualifiedNameAsString()), name);
    return true;
  }

  std::string error;

 private:
  bool in_tree(SourceLocation loc) const { return instr::in_tree(cx_, loc); }

  std::set<const Expr *> callees_;

  // fd cannot be instrumented: what its body calls, for instrument() to
  // report (an error, or in a dry run the functions it reaches).
  void opaque(FunctionDecl *fd, const NamePattern &p, std::string why) {
    OpaqueIntent o;
    o.name = normalize_qualified(fd->getQualifiedNameAsString());
    o.pattern = p.text;
    o.where = cx_.where(fd->getLocation());
    o.why = std::move(why);
    ReachFinder reach(o, cx_.ast);
    reach.TraverseStmt(fd->getBody());
    cx_.out.opaque.push_back(std::move(o));
  }

  void select(FunctionDecl *fd, const NamePattern &p, const std::string &file) {
    std::string where = cx_.where(fd->getLocation());
    if (!cx_.editable(file)) {
      opaque(fd, p, "it is defined outside the source tree (" + cx_.opt.source_root + ")");
      return;
    }
    // A probe is not a constant expression; a coroutine's body is not ours to open.
    if (fd->isConstexpr()) {
      cx_.out.selected_notes.push_back(where + ": " + p.text + " is constexpr; not instrumented");
      cx_.out.skipped_patterns.push_back(p.text);
      return;
    }
    Stmt *body = fd->getBody();
    if (isa<CoroutineBodyStmt>(body)) {
      cx_.out.selected_notes.push_back(where + ": " + p.text + " is a coroutine; not instrumented");
      cx_.out.skipped_patterns.push_back(p.text);
      return;
    }
    // A function-try-block: the probe goes in the try block (handlers are not covered).
    const bool try_block = isa<CXXTryStmt>(body);
    if (auto *t = dyn_cast<CXXTryStmt>(body)) body = t->getTryBlock();
    auto *cs = dyn_cast<CompoundStmt>(body);
    const SourceManager &sm = cx_.ast.getSourceManager();
    if (!cs || cs->getLBracLoc().isMacroID()) {
      // Name the macro the user sees (APR_IMPLEMENT_EXTERNAL_HOOK_RUN_FIRST
      // is what a hook's AP_IMPLEMENT_HOOK_RUN_FIRST expands to).
      std::string macro;
      if (cs) {
        SourceLocation at = cs->getLBracLoc();  // the outermost expansion: what the file writes
        for (SourceLocation up; (up = sm.getImmediateMacroCallerLoc(at)).isMacroID();) at = up;
        macro = Lexer::getImmediateMacroName(at, sm, cx_.ast.getLangOpts()).str();
      }
      opaque(fd, p, "its body's '{' comes from " + (macro.empty() ? std::string("a macro") : "the macro " + macro));
      return;
    }
    FunctionIntent f;
    f.name = normalize_qualified(fd->getQualifiedNameAsString());
    f.pattern = p.text;
    f.file = file;
    f.insert_at = sm.getFileOffset(cs->getLBracLoc()) + 1;
    f.lang = cx_.lang;
    if (!try_block && cs->getRBracLoc().isFileID() &&
        sm.getFileID(cs->getRBracLoc()) == sm.getFileID(cs->getLBracLoc()) && BodyOnce::holds(cs)) {
      f.body_end = sm.getFileOffset(cs->getRBracLoc());
      f.two_versions = true;
      f.plain_between_windows = !WindowBound::holds(cs);
      if (cx_.lang == Lang::Cxx)
        if (auto o = outline_of(fd, cs, cx_.ast, &f.outline_returns)) f.outline = *o;
    }
    SourceLocation nl = sm.getExpansionLoc(fd->getLocation());
    f.decl.file = file;
    f.decl.line = sm.getSpellingLineNumber(nl);
    f.decl.column = sm.getSpellingColumnNumber(nl);
    cx_.out.functions.push_back(f);
    SiteFinder sites(cx_, cx_.out.functions.back());
    if (const auto *ctor = dyn_cast<CXXConstructorDecl>(fd))
      for (const CXXCtorInitializer *ci : ctor->inits())
        if (ci->isWritten()) sites.TraverseStmt(ci->getInit());
    sites.TraverseStmt(fd->getBody());
  }

  Context &cx_;
};

}  // namespace

Expected<ScanResult> scan_translation_unit(const CompileEntry &entry, const ScanOptions &opt) {
  ScanResult out;
  std::string error;
  Status st = parse_tu(entry, opt.overlay, [&](ASTContext &ast) {
    Context cx{opt, ast, out, ast.getLangOpts().CPlusPlus ? Lang::Cxx : Lang::C};
    DefinitionVisitor v(cx);
    v.TraverseDecl(ast.getTranslationUnitDecl());
    error = v.error;
    out.files_read = files_read(ast.getSourceManager());
  });
  if (!st) return Error{st.message()};
  if (!error.empty()) return Error{error};
  return out;
}

}  // namespace vprof::instr
