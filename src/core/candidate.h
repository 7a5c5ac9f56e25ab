// Candidates: CUDA device source plus a declarative launch plan; parsing, validation, resolution.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/axis_expr.h"
#include "core/task.h"

namespace kevo {

// What the target GPU allows. Defaults are sm_90's and sm_100's; the runner fills in the real device's.
struct DeviceLimits {
  int64_t max_threads_per_block = 1024;
  std::array<int64_t, 3> max_block = {1024, 1024, 64};
  std::array<int64_t, 3> max_grid = {2147483647, 65535, 65535};
  int64_t max_shared_bytes = 232448;  // dynamic shared memory per block, opt-in maximum (227 KiB)
  int64_t num_sms = 132;              // plan expressions may use it as `num_sms` (persistent grids)
  // The GPU's architecture ("sm_90a", "sm_100a"): plans asking for what it lacks (cuBLASLt's fp32
  // emulation off sm_100a/sm_103a) are refused. Empty: not known, nothing refused for it.
  std::string arch;
};

// The name plan expressions use for the GPU's SM count (a task axis of that name takes precedence).
inline constexpr const char* kNumSms = "num_sms";

// Where a plan element was written, so that errors found for one workload can point at it.
struct Origin {
  Location loc;
  std::string field;  // "plan.steps[0].grid[1]"
};

// A size in a plan: an axis expression, or an integer literal held as one.
struct PlanExpr {
  AxisExpr expr;
  Origin at;
};

struct ScratchBuffer {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<PlanExpr> shape;
  Origin at;
};

enum class ArgKind { Buffer, Int32, Int64, Float32, Float64, TensorMap };

// A TMA descriptor over a buffer (core/tensor_map.h): the evaluator and the export launcher build
// it with cuTensorMapEncodeTiled and pass it by value, a 128-byte kernel parameter that the
// kernel declares `const __grid_constant__`. Candidates carry no host code; this is how a kernel
// gets a tensor map.
struct TensorMapArg {
  std::string buffer;
  std::vector<PlanExpr> dims;     // innermost (contiguous) first, 1 to 5
  std::vector<PlanExpr> strides;  // elements from one index of dims[1..] to the next; empty: packed
  std::vector<int64_t> box;       // elements one copy moves along each dim, 1 to 256
  int swizzle = 0;                // shared memory swizzle, bytes: 0 (none), 32, 64 or 128
};

struct KernelArg {
  ArgKind kind = ArgKind::Buffer;
  std::string buffer;       // Buffer: passed as a device pointer
  PlanExpr value;           // Int32, Int64
  double real = 0.0;        // Float32, Float64
  TensorMapArg tensor_map;  // TensorMap
  Origin at;                // where the argument was written
};

struct KernelStep {
  std::string kernel;                 // a name expression: "softmax_rows<256>", "ns::k<float>"
  std::vector<PlanExpr> grid, block;  // 1 to 3 entries each
  PlanExpr shared_bytes;              // dynamic shared memory
  std::vector<KernelArg> args;
};

enum class Epilogue { None, Relu, Gelu, Bias, BiasRelu, BiasGelu };
std::string epilogue_name(Epilogue e);  // "bias_relu"

// cuBLASLt's fp32 emulation (CUDA 13): each fp32 operand split into three bf16 parts whose nine
// products run on the bf16 tensor cores (bf16x9, CUBLAS_COMPUTE_32F_EMULATED_16BFX9), as accurate
// as fp32. Off is plain fp32 (CUBLAS_COMPUTE_32F). The strategies are cuBLAS's
// (cublasEmulationStrategy_t, same values): Performant emulates where cuBLAS expects it to be
// faster, Eager wherever it can. Only sm_100a and sm_103a (B200, B300) emulate.
enum class Emulation { Off = 0, Performant = 1, Eager = 2 };
std::string emulation_name(Emulation e);  // "off", "performant", "eager"
// Whether an architecture ("sm_100a") runs emulated matmuls: sm_100a and sm_103a.
bool emulation_runs_on(const std::string& arch);

// "cublaslt.matmul" on row-major fp32: d[M,N] = epilogue(alpha * op(a)[M,K] @ op(b)[K,N] (+ bias[N])).
// As in cuBLASLt, the bias is added after the alpha scaling.
struct MatmulStep {
  std::string a, b, d, bias;  // bias is set exactly when the epilogue adds one
  bool transpose_a = false, transpose_b = false;
  double alpha = 1.0;
  Epilogue epilogue = Epilogue::None;
  // An index into the list cuBLASLt's heuristic returns for the problem (0: its first choice), or
  // kAutotunedAlgo (the plan's "algo": "auto"): the fastest of the heuristic's first 8, timed on
  // the step's own buffers at the first launch of each distinct problem.
  int64_t algo = 0;
  Emulation emulation = Emulation::Off;
};

inline constexpr int64_t kAutotunedAlgo = -1;

// Whether a cuBLASLt step with operands of these ranks is a strided batch of products: b, or a
// transposed a, has leading dims (each operand then a matrix or a batch of the output's leading
// dims). An untransposed a with leading dims times a matrix b is one product of all a's rows.
inline bool strided_batch(size_t rank_a, size_t rank_b, bool transpose_a) {
  return rank_b > 2 || (transpose_a && rank_a > 2);
}

// "cudnn.conv2d_forward" on NCHW fp32: y = epilogue(conv2d(x, w) (+ bias[K])); epilogue None or Relu.
struct Conv2dStep {
  std::string x, w, y, bias;  // bias optional
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  Epilogue epilogue = Epilogue::None;
};

struct Step {
  std::variant<KernelStep, MatmulStep, Conv2dStep> op;
  Origin at;
};

struct Plan {
  std::vector<ScratchBuffer> buffers;  // scratch only: the task's inputs and outputs need no declaration
  std::vector<Step> steps;             // run in order on one stream
};

struct Candidate {
  std::string file;         // the file it was loaded from
  std::string name;         // its "name", else the file's stem
  std::string source;       // CUDA C++ device code
  std::string source_file;  // the file whose text `source` is; empty for an inline "source"
  Plan plan;

