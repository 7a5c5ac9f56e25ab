// MAP-Elites cells.
#include "search/archive.h"

#include <algorithm>
#include <cstdio>

namespace kevo::search {

std::string cell_of(const std::string& space, double occupancy, int bands) {
  int band = std::clamp(static_cast<int>(occupancy * bands), 0, bands - 1);
  char buf[64];
  std::snprintf(buf, sizeof buf, "|occ %d-%d%%", 100 * band / bands, 100 * (band + 1) / bands);
  return space + buf;
}

bool fitter(const Elite& a, const Elite& b) {
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

AdmissionBar admission_bar(const Archive& archive, const std::string& space, int bands) {
  AdmissionBar bar;
  bar.screen = true;
  if (const Elite* b = archive.best()) bar.island_best = b->parent.fitness;
  for (int band = 0; band < bands; ++band) {
    auto it = archive.cells().find(cell_of(space, (band + 0.5) / bands, bands));
    bar.band_elite.push_back(it == archive.cells().end() ? 0 : it->second.parent.fitness);
  }
  return bar;
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

}  // namespace kevo::search
