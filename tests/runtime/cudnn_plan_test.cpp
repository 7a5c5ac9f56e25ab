// The cuDNN planner that kevo's worker and every exported header run, against a fake cuDNN (no GPU,
// no library): the descriptors of an NCHW fp32 convolution, the algorithm it chooses, the calls a
// step makes, and the call it names when one fails.
#include "runtime/kevo_export/cudnn_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kevo_export::cudnn {
namespace {

struct Fake {
  std::vector<std::vector<int>> tensors;  // format, type, n, c, h, w per cudnnSetTensor4dDescriptor
  std::vector<int> filter;                // type, format, k, c, h, w
  std::vector<int> conv;                  // pad, stride, dilation, mode, compute type
  int groups = 0, math = -1;
  std::vector<int> activation;  // mode, nan option
  double activation_coef = -1;
  std::vector<ForwardAlgoPerf> results;  // the heuristic's ranking
  std::vector<size_t> workspace;         // per algorithm id; SIZE_MAX: the query fails
  std::vector<std::string> calls;        // the step's calls, by name
  int forward_algo = -1;
  size_t forward_workspace_bytes = 0;
  int alive = 0;
  std::string fail;  // a call to fail with status 3 (CUDNN_STATUS_BAD_PARAM)
};
Fake* fake = nullptr;

template <typename T>
T* handle() {
  ++fake->alive;
  return reinterpret_cast<T*>(new char);
}
template <typename T>
Status destroy(T* p) {
  --fake->alive;
  delete reinterpret_cast<char*>(p);
  return kSuccess;
}
Status status_of(const char* call) { return fake->fail == call ? 3 : kSuccess; }

Api fake_api() {
  Api api{};
  api.set_stream = [](Handle, cudaStream_t) -> Status {
    fake->calls.push_back("set_stream");
    return status_of("cudnnSetStream");
  };
  api.tensor_create = [](TensorDesc* t) -> Status {
    *t = handle<cudnnTensorStruct>();
    return status_of("cudnnCreateTensorDescriptor");
  };
  api.tensor_set_4d = [](TensorDesc, int format, int type, int n, int c, int h, int w) -> Status {
    fake->tensors.push_back({format, type, n, c, h, w});
    return status_of("cudnnSetTensor4dDescriptor");
  };
  api.tensor_destroy = [](TensorDesc t) { return destroy(t); };
  api.filter_create = [](FilterDesc* f) -> Status {
    *f = handle<cudnnFilterStruct>();
    return kSuccess;
  };
  api.filter_set_4d = [](FilterDesc, int type, int format, int k, int c, int h, int w) -> Status {
    fake->filter = {type, format, k, c, h, w};
    return kSuccess;
  };
  api.filter_destroy = [](FilterDesc f) { return destroy(f); };
  api.conv_create = [](ConvDesc* c) -> Status {
    *c = handle<cudnnConvolutionStruct>();
    return kSuccess;
  };
  api.conv_set_2d = [](ConvDesc, int ph, int pw, int sh, int sw, int dh, int dw, int mode, int type) -> Status {
    fake->conv = {ph, pw, sh, sw, dh, dw, mode, type};
    return status_of("cudnnSetConvolution2dDescriptor");
  };
  api.conv_set_groups = [](ConvDesc, int groups) -> Status {
    fake->groups = groups;
    return kSuccess;
  };
  api.conv_set_math = [](ConvDesc, int math) -> Status {
    fake->math = math;
    return kSuccess;
  };
  api.conv_destroy = [](ConvDesc c) { return destroy(c); };
  api.forward_algorithms = [](Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int requested, int* returned,
                              ForwardAlgoPerf* results) -> Status {
    EXPECT_EQ(requested, kForwardAlgorithms);
    *returned = 0;
    for (const ForwardAlgoPerf& r : fake->results) results[(*returned)++] = r;
    return kSuccess;
  };
  api.forward_workspace = [](Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int algo, size_t* bytes) -> Status {
    *bytes = fake->workspace.at(static_cast<size_t>(algo));
    return *bytes == SIZE_MAX ? 3 : kSuccess;
  };
  api.forward = [](Handle, const void*, TensorDesc, const void*, FilterDesc, const void*, ConvDesc, int algo, void*,
                   size_t bytes, const void*, TensorDesc, void*) -> Status {
    fake->calls.push_back("forward");
    fake->forward_algo = algo;
    fake->forward_workspace_bytes = bytes;
    return status_of("cudnnConvolutionForward");
  };
  api.add_tensor = [](Handle, const void*, TensorDesc, const void*, const void*, TensorDesc, void*) -> Status {
    fake->calls.push_back("add_tensor");
    return kSuccess;
  };
  api.activation_create = [](ActivationDesc* a) -> Status {
    *a = handle<cudnnActivationStruct>();
    return kSuccess;
  };
  api.activation_set = [](ActivationDesc, int mode, int nan, double coef) -> Status {
    fake->activation = {mode, nan};
    fake->activation_coef = coef;
    return kSuccess;
  };
  api.activation_destroy = [](ActivationDesc a) { return destroy(a); };
  api.activation_forward = [](Handle, ActivationDesc, const void*, TensorDesc, const void*, const void*, TensorDesc,
                              void*) -> Status {
    fake->calls.push_back("activation");
    return kSuccess;
  };
  return api;
}

ForwardAlgoPerf perf(int algo, Status status, int math_type) { return ForwardAlgoPerf{algo, status, 0, 0, 0, math_type, {}}; }

class CudnnPlan : public ::testing::Test {
 protected:
  void SetUp() override { fake = &state; }
  void TearDown() override { fake = nullptr; }
  Fake state;
  const Api api = fake_api();
  const Handle h = reinterpret_cast<Handle>(uintptr_t{0x1});
  // conv2d(x[2,8,16,16], w[12,4,3,3]), stride 2, padding 1, dilation 1, groups 2: y[2,12,8,8].
  const Conv2dShape shape{{2, 8, 16, 16}, {12, 4, 3, 3}, {2, 12, 8, 8}, {2, 2}, {1, 1}, {1, 1}, 2, true};
};

constexpr size_t kWorkspace = size_t{32} << 20;

TEST_F(CudnnPlan, DescribesAnNchwFp32CrossCorrelationWithoutTensorCores) {
  state.results = {perf(1, kSuccess, kTensorOpMath), perf(2, 9, 0), perf(3, kSuccess, kTensorOpMathConversion),
                   perf(4, kSuccess, 0), perf(5, kSuccess, 0), perf(6, kSuccess, 0)};
  state.workspace = {0, 0, 0, 0, SIZE_MAX, kWorkspace + 1, 64};
  Plan p;
  ASSERT_TRUE(build(api, h, shape, true, kWorkspace, p).ok());
  EXPECT_EQ(p.algo, 6) << "the first fp32 algorithm whose workspace query succeeds and fits";
  ASSERT_EQ(state.tensors.size(), 3u);
  EXPECT_EQ(state.tensors[0], (std::vector<int>{kNchw, kFloat, 2, 8, 16, 16}));
  EXPECT_EQ(state.tensors[1], (std::vector<int>{kNchw, kFloat, 2, 12, 8, 8}));
  EXPECT_EQ(state.tensors[2], (std::vector<int>{kNchw, kFloat, 1, 12, 1, 1})) << "the bias, broadcast over N, H, W";
  EXPECT_EQ(state.filter, (std::vector<int>{kFloat, kNchw, 12, 4, 3, 3}));
  EXPECT_EQ(state.conv, (std::vector<int>{1, 1, 2, 2, 1, 1, kCrossCorrelation, kFloat}));
  EXPECT_EQ(state.groups, 2);
  EXPECT_EQ(state.math, kFmaMath) << "no TF32";
  EXPECT_EQ(state.activation, (std::vector<int>{kRelu, kPropagateNan}));
  EXPECT_EQ(state.activation_coef, 0.0);

  float x = 0, w = 0, y = 0, bias = 0;
  ASSERT_TRUE(run(api, h, p, &x, &w, &y, &bias, nullptr, kWorkspace, nullptr).ok());
  EXPECT_EQ(state.calls, (std::vector<std::string>{"set_stream", "forward", "add_tensor", "activation"}));
  EXPECT_EQ(state.forward_algo, 6);
  EXPECT_EQ(state.forward_workspace_bytes, kWorkspace);
  release(api, p);
  EXPECT_EQ(state.alive, 0);
}

TEST_F(CudnnPlan, WithoutBiasOrReluThereAreNoSuchDescriptorsOrCalls) {
  Conv2dShape plain = shape;
  plain.relu = false;
  state.results = {perf(0, kSuccess, 0)};
  state.workspace = {0};
  Plan p;
  ASSERT_TRUE(build(api, h, plain, false, kWorkspace, p).ok());
  EXPECT_EQ(state.tensors.size(), 2u);
  EXPECT_TRUE(state.activation.empty());
  EXPECT_EQ(p.bias, nullptr);
  EXPECT_EQ(p.relu, nullptr);
  float x = 0, w = 0, y = 0;
  ASSERT_TRUE(run(api, h, p, &x, &w, &y, nullptr, nullptr, kWorkspace, nullptr).ok());
  EXPECT_EQ(state.calls, (std::vector<std::string>{"set_stream", "forward"}));
  EXPECT_FALSE(same(plain, shape));
  release(api, p);
}

TEST_F(CudnnPlan, NoFittingAlgorithmIsNoneAndAFailedCallIsNamed) {
  state.results = {perf(0, kSuccess, kTensorOpMath), perf(1, kSuccess, 0)};
  state.workspace = {0, kWorkspace + 1};
  Plan none;
  EXPECT_TRUE(build(api, h, shape, false, kWorkspace, none).ok());
  EXPECT_EQ(none.algo, -1);
  release(api, none);

  state.fail = "cudnnSetConvolution2dDescriptor";
  state.groups = 0;
  Plan bad;
  const Outcome o = build(api, h, shape, false, kWorkspace, bad);
  EXPECT_STREQ(o.call, "cudnnSetConvolution2dDescriptor");
  EXPECT_EQ(o.status, 3);
  EXPECT_EQ(state.groups, 0) << "nothing is called after a failure";
  release(api, bad);
  EXPECT_EQ(state.alive, 0);

  state.fail.clear();
  Plan p;
  ASSERT_TRUE(build(api, h, shape, true, size_t{1} << 40, p).ok());
  EXPECT_EQ(p.algo, 1) << "fits the larger workspace";
  state.fail = "cudnnConvolutionForward";
  float x = 0, w = 0, y = 0, bias = 0;
  const Outcome r = run(api, h, p, &x, &w, &y, &bias, nullptr, kWorkspace, nullptr);
  EXPECT_STREQ(r.call, "cudnnConvolutionForward");
  EXPECT_EQ(state.calls, (std::vector<std::string>{"set_stream", "forward"})) << "no bias or ReLU after it";
  release(api, p);
}

}  // namespace
}  // namespace kevo_export::cudnn
