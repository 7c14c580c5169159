// libFuzzer target: any bytes as a trace file must give diagnostics, never a
// crash, a hang or a sanitizer report.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "analyzer/read/trace_reader.h"
#include "analyzer/read/trace_stream.h"
#include "tests/support/temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A directory of its own, so the streaming reader can open it too.
  static std::string dir = vprof::testing::fresh_dir("vprof-fuzz", "reader");
  static std::string path = dir + "/t-1-1.vpt";
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  vprof::trace::ThreadStream s;
  std::vector<vprof::trace::Diagnostic> diags;
  vprof::trace::read_trace_file(path, s, diags);
  // The same bytes streamed, in small steps, as the merge pulls them.
  auto stream = vprof::trace::TraceStream::open(dir);
  if (stream) {
    for (auto *src : (*stream)->sources()) {
      while (true) {
        src->fill(3);
        size_t n = src->size();
        if (n == 0 && src->exhausted()) break;
        src->settle(std::numeric_limits<int64_t>::max());
        src->consume(n);
      }
    }
    (*stream)->summary();
  }
  return 0;
}
