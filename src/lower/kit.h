// The lowering kit, what every family's lowering shares: the task's graphs with symbolic sizes,
// the elementwise code emitter that generates fused prologues, bodies and epilogues, and the
// candidate's common parts (its comment and kevo-plan block, its template includes).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/task.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace kevo::lower {

// The search-space vocabulary every family writes its spaces in (mutate/space.h).
using mutate::Constraint;
using mutate::count_legal;
using mutate::DesignSpace;
using mutate::device_facts;
using mutate::Facts;
using mutate::family_manifest;
using mutate::Genome;
using mutate::Knob;
using mutate::Manifest;
using mutate::manifest_at;
using mutate::template_text;

// The task's op graph for every workload (the structure is the same for all) in its canonical
// spelling (canonical.h), with sizes as plan expressions over the axes.
class TaskGraph {
 public:
  explicit TaskGraph(const Task& task);
  // A graph derived from another task's (split.cpp: the GEMM-led prefix, or the rest that
  // reads its result as an input): `task` declares the graph's inputs and outputs in order, and
  // the graphs (one per workload of `task`) are given rather than interpreted from its reference.
  TaskGraph(std::shared_ptr<const Task> task, std::vector<Graph> graphs);
  const Task& task() const { return task_; }
  const Graph& graph(size_t w = 0) const { return graphs_[w]; }
  size_t workloads() const { return graphs_.size(); }
  // An expression over the axes equal to value v's dim d in every workload ("B", "H - 3", "1").
  std::string dim(int v, int d) const;
  // The product of dims [from, to) of v as an expression ("B * D"); "1" when the range is empty.
  std::string product(int v, int from, int to) const;
  int64_t product_value(size_t w, int v, int from, int to) const;
  int rank(int v) const { return static_cast<int>(graph().values[static_cast<size_t>(v)].shape.size()); }
  // The contract input index of graph value v, or -1 when v is not a graph input.
  int input_index(int v) const;
  // How many nodes read v (plus one when v is a graph output).
  int uses(int v) const;
  // The single output (tasks with several outputs are not lowered yet), its name and dtype.
  int output() const { return graph().outputs.front(); }
  // Whether the graph has one output and computes it (not a graph input passed through): what a
  // family that writes one output kernel asks first.
  bool one_computed_output() const { return graph().outputs.size() == 1 && input_index(output()) < 0; }

 private:
  void collect_expressions();

  std::shared_ptr<const Task> owned_;  // a derived task's (empty for a contract's)
  const Task& task_;
  std::vector<Graph> graphs_;
  std::vector<std::pair<std::string, std::vector<int64_t>>> candidates_;  // expression, value per workload
};

// Whether the emitter can generate this node (an elementwise op on float32 values).
bool is_elementwise(const Node& n);
// A node the emitter writes as a literal: a Python number (`constant`) or a 0-d tensor filled with
// a float (`full`, from `torch.tensor(0.5)`).
bool is_literal_node(const Node& n);

// The nodes (in graph order) that produce `target` from values where stop(v) holds (inputs,
// reduction results, ...); empty with ok=false when a node on the way is not elementwise.
// Values are float32, or also bf16/fp16 with half_values (computed in float all the same: the
// gemm family's epilogue rounds once, at the store).
struct Region {
  bool ok = false;
  int target = -1;
  std::vector<int> nodes;
  std::vector<int> leaves;  // the stop values it reads, in first-use order
};
Region elementwise_region(const Graph& g, int target, const std::function<bool(int)>& stop, bool half_values = false);

// C++ statements (float arithmetic) computing every node of `region`, each into "vN"; leaves
// are read through leaf(v) (an expression). Returns the statements; `result` gets the
// expression of the region's target (the last node's value, a leaf or a constant).
std::string emit_region(const Graph& g, const Region& region, const std::function<std::string(int)>& leaf,
                        const std::string& indent, std::string* result);

std::string float_literal(double v);  // "0.5f", "1e-05f"
// A plan expression as one term: "(a + b)", or e alone when it is one already.
std::string paren(const std::string& e);

// torch.norm / vector_norm of order p as a reduction: each value transformed ("$" stands for
// it), the results combined with `combine` ("Sum", "Max" or "Min"), the combined `s` finished.
struct NormParts {
  std::string transform, combine, finish;
};
NormParts p_norm(double p);

// A C++ identifier for a contract tensor name.
std::string ident(const std::string& name);

// The .cu text of a rendered candidate: a comment, the kevo-plan block, then the source.
std::string candidate_text(const Task& task, const std::string& name, const nlohmann::json& plan,
                           const std::string& comment, const std::string& source);

// The template text a candidate carries (candidate.cpp): an `#include "kevo/<path>"` line
// for each of `paths` (files under templates/, "pool/stream.cuh"), in order. The Builder serves
// them to NVRTC from memory; an exported header has them pasted in (core/template_library.h).
std::string template_includes(const std::vector<std::string>& paths);
// What a space's candidates carry: templates/common.cuh (which the generated code uses), then
// the manifest's source.
std::string candidate_templates(const Manifest& manifest);

}  // namespace kevo::lower
