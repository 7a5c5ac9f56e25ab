// Stagnation and ring migration.
#include "search/islands.h"

namespace kevo::search {

void reseed_stagnant(std::vector<Island>& islands, const std::optional<Elite>& anchor, int stagnation) {
  for (Island& isl : islands) {
    const Elite* best = isl.archive.best();
    const double f = best ? best->parent.fitness : 0;
    if (f > isl.best) {
      isl.best = f;
      isl.stale = 0;
      continue;
    }
    if (isl.archive.empty() || ++isl.stale < stagnation) continue;
    isl.archive.clear();
    if (anchor) isl.archive.insert(*anchor);
    isl.best = anchor ? anchor->parent.fitness : 0;
    isl.stale = 0;
    isl.reseed = true;
  }
}

void migrate(std::vector<Island>& islands, int g, int interval, int migrants) {
  const size_t n = islands.size();
  if (n < 2 || interval <= 0 || (g + 1) % interval != 0) return;
  std::vector<std::vector<Elite>> outgoing(n);
  for (size_t i = 0; i < n; ++i)
    for (const Elite* e : islands[i].archive.top(static_cast<size_t>(migrants))) outgoing[i].push_back(*e);
  for (size_t i = 0; i < n; ++i)
    for (const Elite& e : outgoing[i]) islands[(i + 1) % n].archive.insert(e);
}

}  // namespace kevo::search
