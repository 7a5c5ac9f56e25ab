// Random streams: every random choice of a campaign draws from an RNG derived from the run's seed
// and forked per (run, generation, island), so a campaign is reproducible whatever else drew.
#pragma once

#include <cstdint>
#include <random>

namespace kevo {

// SplitMix64's finaliser: a well-mixed 64-bit hash of `x`.
inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// An RNG for one (run, generation, island): independent of how many draws anything else made.
inline std::mt19937_64 fork_rng(uint64_t seed, int run, int generation, int island) {
  uint64_t h = splitmix(seed);
  h = splitmix(h ^ static_cast<uint64_t>(run));
  h = splitmix(h ^ static_cast<uint64_t>(generation));
  h = splitmix(h ^ static_cast<uint64_t>(island));
  return std::mt19937_64(h);
}

}  // namespace kevo
