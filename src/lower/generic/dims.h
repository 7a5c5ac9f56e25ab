// Plan expressions for the dims of every value of a task's graph (generic/dims.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lower/kit.h"

namespace kevo::lower::generic {

class Dims {
 public:
  // Throws std::runtime_error when a dim has no expression that holds for every workload.
  explicit Dims(const TaskGraph& tg);
  const std::vector<std::string>& of(int v) const;
  // Whether expr evaluates to want[w] in every workload w.
  bool fits(const std::string& expr, const std::vector<int64_t>& want) const;

 private:
  void resolve(int v);
  std::vector<int64_t> sizes(int v, int d) const;
  std::string formula(const Node& n, int d) const;
  std::string at(int v, int d) const;

  const TaskGraph& tg_;
  std::map<int, std::vector<std::string>> dims_;
};

}  // namespace kevo::lower::generic
