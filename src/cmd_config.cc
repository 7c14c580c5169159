// vprof config --cflags | --libs | --include-dir | --lib-dir | --annotations-dir
// What an annotated or instrumented program needs to compile and link, from
// the build tree when this vprof runs from it, else from the install prefix.
#include <cstdio>

#include <fmt/format.h>

#include "command.h"

namespace vprof::cli {
namespace {

struct ConfigOptions {
  bool cflags = false, libs = false, include_dir = false, lib_dir = false, annotations = false;
};

int run(const ConfigOptions &o) {
  Dirs d = vprof_dirs();
  if (!(o.cflags || o.libs || o.include_dir || o.lib_dir || o.annotations))
    return fail("config: say what to print: --cflags, --libs, --include-dir, --lib-dir or --annotations-dir");
  std::vector<std::string> out;
  if (o.cflags) out.push_back(fmt::format("-I{}", d.include));
  // Flags that work wherever a build puts them: before the objects (Redis's
  // LDFLAGS) as well as after. Linkers that default to --as-needed (Debian's
  // and Ubuntu's gcc) drop a library named before any object uses it, so
  // -lvprof is linked with --no-as-needed, and --push-state/--pop-state
  // leave the rest of the command line as it was (GNU ld >= 2.25, gold, lld).
  if (o.libs)
    out.push_back(fmt::format("-L{0} -Wl,-rpath,{0} -Wl,--push-state,--no-as-needed -lvprof -Wl,--pop-state -pthread",
                              d.lib));
  if (o.include_dir) out.push_back(d.include);
  if (o.lib_dir) out.push_back(d.lib);
  if (o.annotations) out.push_back(d.annotations);
  std::string line;
  for (const auto &s : out) line += (line.empty() ? "" : " ") + s;
  std::printf("%s\n", line.c_str());
  return kExitOk;
}

Registrar reg("config", "print compiler and linker flags for annotated or instrumented programs",
              [](CLI::App &sub) -> Runner {
                auto o = std::make_shared<ConfigOptions>();
                sub.add_flag("--cflags", o->cflags, "compiler flags (the header directory)");
                sub.add_flag("--libs", o->libs, "linker flags (the runtime library)");
                sub.add_flag("--include-dir", o->include_dir, "the header directory alone");
                sub.add_flag("--lib-dir", o->lib_dir, "the runtime library's directory alone");
                sub.add_flag("--annotations-dir", o->annotations, "where the sync packs are");
                return [o] { return run(*o); };
              });

}  // namespace
}  // namespace vprof::cli
