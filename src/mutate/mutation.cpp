// The genome edits of the mutation operators: all of them keep to the manifest's legal set.
#include "mutate/mutation.h"

#include <algorithm>
#include <numeric>

namespace kevo::mutate {

Genome apply(const Genome& g, const std::vector<KnobChange>& changes) {
  Genome child = g;
  for (const KnobChange& c : changes) child.values.at(c.knob) = c.value;
  return child;
}

std::vector<KnobChange> point_mutations(const DesignSpace& space, const Genome& g) {
  std::vector<KnobChange> out;
  const auto& knobs = space.knobs();
  for (size_t k = 0; k < knobs.size(); ++k)
    for (int64_t v : knobs[k].values) {
      if (v == g.values[k]) continue;
      KnobChange c{static_cast<int>(k), v};
      if (space.legal(apply(g, {c}))) out.push_back(c);
    }
  return out;
}

std::optional<Genome> multi_knob(const DesignSpace& space, const Genome& g, std::mt19937_64& rng, int max_knobs,
                                 int attempts) {
  std::vector<int> mutable_knobs;
  for (size_t k = 0; k < space.knobs().size(); ++k)
    if (space.knobs()[k].values.size() > 1) mutable_knobs.push_back(static_cast<int>(k));
  if (mutable_knobs.size() < 2) return std::nullopt;
  const int most = std::min<int>(max_knobs, static_cast<int>(mutable_knobs.size()));
  for (int attempt = 0; attempt < attempts; ++attempt) {
    int n = std::uniform_int_distribution<int>(2, most)(rng);
    std::vector<int> picked = mutable_knobs;
    std::shuffle(picked.begin(), picked.end(), rng);
    picked.resize(n);
    std::sort(picked.begin(), picked.end());
    Genome child = g;
    for (int k : picked) {
      const auto& dom = space.knobs()[k].values;
      int64_t v = g.values[k];
      while (v == g.values[k]) v = dom[std::uniform_int_distribution<size_t>(0, dom.size() - 1)(rng)];
      child.values[k] = v;
    }
    if (space.legal(child)) return child;
  }
  return std::nullopt;
}

std::optional<Genome> crossover(const DesignSpace& space, const Genome& a, const Genome& b, std::mt19937_64& rng,
                                int attempts) {
  if (a.space != space.id() || b.space != space.id() || a == b) return std::nullopt;
  std::bernoulli_distribution coin(0.5);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    Genome child = a;
    for (size_t k = 0; k < child.values.size(); ++k)
      if (coin(rng)) child.values[k] = b.values[k];
    if (child == a || child == b) continue;
    if (space.legal(child)) return child;
  }
  return std::nullopt;
}

const DesignSpace* find_space(const std::vector<std::unique_ptr<DesignSpace>>& spaces, const std::string& id) {
  for (const auto& s : spaces)
    if (s->id() == id) return s.get();
  return nullptr;
}

}  // namespace kevo::mutate
