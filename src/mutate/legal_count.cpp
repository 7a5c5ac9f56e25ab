// How many legal genomes a space holds: walked where the space is small enough, estimated from
// uniform draws where it is not. `kevo space` prints them; lower() asks whether a task's
// specialised spaces leave search enough room.
#include <random>

#include "mutate/space.h"

namespace kevo::mutate {

// Calls visit(g) on every genome of s in turn (the first knob fastest) until it returns false.
template <typename Visit>
void walk_genomes(const DesignSpace& s, Visit visit) {
  Genome g{s.id(), std::vector<int64_t>(s.knobs().size())};
  std::vector<size_t> at(s.knobs().size(), 0);
  for (;;) {
    for (size_t i = 0; i < at.size(); ++i) g.values[i] = s.knobs()[i].values[at[i]];
    if (!visit(g)) return;
    size_t i = 0;
    while (i < at.size() && ++at[i] == s.knobs()[i].values.size()) at[i++] = 0;
    if (i == at.size()) return;
  }
}

int64_t count_legal(const DesignSpace& s, int64_t enough, uint64_t walk_limit) {
  if (s.size() > walk_limit) return -1;
  int64_t legal = 0;
  walk_genomes(s, [&](const Genome& g) { return (legal += s.legal(g)) < enough; });
  return legal;
}

std::vector<Genome> legal_genomes(const DesignSpace& s) {
  std::vector<Genome> legal;
  walk_genomes(s, [&](const Genome& g) {
    if (s.legal(g)) legal.push_back(g);
    return true;
  });
  return legal;
}

double DesignSpace::legal_estimate(int draws) const {
  std::mt19937_64 rng(7);
  Genome g{id(), std::vector<int64_t>(knobs().size())};
  int found = 0;
  for (int d = 0; d < draws; ++d) {
    for (size_t i = 0; i < g.values.size(); ++i) {
      const auto& dom = knobs()[i].values;
      g.values[i] = dom[std::uniform_int_distribution<size_t>(0, dom.size() - 1)(rng)];
    }
    found += legal(g);
  }
  return static_cast<double>(size()) * found / draws;
}

double estimate_legal(const DesignSpace& s, int draws) { return s.legal_estimate(draws); }

bool hold_legal_genomes(const std::vector<std::unique_ptr<DesignSpace>>& spaces, int64_t n) {
  double legal = 0;
  for (const auto& s : spaces) {
    const int64_t walked = count_legal(*s, n);
    legal += walked >= 0 ? static_cast<double>(walked) : estimate_legal(*s, 2000);
    if (legal >= static_cast<double>(n)) return true;
  }
  return false;
}

}  // namespace kevo::mutate
