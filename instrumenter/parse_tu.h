// Parses one compile-db entry with clang and hands the AST to a callback.
// Diagnostics are collected, never printed; the first error becomes the
// returned message ("<file>: does not parse: <file>:<line>:<col>: <what>"),
// and a translation unit with errors never reaches the callback.
#ifndef VPROF_INSTRUMENTER_PARSE_TU_H
#define VPROF_INSTRUMENTER_PARSE_TU_H

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "instrumenter/compile_db.h"

namespace clang {
class ASTContext;
class SourceManager;
}

namespace vprof::instr {

// `overlay`: files to read with other contents than on disk (may be null).
Status parse_tu(const CompileEntry &entry, const std::map<std::string, std::string> *overlay,
                const std::function<void(clang::ASTContext &)> &on_ast);

// Every file a parse read (sources and headers), by absolute real path,
// sorted: what a cached result of the parse depends on (unit_cache.h).
std::vector<std::string> files_read(const clang::SourceManager &sm);

// How many threads for_each_tu uses for n translation units: `jobs`, or one a
// core when 0, and never more than n.
unsigned tu_workers(unsigned jobs, size_t n);

// Runs work(i, worker) for every i in [0, n) on tu_workers(jobs, n) threads;
// `worker` is the running thread's number, for results kept per thread. After
// each, done(count so far, i) runs under one lock (progress lines). Once one
// fails no other starts; the failure of the lowest i is returned, so which
// error is reported does not depend on scheduling.
Status for_each_tu(size_t n, unsigned jobs, const std::function<Status(size_t i, unsigned worker)> &work,
                   const std::function<void(size_t count, size_t i)> &done = {});

}  // namespace vprof::instr

#endif