  // Distinct kernel name expressions in order of first use: what the builder asks NVRTC to lower.
  std::vector<std::string> kernel_names() const;
};

// ---- one workload's concrete plan: every expression evaluated, every limit checked ----------

struct ResolvedBuffer {
  enum Role { Input, Output, Scratch } role = Input;
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  int64_t bytes = 0;
};

// A tensor map's values for one workload, checked against its buffer (core/tensor_map.cpp).
struct ResolvedTensorMap {
  DType dtype = DType::Float32;
  int rank = 0;
  std::array<uint64_t, 5> dims{};           // elements, innermost first
  std::array<uint64_t, 4> stride_bytes{};   // of dims 1..rank-1
  std::array<uint32_t, 5> box{};
  int swizzle = 0;                          // bytes
};

struct ResolvedArg {
  ArgKind kind = ArgKind::Buffer;
  int buffer = -1;                 // Buffer, TensorMap: index into ResolvedPlan::buffers
  int64_t integer = 0;             // Int32 (range checked), Int64
  double real = 0.0;               // Float32, Float64
  ResolvedTensorMap tensor_map;    // TensorMap
};

struct ResolvedKernel {
  std::string kernel;
  std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
  unsigned shared_bytes = 0;
  std::vector<ResolvedArg> args;
};

struct ResolvedMatmul {
  MatmulStep call;
  int a = -1, b = -1, d = -1, bias = -1;  // buffer indices
  int64_t m = 0, n = 0, k = 0;
  // A strided batch of products (b, or a transposed a, of rank 3 or more): how many, and the
  // elements between consecutive products' a and b (0: one matrix for all); d's are m * n apart.
  int64_t batch = 1, stride_a = 0, stride_b = 0;
};

struct ResolvedConv2d {
  Conv2dStep call;
  int x = -1, w = -1, y = -1, bias = -1;  // buffer indices; shapes are the buffers'
};

using ResolvedStep = std::variant<ResolvedKernel, ResolvedMatmul, ResolvedConv2d>;

struct ResolvedPlan {
  std::vector<ResolvedBuffer> buffers;  // the task's inputs, its outputs (contract order), then scratch
  std::vector<ResolvedStep> steps;      // one per plan step, same order

  int buffer(const std::string& name) const;  // index, or -1
};

// Parses a candidate (".cu"/".cuh" files carry an embedded plan; anything else is JSON), checks
// it against the task and resolves every workload of the task once, so that every error surfaces
// here. Throws InputError "FILE:LINE:COL: field: what is wrong".
Candidate parse_candidate(const std::string& text, const std::string& file, const Task& task,
                          const DeviceLimits& limits = {});
Candidate load_candidate(const std::string& path, const Task& task, const DeviceLimits& limits = {});

// The plan for one workload; errors name the workload ("(workload 1)").
ResolvedPlan resolve_plan(const Candidate& c, const Task& task, const Workload& w, const DeviceLimits& limits);

}  // namespace kevo
