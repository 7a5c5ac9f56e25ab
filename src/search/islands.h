// Islands: each a MAP-Elites archive with its own stagnation count; stale islands start over from
// fresh seeds, and the best elites migrate around a ring.
#pragma once

#include <optional>
#include <vector>

#include "search/archive.h"

namespace kevo::search {

struct Island {
  Archive archive;
  double best = 0;     // the best fitness the archive has held since the island last started over
  int stale = 0;       // generations since `best` last improved
  bool reseed = false; // started over: the next generation seeds it again
};

// After a generation: an island whose best has not improved for `stagnation` generations starts
// over, keeping only `anchor` (the run's best elite, when there is one).
void reseed_stagnant(std::vector<Island>& islands, const std::optional<Elite>& anchor, int stagnation);

// After generation `g`: every `interval` generations (0: never) each island sends its `migrants`
// best elites to the next island of the ring.
void migrate(std::vector<Island>& islands, int g, int interval, int migrants);

}  // namespace kevo::search
