// Lowers a parsed reference program to an op graph for concrete input shapes and dtypes.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/reference_ast.h"

namespace kevo {

struct InputSpec {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
};

// One graph per workload: shapes are concrete. `inputs` are matched to run()'s parameters by
// name. Throws ReferenceError (line, column in the reference) for anything the program does
// wrong: unknown names or ops, bad arguments, shapes that do not fit.
Graph lower_reference(const ref::Program& program, const std::vector<InputSpec>& inputs);

}  // namespace kevo
