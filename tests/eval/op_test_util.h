// Test helpers: run a reference text through parser, lowering and LibTorch execution.
#pragma once

#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/interpreter.h"
#include "core/reference_parser.h"
#include "eval/torch_graph.h"

namespace kevo::testing {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

inline Graph lower_for(const std::string& reference, const NamedTensors& inputs) {
  std::vector<InputSpec> specs;
  for (const auto& [name, t] : inputs)
    specs.push_back({name, eval::from_torch(t.scalar_type()), Shape(t.sizes().begin(), t.sizes().end())});
  return lower_reference(ref::parse_reference(reference), specs);
}

// Parses, lowers and runs `reference` on `inputs` (given in run()'s parameter order).
inline std::vector<torch::Tensor> run_reference(const std::string& reference, const NamedTensors& inputs) {
  Graph g = lower_for(reference, inputs);
  std::vector<torch::Tensor> ts;
  for (int id : g.inputs)
    for (const auto& [name, t] : inputs)
      if (name == g.values[id].name) ts.push_back(t);
  return eval::run_graph(g, ts);
}

// Asserts the interpreted reference equals `expected` (same dtype and shape, values close).
inline void expect_same(const torch::Tensor& got, const torch::Tensor& expected, double atol = 1e-6,
                        double rtol = 1e-5) {
  ASSERT_EQ(got.scalar_type(), expected.scalar_type());
  ASSERT_EQ(got.sizes(), expected.sizes());
  if (got.is_floating_point()) {
    EXPECT_TRUE(torch::allclose(got, expected, rtol, atol, /*equal_nan=*/true))
        << "max abs diff " << (got - expected).abs().max().item<double>();
  } else {
    EXPECT_TRUE(torch::equal(got, expected));
  }
}

// Asserts lowering `reference` fails at line:col with a message containing `needle`.
inline void expect_reference_error(const std::string& reference, const NamedTensors& inputs, int line, int col,
                                   const std::string& needle) {
  try {
    lower_for(reference, inputs);
    ADD_FAILURE() << "no error for:\n" << reference;
  } catch (const ReferenceError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.col(), col) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// `def run(<the inputs' names>):` with `body` as its indented line 2.
inline std::string program(const std::string& body, const NamedTensors& in) {
  std::string params;
  for (const auto& [name, t] : in) params += (params.empty() ? "" : ", ") + name;
  return "def run(" + params + "):\n    " + body + "\n";
}

// program() whose body is `return EXPR`; EXPR's first character is on line 2, column 12.
inline std::string returning(const std::string& expr, const NamedTensors& in) { return program("return " + expr, in); }

// The last node lowering `return EXPR` adds: the one of its outermost op.
inline Node lowered(const std::string& expr, const NamedTensors& in) { return lower_for(returning(expr, in), in).nodes.back(); }

// Runs `return EXPR` and compares every returned tensor with `expected` (expect_same's tolerances).
inline void expect_returns(const std::string& expr, const NamedTensors& in, const std::vector<torch::Tensor>& expected,
                           double atol = 1e-6, double rtol = 1e-5) {
  SCOPED_TRACE(expr);
  std::vector<torch::Tensor> got = run_reference(returning(expr, in), in);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) expect_same(got[k], expected[k], atol, rtol);
}

// expect_returns for an EXPR that returns one tensor.
inline void expect_returns(const std::string& expr, const NamedTensors& in, const torch::Tensor& expected,
                           double atol = 1e-6, double rtol = 1e-5) {
  expect_returns(expr, in, std::vector<torch::Tensor>{expected}, atol, rtol);
}

// The floating inputs rounded to `dtype`; integer and bool inputs as they are.
inline NamedTensors rounded_to(const NamedTensors& in, torch::ScalarType dtype) {
  NamedTensors out;
  for (const auto& [name, t] : in) out.push_back({name, t.is_floating_point() ? t.to(dtype) : t});
  return out;
}

// Runs `return EXPR` on the inputs rounded to float16 and to bfloat16 and compares every output
// with the float32 run on the same rounded values, rounded once: what a kernel computing in float32
// gives. On the CPU every half node runs in float32 and rounds once (torch_graph.cpp), so the
// tolerances cover only the rounding between the ops of a longer EXPR; callers check the float32
// run against LibTorch separately.
inline void expect_half_precision_matches(const std::string& expr, const NamedTensors& in, double tol16 = 5e-3,
                                          double tol_bf16 = 3e-2) {
  for (torch::ScalarType dtype : {torch::kFloat16, torch::kBFloat16}) {
    SCOPED_TRACE(expr + std::string(" in ") + c10::toString(dtype));
    NamedTensors half = rounded_to(in, dtype), wide = rounded_to(half, torch::kFloat32);
    std::vector<torch::Tensor> got = run_reference(returning(expr, half), half);
    std::vector<torch::Tensor> want = run_reference(returning(expr, wide), wide);
    ASSERT_EQ(got.size(), want.size());
    double tol = dtype == torch::kFloat16 ? tol16 : tol_bf16;
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].scalar_type(), dtype);
      expect_same(got[k].to(torch::kFloat32), want[k].to(dtype).to(torch::kFloat32), tol, tol);
    }
  }
}

// Expects lowering `return EXPR` to fail on line 2 at the first `marker` in EXPR, with a message containing `needle`.
inline void expect_error_at(const std::string& expr, const NamedTensors& in, const std::string& marker,
                            const std::string& needle) {
  size_t at = expr.find(marker);
  ASSERT_NE(at, std::string::npos) << marker;
  expect_reference_error(returning(expr, in), in, 2, static_cast<int>(at) + 12, needle);
}

// One expected error: `expr` fails at the first `marker` in it, with a message containing `needle`.
struct ErrorCase {
  std::string expr, marker, needle;
};

// expect_error_at for each case, all on the same inputs.
inline void expect_errors_at(const NamedTensors& in, const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.expr);
    expect_error_at(c.expr, in, c.marker, c.needle);
  }
}

}  // namespace kevo::testing
