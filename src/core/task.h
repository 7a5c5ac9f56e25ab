// A task contract: axes, inputs, outputs, reference program, workloads and tolerance.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/interpreter.h"
#include "core/reference_ast.h"

namespace kevo {

struct Axis {
  std::string name;
  std::optional<int64_t> value;  // set for "const" axes; "var" axes take theirs from each workload
  // The sizes a var axis may take beyond the workloads ("min", "max", "multiple_of"): what kevo
  // export draws unseen shapes from and what an exported header accepts. A var axis that declares
  // no bound gets min 1 and max its largest workload value (docs/contracts.md says why);
  // `declared` says whether the contract gave any of the three.
  int64_t min = 1, max = 1, multiple_of = 1;
  bool declared = false;
  // Whether v lies in [min, max] and is a multiple of multiple_of.
  bool admits(int64_t v) const { return v >= min && v <= max && v % multiple_of == 0; }
};

// One dimension of a declared shape: a literal size, or an axis name or integer expression
// over the axes ("H - 2").
struct Dim {
  std::string expr;  // empty for a literal
  int64_t size = 0;
};

// How an input's values are drawn. Parameters that a distribution does not use stay at default.
struct InitSpec {
  std::string dist = "uniform";  // uniform normal kaiming_uniform fan_in_uniform randint choice ones zeros constant
  double low = 0.0, high = 1.0;  // uniform, randint (high exclusive)
  double mean = 0.0, std = 1.0;  // normal
  double a = 0.0;                // kaiming_uniform's negative slope (nn.Linear uses sqrt(5))
  std::string fan_in_of;         // fan_in_uniform: the input whose fan-in sets the bound 1/sqrt(fan_in)
  std::vector<double> values;    // choice
  double value = 0.0;            // constant
};

// The values an input may take for the reference to be defined ("domain": {"min": 0}, say, for
// an input of log): kevo's perturbed correctness trials stay inside it.
struct Domain {
  std::optional<double> min, max;
};

struct TensorDecl {
  std::string name;
  std::vector<Dim> shape;
  DType dtype = DType::Float32;
  InitSpec init;  // inputs only
  Domain domain;  // inputs only
  std::string description;
  Location loc;   // of the declaration
};

// A shape users run. `weight` says how often it occurs (the fitness weighs its time by it);
// a workload that is not `timed` is checked for correctness on every evaluation but never timed
// (a small shape that catches indexing bugs, too launch-bound to say which kernel is faster).
struct Workload {
  std::map<std::string, int64_t> axes;  // every var axis
  double weight = 1.0;                  // > 0
  bool timed = true;
  Location loc;
};

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

struct Task {
  std::string file;
  std::string name;
  std::string description;
  std::vector<Axis> axes;
  std::vector<TensorDecl> inputs;   // in contract order
  std::vector<TensorDecl> outputs;  // in contract order
  std::string reference;
  Location reference_loc;           // where the reference string starts in the file
  ref::Program program;
  std::vector<Workload> workloads;
  Tolerance tolerance;
  std::string notes;

  // Every axis's value in a workload (var axes from it, const axes from the contract).
  std::map<std::string, int64_t> axis_values(const Workload& w) const;
  // Concrete shape of an input or output for a workload.
  Shape shape_of(const TensorDecl& t, const Workload& w) const;
  std::vector<InputSpec> input_specs(const Workload& w) const;
  // The op graph of the reference for one workload. Validated at load, so this does not throw
  // for a loaded task's own workloads.
  Graph graph(const Workload& w) const;
  // Bytes that must move for one workload: each input read once, each output written once.
  int64_t bytes_moved(const Workload& w) const;
  // Whether workload i exists and is timed (a candidate's time on it counts in the fitness).
  bool is_timed(int i) const;
};

// Loads and validates a contract; throws InputError "FILE:LINE:COL: field: what is wrong".
Task load_task(const std::string& path);
// The whole file a user named (a contract, a checkpoint); InputError (one line) when it is a folder
// or cannot be read.
std::string read_input_file(const std::string& path);
// The same for a text already in memory (`file` names it in messages).
Task parse_task(const std::string& text, const std::string& file);

}  // namespace kevo
