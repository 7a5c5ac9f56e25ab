// CUBIN loading and plan launches: kernel arguments packed by the plan's declared types, library steps handed on.
#include "eval/kernel_launch.h"

#include <stdexcept>

#include "core/tensor_map.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/library_steps.h"

namespace kevo::eval {

namespace {

const CudaApi& api() {
  const CudaApi* a = cuda_api();
  if (!a) throw std::runtime_error(cuda_driver_status().error);
  return *a;
}

LibrarySteps& library(LibrarySteps* libs) {
  if (!libs) throw std::runtime_error("library steps (cuBLASLt, cuDNN) need a LibrarySteps, and launch_plan got none");
  return *libs;
}

// One kernel parameter's bytes, kept alive until the launch has copied them. A tensor map is a
// 128-byte, 64-byte-aligned parameter, passed by value.
struct ArgSlot {
  union {
    CUdeviceptr ptr;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    CUtensorMap map;
  };
};

// The TMA descriptor of a resolved tensor-map argument over the buffer at `base`: zero fill past
// the tensor's edges (so partial tiles read zeros), no interleave, 256-byte L2 promotion.
CUtensorMap encode_tensor_map(const ResolvedTensorMap& t, CUdeviceptr base) {
  static const CUtensorMapSwizzle swizzles[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                                CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};
  const int sw = t.swizzle == 0 ? 0 : t.swizzle == 32 ? 1 : t.swizzle == 64 ? 2 : 3;
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMap map;
  check_cuda(api().cuTensorMapEncodeTiled(&map, static_cast<CUtensorMapDataType>(tensor_map_data_type(t.dtype)),
                                          static_cast<cuuint32_t>(t.rank), reinterpret_cast<void*>(base),
                                          t.dims.data(), t.stride_bytes.data(), t.box.data(), element_strides,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, swizzles[sw],
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             "cuTensorMapEncodeTiled");
  return map;
}

}  // namespace

LoadedModule::LoadedModule(const BuildResult& built) {
  if (built.status != BuildStatus::Ok) throw std::runtime_error("the candidate did not build: " + built.error);
  check_cuda(api().cuModuleLoadData(&module_, built.cubin.data()), "cuModuleLoadData");
  for (const auto& [expr, lowered] : built.lowered_names) {
    CUfunction f;
    CUresult r = api().cuModuleGetFunction(&f, module_, lowered.c_str());
    if (r != CUDA_SUCCESS) {
      api().cuModuleUnload(module_);
      throw std::runtime_error("kernel '" + expr + "' (" + lowered + ") is not in the CUBIN: " + cuda_error_text(r));
    }
    functions_[expr] = f;
  }
}

LoadedModule::~LoadedModule() {
  if (module_) api().cuModuleUnload(module_);
}

CUfunction LoadedModule::function(const std::string& name_expression) const {
  auto it = functions_.find(name_expression);
  if (it == functions_.end()) throw std::runtime_error("kernel '" + name_expression + "' was not built");
  return it->second;
}

void launch_plan(const LoadedModule& module, const ResolvedPlan& plan, const std::vector<CUdeviceptr>& buffers,
                 CUstream stream, LibrarySteps* libs) {
  if (buffers.size() != plan.buffers.size())
    throw std::invalid_argument("launch_plan: " + std::to_string(buffers.size()) + " buffers for a plan of " +
                                std::to_string(plan.buffers.size()));
  for (const ResolvedStep& step : plan.steps) {
    if (const auto* m = std::get_if<ResolvedMatmul>(&step)) {
      library(libs).launch(*m, plan, buffers, stream);
      continue;
    }
    if (const auto* c = std::get_if<ResolvedConv2d>(&step)) {
      library(libs).launch(*c, plan, buffers, stream);
      continue;
    }
    const auto* k = &std::get<ResolvedKernel>(step);
    CUfunction f = module.function(k->kernel);
    if (k->shared_bytes > 48 * 1024)
      check_cuda(api().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          static_cast<int>(k->shared_bytes)),
                 "cuFuncSetAttribute(max dynamic shared memory)");
    std::vector<ArgSlot> slots(k->args.size());
    std::vector<void*> params(k->args.size());
    for (size_t i = 0; i < k->args.size(); ++i) {
      const ResolvedArg& a = k->args[i];
      switch (a.kind) {
        case ArgKind::Buffer: slots[i].ptr = buffers.at(static_cast<size_t>(a.buffer)); break;
        case ArgKind::Int32: slots[i].i32 = static_cast<int32_t>(a.integer); break;
        case ArgKind::Int64: slots[i].i64 = a.integer; break;
        case ArgKind::Float32: slots[i].f32 = static_cast<float>(a.real); break;
        case ArgKind::Float64: slots[i].f64 = a.real; break;
        case ArgKind::TensorMap: slots[i].map = encode_tensor_map(a.tensor_map, buffers.at(static_cast<size_t>(a.buffer))); break;
      }
      params[i] = &slots[i];
    }
    check_cuda(api().cuLaunchKernel(f, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
                                    k->shared_bytes, stream, params.empty() ? nullptr : params.data(), nullptr),
               ("cuLaunchKernel(" + k->kernel + ")").c_str());
  }
}

}  // namespace kevo::eval
