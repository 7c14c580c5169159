#include "iterate/answer.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "analyzer/report/preemption.h"

namespace vprof::iterate {

std::string answer_line(const analyzer::Analysis &a) {
  const analyzer::Causes &causes = a.causes;
  if (causes.held && !causes.ranked.empty() && causes.ranked.front().rank == 1) {
    const analyzer::Factor &c = causes.ranked.front();
    std::string held;
    // A wait it held up for 0.0 points is no wait to name.
    if (!c.held_up.empty() && std::fabs(c.held_up.front().share) >= 0.0005) {
      const analyzer::Factor::HeldUp &h = c.held_up.front();
      const double others = c.share - c.own_share - h.share;
      // Which wait: a lock's function names every lock (memcached's top
      // cause held up three pthread_mutex_lock waits), its place says which.
      std::string where;
      if (h.site && !h.site->file.empty())
        where = fmt::format(" ({}:{})", std::filesystem::path(h.site->file).filename().string(), h.site->line);
      held = fmt::format(", {:.1f} holding up {}{}", 100 * h.share, h.wait, where);
      if (std::fabs(others) >= 0.005) held += fmt::format(" and {:.1f} other waits", 100 * others);
    }
    return fmt::format("Top cause: {}, {:.1f}% of the latency's variance: {:.1f} its own{}.", c.name, 100 * c.share,
                       100 * c.own_share, held);
  }
  for (const analyzer::Factor &f : a.factors) {
    if (f.rank != 1) continue;
    std::string machine;
    if (!a.runs.empty())
      if (const auto p = analyzer::preemption_share(*a.runs.front()); p && *p >= 0.05)
        machine = fmt::format(" ({:.1f}% is preemption: the machine, not the code)", 100 * *p);
    return fmt::format("Top factor: {}, {:.1f}% of the latency's variance{}.", f.name, 100 * f.share, machine);
  }
  return "";
}

}  // namespace vprof::iterate
