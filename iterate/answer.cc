#include "iterate/answer.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analyzer/report/preemption.h"

namespace vprof::iterate {

namespace {

// The other ranked causes (or factors) whose 95% interval overlaps the top
// one's: the runs do not tell them apart, so the top is one of them, not the
// answer alone (two LevelDB sessions ended on AddRecord 6.9% [5.1, 7.9] and
// on write 6.5% [3.4, 8.9], each ranked near the other's top). "" when none
// does.
std::string not_told_apart(const analyzer::Factor &first, const std::vector<analyzer::Factor> &ranked) {
  const auto top = analyzer::shown_ci95(first, first.share);
  if (!top) return "";
  constexpr size_t kNamed = 3;
  std::vector<std::string> named;
  size_t count = 0;
  for (const analyzer::Factor &c : ranked) {
    const auto ci = analyzer::shown_ci95(c, c.share);
    if (&c == &first || c.rank == 0 || !ci || ci->second < top->first || ci->first > top->second) continue;
    if (++count <= kNamed)
      named.push_back(fmt::format("{} {:.1f}% [{:.1f}, {:.1f}]", c.name, 100 * c.share, 100 * ci->first,
                                  100 * ci->second));
  }
  if (!count) return "";
  if (count > kNamed) named.push_back(fmt::format("{} more", count - kNamed));
  std::string list = named.front();
  for (size_t i = 1; i < named.size(); ++i) list += (i + 1 == named.size() ? " and " : ", ") + named[i];
  return fmt::format(" Its 95% interval [{:.1f}, {:.1f}] overlaps {} of {}: the runs do not tell {} apart.",
                     100 * top->first, 100 * top->second, count > 1 ? "those" : "that", list,
                     count > 1 ? "them" : "the two");
}

}  // namespace

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
    return fmt::format("Top cause: {}, {:.1f}% of the latency's variance: {:.1f} its own{}.{}", c.name,
                       100 * c.share, 100 * c.own_share, held, not_told_apart(c, causes.ranked));
  }
  for (const analyzer::Factor &f : a.factors) {
    if (f.rank != 1) continue;
    std::string machine;
    if (!a.runs.empty())
      if (const auto p = analyzer::preemption_share(*a.runs.front()); p && *p >= 0.05)
        machine = fmt::format(" ({:.1f}% is preemption: the machine, not the code)", 100 * *p);
    return fmt::format("Top factor: {}, {:.1f}% of the latency's variance{}.{}", f.name, 100 * f.share, machine,
                       not_told_apart(f, a.factors));
  }
  return "";
}

}  // namespace vprof::iterate
