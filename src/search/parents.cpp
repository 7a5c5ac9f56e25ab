// Tournament and fitness-proportional parent selection.
#include "search/parents.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace kevo::search {

namespace {

// The elites a draw may return: all but `exclude`.
std::vector<const Elite*> pool_of(const Archive& a, const Elite* exclude) {
  std::vector<const Elite*> pool;
  for (const auto& [cell, e] : a.cells())
    if (&e != exclude) pool.push_back(&e);
  return pool;
}

// With nothing else to draw, the excluded elite itself (an archive of one).
const Elite& only(const Elite* exclude) {
  if (exclude) return *exclude;
  throw std::logic_error("parent selection on an empty archive");
}

class Tournament : public ParentSelection {
 public:
  explicit Tournament(int size) : size_(std::max(1, size)) {}
  const Elite& select(const Archive& a, std::mt19937_64& rng, const Elite* exclude) const override {
    const std::vector<const Elite*> pool = pool_of(a, exclude);
    if (pool.empty()) return only(exclude);
    const Elite* best = nullptr;
    for (int i = 0; i < size_; ++i) {
      const Elite* e = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
      if (!best || fitter(*e, *best)) best = e;
    }
    return *best;
  }

 private:
  int size_;
};

class Proportional : public ParentSelection {
 public:
  const Elite& select(const Archive& a, std::mt19937_64& rng, const Elite* exclude) const override {
    const std::vector<const Elite*> pool = pool_of(a, exclude);
    if (pool.empty()) return only(exclude);
    double total = 0;
    for (const Elite* e : pool) total += e->parent.fitness;
    double pick = std::uniform_real_distribution<double>(0, total)(rng);
    for (const Elite* e : pool) {
      if (pick < e->parent.fitness) return *e;
      pick -= e->parent.fitness;
    }
    return *pool.back();
  }
};

}  // namespace

std::unique_ptr<ParentSelection> make_parent_selection(const std::string& name, int tournament) {
  if (name == "tournament") return std::make_unique<Tournament>(tournament);
  if (name == "proportional") return std::make_unique<Proportional>();
  return nullptr;
}

}  // namespace kevo::search
