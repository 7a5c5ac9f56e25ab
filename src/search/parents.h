// Parent selection: which elite of an island's archive a child is drawn from.
#pragma once

#include <memory>
#include <random>
#include <string>

#include "search/archive.h"

namespace kevo::search {

class ParentSelection {
 public:
  virtual ~ParentSelection() = default;
  // An elite of `a` (which must not be empty); `exclude` is skipped when another elite exists
  // (a mate distinct from the parent).
  virtual const Elite& select(const Archive& a, std::mt19937_64& rng, const Elite* exclude = nullptr) const = 0;
};

// "tournament": the fittest of `tournament` uniform draws (at least one); "proportional":
// probability proportional to fitness. Null for any other name.
std::unique_ptr<ParentSelection> make_parent_selection(const std::string& name, int tournament);

}  // namespace kevo::search
