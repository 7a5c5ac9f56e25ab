// Symbolic sizes: each dim of each value matched, across every workload, to a dim expression of
// a declared tensor (or a literal), so that plans hold for all workloads.
#include <nlohmann/json.hpp>

#include <sstream>
#include <stdexcept>

#include "lower/canonical.h"
#include "lower/kit.h"

namespace kevo::lower {

TaskGraph::TaskGraph(const Task& task) : task_(task) {
  for (const Workload& w : task.workloads) graphs_.push_back(canonical(task.graph(w)));
  collect_expressions();
}

TaskGraph::TaskGraph(std::shared_ptr<const Task> task, std::vector<Graph> graphs)
    : owned_(std::move(task)), task_(*owned_), graphs_(std::move(graphs)) {
  if (graphs_.size() != task_.workloads.size()) throw std::logic_error("a derived task graph needs one graph per workload");
  collect_expressions();
}

void TaskGraph::collect_expressions() {
  const Task& task = task_;
  auto add = [&](const std::string& expr) {
    std::vector<int64_t> vals;
    for (const Workload& w : task.workloads) {
      try {
        vals.push_back(AxisExpr::parse(expr).eval(task.axis_values(w)));
      } catch (const std::invalid_argument&) {
        return;
      }
    }
    candidates_.emplace_back(expr, vals);
  };
  for (const Axis& a : task.axes) add(a.name);
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list)
      for (const Dim& d : t.shape)
        if (!d.expr.empty()) add("(" + d.expr + ")");
}

std::string paren(const std::string& e) {
  return e.find_first_of(" +-*/%") == std::string::npos ? e : "(" + e + ")";
}

std::string TaskGraph::dim(int v, int d) const {
  // A declared input or the output keeps the contract's own spelling ("W", not an "H" that
  // happens to equal it in every workload).
  const TensorDecl* decl = nullptr;
  if (input_index(v) >= 0) decl = &task_.inputs[static_cast<size_t>(input_index(v))];
  if (graph().outputs.size() == 1 && v == output()) decl = &task_.outputs.front();
  if (decl && d < static_cast<int>(decl->shape.size())) {
    const Dim& dim = decl->shape[static_cast<size_t>(d)];
    if (dim.expr.empty()) return std::to_string(dim.size);
    return paren(dim.expr);
  }
  std::vector<int64_t> want;
  for (const Graph& g : graphs_) want.push_back(g.values[static_cast<size_t>(v)].shape[static_cast<size_t>(d)]);
  bool same = true;
  for (int64_t x : want) same = same && x == want.front();
  for (const auto& [expr, vals] : candidates_)
    if (vals == want) return expr;
  if (same) return std::to_string(want.front());
  throw std::runtime_error("no axis expression matches dim " + std::to_string(d) + " of value %" + std::to_string(v));
}

std::string TaskGraph::product(int v, int from, int to) const {
  std::string s;
  for (int d = from; d < to; ++d) {
    std::string e = dim(v, d);
    if (e == "1") continue;
    s += (s.empty() ? "" : " * ") + e;
  }
  return s.empty() ? "1" : s;
}

int64_t TaskGraph::product_value(size_t w, int v, int from, int to) const {
  int64_t p = 1;
  for (int d = from; d < to; ++d) p *= graphs_[w].values[static_cast<size_t>(v)].shape[static_cast<size_t>(d)];
  return p;
}

int TaskGraph::input_index(int v) const {
  const auto& in = graph().inputs;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] == v) return static_cast<int>(i);
  return -1;
}

int TaskGraph::uses(int v) const {
  int n = 0;
  for (const Node& node : graph().nodes)
    for (int i : node.inputs) n += i == v;
  for (int o : graph().outputs) n += o == v;
  return n;
}

}  // namespace kevo::lower
