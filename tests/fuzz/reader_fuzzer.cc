// libFuzzer target: any bytes as a trace file must give diagnostics, never a
// crash, a hang or a sanitizer report.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/read/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::string path = "/tmp/vprof-fuzz-" + std::to_string(getpid()) + ".vpt";
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  vprof::trace::ThreadStream s;
  std::vector<vprof::trace::Diagnostic> diags;
  vprof::trace::read_trace_file(path, s, diags);
  return 0;
}
