// The genome edits mutation operators are made of (mutate/operator.h): every legal single-knob
// change, several knobs at once, crossover between two genomes of one space. Each returns only
// legal genomes: the manifest's constraints, not the compiler, reject bad children.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "mutate/space.h"

namespace kevo::mutate {

// One knob set to one value.
struct KnobChange {
  int knob = 0;
  int64_t value = 0;
};

// Every legal single-knob change of `g` (a value different from the current one whose child is
// legal), knob by knob in the domain's order.
std::vector<KnobChange> point_mutations(const DesignSpace& space, const Genome& g);

// `g` with the changes applied (not checked).
Genome apply(const Genome& g, const std::vector<KnobChange>& changes);

// 2 to `max_knobs` distinct knobs set to random other values; nullopt when no legal child was
// found in `attempts` draws.
std::optional<Genome> multi_knob(const DesignSpace& space, const Genome& g, std::mt19937_64& rng, int max_knobs = 3,
                                 int attempts = 64);

// Uniform crossover: each knob from `a` or `b`; a child equal to neither parent when one exists.
std::optional<Genome> crossover(const DesignSpace& space, const Genome& a, const Genome& b, std::mt19937_64& rng,
                                int attempts = 64);

// The space of `spaces` with this id, or null.
const DesignSpace* find_space(const std::vector<std::unique_ptr<DesignSpace>>& spaces, const std::string& id);

}  // namespace kevo::mutate
