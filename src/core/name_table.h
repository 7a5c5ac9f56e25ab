// A table of entries by name that refuses a second registration of a name: the shape of kevo's
// op registries (lowering rules in core, LibTorch execution in eval).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kevo {

template <typename Entry>
class NameTable {
 public:
  // Two families claiming one name would silently shadow each other, so that is a bug.
  void add(const std::string& name, Entry entry) {
    if (!entries_.emplace(name, std::move(entry)).second)
      throw std::logic_error("'" + name + "' is registered twice");
  }
  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, entry] : entries_) out.push_back(name);
    return out;
  }

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace kevo
