// Genomes read by knob name.
#include "store/genome_names.h"

#include <algorithm>
#include <sstream>

namespace kevo::store {

std::vector<std::string> knob_names(const SpaceRecord& s) {
  std::vector<std::string> out;
  std::stringstream in(s.knobs);
  for (std::string name; std::getline(in, name, ',');)
    if (!name.empty()) out.push_back(name);
  return out;
}

SpaceRecord space_record(const std::string& task, const std::string& space, const std::vector<std::string>& knobs) {
  SpaceRecord r{task, space, ""};
  for (const std::string& k : knobs) r.knobs += (r.knobs.empty() ? "" : ",") + k;
  return r;
}

std::optional<std::vector<int64_t>> read_genome(const std::vector<int64_t>& values,
                                                const std::vector<std::string>& from, const KnobList& to) {
  std::vector<std::string> recorded = from;
  if (recorded.empty()) {
    if (values.size() > to.names.size()) return std::nullopt;
    recorded.assign(to.names.begin(), to.names.begin() + static_cast<std::ptrdiff_t>(values.size()));
  }
  if (recorded.size() != values.size()) return std::nullopt;
  for (const std::string& name : recorded)
    if (std::find(to.names.begin(), to.names.end(), name) == to.names.end()) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t k = 0; k < to.names.size(); ++k) {
    auto at = std::find(recorded.begin(), recorded.end(), to.names[k]);
    if (at != recorded.end()) {
      out.push_back(values[static_cast<size_t>(at - recorded.begin())]);
    } else if (k < to.defaults.size() && to.defaults[k]) {
      out.push_back(*to.defaults[k]);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace kevo::store
