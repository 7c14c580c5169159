// vprof diff BASE HEAD: two analyses side by side, the change in Var(latency)
// attributed to the nodes of the variance tree (docs/diff.md).
#include "diff_common.h"

namespace vprof::cli {
namespace {

struct Opts {
  std::string base, head;
  DiffCliOptions common;
};

int run(const Opts &o) {
  auto sides = load_sides({o.base}, {o.head}, o.common);
  if (!sides) return fail(sides.error().message);
  auto d = run_diff(*sides, o.common);
  if (!d) return fail(d.error().message);
  if (Status s = write_reports(*d, o.common, nullptr); !s.ok()) return fail(s.message());
  return kExitOk;
}

Registrar reg("diff", "compare two analyses node by node (trace directories or saved profiles)",
              [](CLI::App &sub) -> Runner {
  auto o = std::make_shared<Opts>();
  sub.add_option("base", o->base, "the baseline: a trace directory or a saved profile")->required();
  sub.add_option("head", o->head, "the one to compare: a trace directory or a saved profile")->required();
  add_diff_options(sub, o->common);
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace vprof::cli
