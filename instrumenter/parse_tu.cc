#include "instrumenter/parse_tu.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/FileManager.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace vprof::instr {

namespace {

using namespace clang;

// Keeps the first error (file:line:col: message) instead of printing it.
class FirstError : public DiagnosticConsumer {
 public:
  void HandleDiagnostic(DiagnosticsEngine::Level level, const Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < DiagnosticsEngine::Error || !message.empty()) return;
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      PresumedLoc p = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (p.isValid()) {
        message = std::string(p.getFilename()) + ":" + std::to_string(p.getLine()) + ":" +
                  std::to_string(p.getColumn()) + ": " + std::string(text.str());
        return;
      }
    }
    message = std::string(text.str());
  }
  std::string message;
};

class CallbackConsumer : public ASTConsumer {
 public:
  explicit CallbackConsumer(const std::function<void(ASTContext &)> &f) : f_(f) {}
  void HandleTranslationUnit(ASTContext &ast) override {
    // A TU with errors has an incomplete AST: edits from it could be wrong.
    if (!ast.getDiagnostics().hasErrorOccurred()) f_(ast);
  }

 private:
  const std::function<void(ASTContext &)> &f_;
};

class CallbackAction : public ASTFrontendAction {
 public:
  explicit CallbackAction(const std::function<void(ASTContext &)> &f) : f_(f) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &, llvm::StringRef) override {
    return std::make_unique<CallbackConsumer>(f_);
  }

 private:
  const std::function<void(ASTContext &)> &f_;
};

}  // namespace

Status parse_tu(const CompileEntry &entry, const std::map<std::string, std::string> *overlay_files,
                const std::function<void(ASTContext &)> &on_ast) {
  // A physical file system with its own working directory: the shared
  // getRealFileSystem() would chdir the whole process (and race between
  // parsing threads).
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(llvm::vfs::createPhysicalFileSystem().release()));
  if (overlay_files && !overlay_files->empty()) {
    auto mem = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
    for (const auto &[path, text] : *overlay_files)
      mem->addFile(path, 0, llvm::MemoryBuffer::getMemBufferCopy(text, path));
    overlay->pushOverlay(mem);
  }
  overlay->setCurrentWorkingDirectory(entry.directory);
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions(), overlay);
  std::vector<std::string> args = entry.arguments;
  // Warnings cannot stop a parse (-Werror in the target's flags), and the
  // builtin headers come from the clang we link.
  args.insert(args.end() - 1, {"-fsyntax-only", "-w", "-fno-caret-diagnostics", "-Wno-error",
                               "-Wno-unknown-warning-option", "-resource-dir=" VPROF_CLANG_RESOURCE_DIR});
  FirstError diags;
  tooling::ToolInvocation inv(args, std::make_unique<CallbackAction>(on_ast), files.get());
  inv.setDiagnosticConsumer(&diags);
  bool ok = inv.run();
  if (!diags.message.empty()) return Error{entry.file + ": does not parse: " + diags.message};
  if (!ok) return Error{entry.file + ": clang could not process this file"};
  return Status::Ok();
}

std::vector<std::string> files_read(const clang::SourceManager &sm) {
  std::vector<std::string> out;
  for (auto it = sm.fileinfo_begin(); it != sm.fileinfo_end(); ++it) {
    const clang::FileEntry *fe = it->first;
    llvm::StringRef real = fe->tryGetRealPathName();
    llvm::SmallString<256> path(real.empty() ? fe->getName() : real);
    sm.getFileManager().makeAbsolutePath(path);
    out.push_back(std::string(path.str()));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

unsigned tu_workers(unsigned jobs, size_t n) {
  unsigned j = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
  return std::min<unsigned>(j, std::max<size_t>(1, n));
}

Status for_each_tu(size_t n, unsigned jobs, const std::function<Status(size_t, unsigned)> &work,
                   const std::function<void(size_t, size_t)> &done) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  size_t count = 0, failed_at = n;
  std::string failure;
  auto loop = [&](unsigned worker) {
    for (size_t i; (i = next++) < n;) {
      Status s = work(i, worker);
      std::lock_guard<std::mutex> l(mu);
      ++count;
      if (done) done(count, i);
      if (!s && i < failed_at) {
        failed_at = i;
        failure = s.message();
        next = n;  // start no other: the run fails anyway
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = 0, workers = tu_workers(jobs, n); w < workers; ++w) threads.emplace_back(loop, w);
  for (auto &t : threads) t.join();
  if (failed_at < n) return Error{failure};
  return Status::Ok();
}

}  // namespace vprof::instr
