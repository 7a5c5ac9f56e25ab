// MAP-Elites cells and parent selection.
#include "search/archive.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace kevo::search {

std::string cell_of(const std::string& space, double occupancy, int bands) {
  int band = std::clamp(static_cast<int>(occupancy * bands), 0, bands - 1);
  char buf[64];
  std::snprintf(buf, sizeof buf, "|occ %d-%d%%", 100 * band / bands, 100 * (band + 1) / bands);
  return space + buf;
}

static bool fitter(const Elite& a, const Elite& b) {  // a before b
  if (a.parent.fitness != b.parent.fitness) return a.parent.fitness > b.parent.fitness;
  return a.parent.variant < b.parent.variant;
}

bool Archive::insert(const Elite& e) {
  auto it = cells_.find(e.cell);
  if (it == cells_.end()) {
    cells_.emplace(e.cell, e);
    return true;
  }
  if (e.parent.fitness > it->second.parent.fitness) {
    it->second = e;
    return true;
  }
  return false;
}

const Elite* Archive::best() const {
  const Elite* b = nullptr;
  for (const auto& [cell, e] : cells_)
    if (!b || fitter(e, *b)) b = &e;
  return b;
}

std::vector<const Elite*> Archive::top(size_t n) const {
  std::vector<const Elite*> all;
  for (const auto& [cell, e] : cells_) all.push_back(&e);
  std::sort(all.begin(), all.end(), [](const Elite* a, const Elite* b) { return fitter(*a, *b); });
  if (all.size() > n) all.resize(n);
  return all;
}

bool parse_selection(const std::string& name, Selection& out) {
  if (name == "tournament") out = Selection::Tournament;
  else if (name == "proportional") out = Selection::Proportional;
  else return false;
  return true;
}

const Elite& select_parent(const Archive& a, Selection how, int size, std::mt19937_64& rng, const Elite* exclude) {
  std::vector<const Elite*> pool;
  for (const auto& [cell, e] : a.cells())
    if (&e != exclude) pool.push_back(&e);
  if (pool.empty()) {
    if (exclude) return *exclude;
    throw std::logic_error("select_parent on an empty archive");
  }
  if (how == Selection::Proportional) {
    double total = 0;
    for (const Elite* e : pool) total += e->parent.fitness;
    double pick = std::uniform_real_distribution<double>(0, total)(rng);
    for (const Elite* e : pool) {
      if (pick < e->parent.fitness) return *e;
      pick -= e->parent.fitness;
    }
    return *pool.back();
  }
  const Elite* best = nullptr;
  for (int i = 0; i < std::max(1, size); ++i) {
    const Elite* e = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
    if (!best || fitter(*e, *best)) best = e;
  }
  return *best;
}

}  // namespace kevo::search
