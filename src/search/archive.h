// One island's MAP-Elites archive: the best variant per cell, a cell being a design space and an
// occupancy band. The elites are the island's population: parents are drawn from them
// (search/parents.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/screening.h"
#include "policy/policy.h"

namespace kevo::search {

struct Elite {
  policy::Parent parent;   // variant id, genome, fitness, resources
  std::string cell;
  int generation = 0;      // when it was measured
};

// Whether `a` ranks before `b`: fitter, or as fit with the lower variant id (so that rankings do
// not depend on the order of insertion).
bool fitter(const Elite& a, const Elite& b);

// "reduce_rows/softmax|occ 50-75%": the descriptor pair of a variant.
std::string cell_of(const std::string& space, double occupancy, int bands = 4);

class Archive;

// What a candidate of `space` must reach to enter `archive` (screening, core/screening.h): its
// best, and the elites of the space's cells by occupancy band.
AdmissionBar admission_bar(const Archive& archive, const std::string& space, int bands);

class Archive {
 public:
  // Takes the cell when it is empty or `e` is strictly fitter (ties keep the incumbent, so the
  // archive does not depend on anything but the order of insertion). True when it took it.
  bool insert(const Elite& e);
  void clear() { cells_.clear(); }
  bool empty() const { return cells_.empty(); }
  size_t size() const { return cells_.size(); }
  const std::map<std::string, Elite>& cells() const { return cells_; }
  // The fittest elite (the lowest variant id among equals); null when empty.
  const Elite* best() const;
  // The `n` fittest, fittest first.
  std::vector<const Elite*> top(size_t n) const;

 private:
  std::map<std::string, Elite> cells_;
};

}  // namespace kevo::search
