// The part of an op graph that computes some values from others (see subgraph.h).
#include "lower/subgraph.h"

#include <map>
#include <set>

namespace kevo::lower {

bool extract(const Graph& g, const std::vector<int>& ins, const std::vector<int>& outs, Graph* sub,
             std::vector<size_t>* reached, bool keep_inputs) {
  std::set<int> nodes, leaves;
  std::vector<int> stack(outs.begin(), outs.end());
  const std::set<int> stops(ins.begin(), ins.end());
  std::set<int> seen;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (v < 0 || !seen.insert(v).second) continue;
    if (stops.count(v)) {
      leaves.insert(v);
      continue;
    }
    const int p = g.values[static_cast<size_t>(v)].producer;
    if (p < 0) return false;
    if (nodes.insert(p).second)
      for (int in : g.nodes[static_cast<size_t>(p)].inputs) stack.push_back(in);
  }
  std::map<int, int> id;  // old value -> new
  *sub = Graph{};
  reached->clear();
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!keep_inputs && !leaves.count(ins[i])) continue;
    ValueInfo v = g.values[static_cast<size_t>(ins[i])];
    v.producer = -1;
    id[ins[i]] = sub->add_value(v);
    sub->inputs.push_back(id[ins[i]]);
    reached->push_back(i);
  }
  for (int p : nodes) {  // ascending: graph order
    Node n = g.nodes[static_cast<size_t>(p)];
    for (int& in : n.inputs)
      if (in >= 0) in = id.at(in);
    for (int& out : n.outputs) {
      ValueInfo v = g.values[static_cast<size_t>(out)];
      v.producer = static_cast<int>(sub->nodes.size());
      out = id[out] = sub->add_value(v);
    }
    sub->nodes.push_back(std::move(n));
  }
  for (int o : outs) sub->outputs.push_back(id.at(o));
  return true;
}

}  // namespace kevo::lower
