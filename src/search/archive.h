// One island's MAP-Elites archive: the best variant per cell, a cell being a design space and an
// occupancy band. The elites are the island's population: parents are drawn from them.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace kevo::search {

struct Elite {
  policy::Parent parent;   // variant id, genome, fitness, resources
  std::string cell;
  int generation = 0;      // when it was measured
};

// "reduce_rows/softmax|occ 50-75%": the descriptor pair of a variant.
std::string cell_of(const std::string& space, double occupancy, int bands = 4);

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

enum class Selection { Tournament, Proportional };
bool parse_selection(const std::string& name, Selection& out);  // "tournament", "proportional"

// A parent drawn from the archive's elites (which must not be empty). `exclude` is skipped when
// another elite exists (a mate distinct from the parent). Tournament: the fittest of `size`
// uniform draws; proportional: probability proportional to fitness.
const Elite& select_parent(const Archive& a, Selection how, int size, std::mt19937_64& rng,
                           const Elite* exclude = nullptr);

}  // namespace kevo::search
