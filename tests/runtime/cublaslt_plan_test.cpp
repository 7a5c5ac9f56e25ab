// The cuBLASLt planner that kevo's worker and every exported header run, against a fake cuBLASLt
// and fake CUDA events (no GPU, no library): the descriptors it makes for a row-major problem, the
// algorithms it keeps, the one autotuning picks, and what it says when a call fails.
#include "runtime/kevo_export/cublaslt_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace kevo_export::cublaslt {
namespace {

struct Layout {
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;   // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, where set
  int64_t stride = 0;  // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, where set
};

struct Matmul {
  float alpha;
  const void *A, *B;
  cublasLtMatrixLayout_t Adesc, Bdesc, Ddesc;
  uint64_t algo;
};

// What the fake libraries were asked, and what they answer.
struct Fake {
  std::map<int, std::vector<uint8_t>> desc;  // attribute -> bytes
  std::vector<Layout> layouts;               // in creation order
  std::vector<cublasLtMatrixLayout_t> layout_handles;
  std::map<int, uint64_t> pref;  // attribute -> value
  cublasLtMatrixLayout_t heuristic_layouts[4] = {};
  int requested = 0;
  std::vector<cublasLtMatmulHeuristicResult_t> results;  // the heuristic's answer
  cublasStatus_t heuristic_status = CUBLAS_STATUS_SUCCESS;
  cublasStatus_t layout_set_status = CUBLAS_STATUS_SUCCESS;  // what layout_set answers a legal attribute
  std::vector<Matmul> matmuls;
  std::map<uint64_t, std::vector<float>> run_ms;  // algorithm id -> duration of each run, in turn
  std::map<uint64_t, size_t> runs;
  float clock_ms = 0;
  std::map<cudaEvent_t, float> recorded;
  int events_created = 0, events_destroyed = 0, descriptors_alive = 0;
  int fail_event_record_after = -1;  // fail the n-th cudaEventRecord (0-based)
  int event_records = 0;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // what desc_create must be asked for
  std::map<int, int32_t> emulation;                  // emulation descriptor attribute -> value
};
Fake* fake = nullptr;

cudaEvent_t event_handle(int i) { return reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(0x100 + i)); }

cublasStatus_t desc_create(cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
  *d = new cublasLtMatmulDescOpaque_t{};
  ++fake->descriptors_alive;
  EXPECT_EQ(compute, fake->compute) << "plain fp32, never TF32 (or the bf16x9 emulation where asked)";
  EXPECT_EQ(scale, CUDA_R_32F);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t desc_destroy(cublasLtMatmulDesc_t d) {
  delete d;
  --fake->descriptors_alive;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t desc_set(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t attr, const void* value, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(value);
  fake->desc[attr] = std::vector<uint8_t>(p, p + bytes);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t layout_create(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  EXPECT_EQ(type, CUDA_R_32F);
  *l = new cublasLtMatrixLayoutOpaque_t{};
  ++fake->descriptors_alive;
  fake->layouts.push_back({rows, cols, ld});
  fake->layout_handles.push_back(*l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t layout_destroy(cublasLtMatrixLayout_t l) {
  delete l;
  --fake->descriptors_alive;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t layout_set(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, const void* value,
                          size_t bytes) {
  size_t i = 0;
  while (i < fake->layout_handles.size() && fake->layout_handles[i] != l) ++i;
  EXPECT_LT(i, fake->layouts.size()) << "a layout the planner made";
  if (i == fake->layouts.size()) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && bytes == sizeof(int32_t))
    std::memcpy(&fake->layouts[i].batch, value, bytes);
  else if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && bytes == sizeof(int64_t))
    std::memcpy(&fake->layouts[i].stride, value, bytes);
  else
    return CUBLAS_STATUS_INVALID_VALUE;  // an attribute, or a size, the planner must not set
  return fake->layout_set_status;
}
cublasStatus_t pref_create(cublasLtMatmulPreference_t* p) {
  *p = new cublasLtMatmulPreferenceOpaque_t{};
  ++fake->descriptors_alive;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t pref_destroy(cublasLtMatmulPreference_t p) {
  delete p;
  --fake->descriptors_alive;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t pref_set(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t attr, const void* value,
                        size_t bytes) {
  uint64_t v = 0;
  if (bytes == 8) v = *static_cast<const uint64_t*>(value);
  if (bytes == 4) v = *static_cast<const uint32_t*>(value);
  fake->pref[attr] = v;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                         cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t, int requested,
                         cublasLtMatmulHeuristicResult_t results[], int* found) {
  fake->heuristic_layouts[0] = a;
  fake->heuristic_layouts[1] = b;
  fake->heuristic_layouts[2] = c;
  fake->heuristic_layouts[3] = d;
  fake->requested = requested;
  *found = 0;
  for (const auto& r : fake->results)
    if (*found < requested) results[(*found)++] = r;
  return fake->heuristic_status;
}
cublasStatus_t matmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void* alpha, const void* A,
                      cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void*,
                      const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t Ddesc,
                      const cublasLtMatmulAlgo_t* algo, void*, size_t, cudaStream_t) {
  const uint64_t id = algo->data[0];
  fake->matmuls.push_back({*static_cast<const float*>(alpha), A, B, Adesc, Bdesc, Ddesc, id});
  auto times = fake->run_ms.find(id);
  if (times == fake->run_ms.end()) return CUBLAS_STATUS_NOT_SUPPORTED;  // refuses to launch
  size_t& n = fake->runs[id];
  fake->clock_ms += times->second[n++ % times->second.size()];
  return CUBLAS_STATUS_SUCCESS;
}

int event_create(cudaEvent_t* e) {
  *e = event_handle(fake->events_created++);
  return 0;
}
int event_destroy(cudaEvent_t) {
  ++fake->events_destroyed;
  return 0;
}
int event_record(cudaEvent_t e, cudaStream_t) {
  if (fake->event_records++ == fake->fail_event_record_after) return 700;  // an illegal address, say
  fake->recorded[e] = fake->clock_ms;
  return 0;
}
int event_elapsed_ms(float* ms, cudaEvent_t from, cudaEvent_t to) {
  *ms = fake->recorded.at(to) - fake->recorded.at(from);
  return 0;
}
int stream_synchronize(cudaStream_t) { return 0; }

#if KEVO_EXPORT_CUBLASLT_EMULATION
cublasStatus_t emulation_create(cublasLtEmulationDesc_t* e) {
  *e = new cublasLtEmulationDescOpaque_t{};
  ++fake->descriptors_alive;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t emulation_destroy(cublasLtEmulationDesc_t e) {
  delete e;
  --fake->descriptors_alive;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t emulation_set(cublasLtEmulationDesc_t, cublasLtEmulationDescAttributes_t attr, const void* value,
                             size_t bytes) {
  EXPECT_EQ(bytes, sizeof(int32_t));
  fake->emulation[attr] = *static_cast<const int32_t*>(value);
  return CUBLAS_STATUS_SUCCESS;
}
#endif

Api fake_api() {
  return Api{&desc_create,  &desc_destroy,  &desc_set,     &layout_create,    &layout_destroy,     &layout_set,
             &pref_create,  &pref_destroy,  &pref_set,     &heuristic,        &matmul,
             &event_create, &event_destroy, &event_record, &event_elapsed_ms, &stream_synchronize
#if KEVO_EXPORT_CUBLASLT_EMULATION
             ,
             nullptr,  // no emulation entry points: a cuBLASLt before 13 (the emulation test adds them)
             nullptr,
             nullptr
#endif
  };
}

cublasLtMatmulHeuristicResult_t result(uint64_t id, size_t workspace, cublasStatus_t state = CUBLAS_STATUS_SUCCESS) {
  cublasLtMatmulHeuristicResult_t r{};
  r.algo.data[0] = id;
  r.workspaceSize = workspace;
  r.state = state;
  return r;
}

template <typename T>
T desc_value(cublasLtMatmulDescAttributes_t attr) {
  const std::vector<uint8_t>& bytes = fake->desc.at(attr);
  EXPECT_EQ(bytes.size(), sizeof(T));
  T v{};
  std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}

class CublasLtPlan : public ::testing::Test {
 protected:
  void SetUp() override { fake = &state; }
  void TearDown() override { fake = nullptr; }
  Fake state;
  const Api api = fake_api();
  const cublasLtHandle_t handle = reinterpret_cast<cublasLtHandle_t>(uintptr_t{0x1});
};

constexpr size_t kWorkspace = size_t{32} << 20;

TEST_F(CublasLtPlan, DescribesARowMajorProblemAsCublasLtsTransposedOne) {
  // d[16,128] = a[16,256] @ b[128,256]^T + bias: task 13's linear layer.
  const MatmulShape s{16, 128, 256, false, true, 2.0f, CUBLASLT_EPILOGUE_BIAS, 0};
  const Key key = key_of(s, 0x7f0000001000, 0x7f0000002010, 0x7f0000003000);
  EXPECT_EQ(key.align_a, 256u);
  EXPECT_EQ(key.align_b, 16u);
  EXPECT_EQ(key.align_d, 256u);
  state.results = {result(11, 0), result(12, 1024)};
  Plan p;
  ASSERT_TRUE(build(api, handle, key, kWorkspace, p).ok());
  // cuBLASLt's A is our b (transposed), its B our a.
  EXPECT_EQ(desc_value<cublasOperation_t>(CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_T);
  EXPECT_EQ(desc_value<cublasOperation_t>(CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_N);
  EXPECT_EQ(desc_value<cublasLtEpilogue_t>(CUBLASLT_MATMUL_DESC_EPILOGUE), CUBLASLT_EPILOGUE_BIAS);
  // Row-major [rows, cols] is column-major [cols, rows] with ld = cols: a [16,256], b [128,256], d [16,128].
  ASSERT_EQ(state.layouts.size(), 3u);
  EXPECT_EQ(state.layouts[0].rows, 256u);
  EXPECT_EQ(state.layouts[0].cols, 16u);
  EXPECT_EQ(state.layouts[0].ld, 256);
  EXPECT_EQ(state.layouts[1].rows, 256u);
  EXPECT_EQ(state.layouts[1].cols, 128u);
  EXPECT_EQ(state.layouts[1].ld, 256);
  EXPECT_EQ(state.layouts[2].rows, 128u);
  EXPECT_EQ(state.layouts[2].cols, 16u);
  EXPECT_EQ(state.layouts[2].ld, 128);
  for (const Layout& l : state.layouts) EXPECT_EQ(l.batch, 1) << "one product: no batch attributes";
  EXPECT_EQ(state.heuristic_layouts[0], p.b);
  EXPECT_EQ(state.heuristic_layouts[1], p.a);
  EXPECT_EQ(state.heuristic_layouts[2], p.d);
  EXPECT_EQ(state.heuristic_layouts[3], p.d);
  EXPECT_EQ(state.requested, kMaxAlgorithms);
  EXPECT_EQ(state.pref[CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES], kWorkspace);
  EXPECT_EQ(state.pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], 16u) << "cuBLASLt's A is our b";
  EXPECT_EQ(state.pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES], 256u);
  EXPECT_EQ(state.pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES], 256u);
  EXPECT_EQ(state.pref[CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES], 256u);
  EXPECT_EQ(p.usable, 2);

  // A call passes its own alpha, and our b as cuBLASLt's A.
  const float a = 0, b = 0;
  float d = 0;
  ASSERT_EQ(run(api, handle, p, 1, 0.5f, &a, &b, &d, nullptr, kWorkspace, nullptr), CUBLAS_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(state.matmuls.size(), 1u);
  EXPECT_EQ(state.matmuls[0].alpha, 0.5f);
  EXPECT_EQ(state.matmuls[0].A, &b);
  EXPECT_EQ(state.matmuls[0].B, &a);
  EXPECT_EQ(state.matmuls[0].Adesc, p.b);
  EXPECT_EQ(state.matmuls[0].algo, 12u);
  EXPECT_EQ(run(api, handle, p, 2, 1.0f, &a, &b, &d, nullptr, kWorkspace, nullptr), CUBLAS_STATUS_INVALID_VALUE);

  const void* bias = &d;
  ASSERT_TRUE(set_bias(api, p, bias).ok());
  EXPECT_EQ(desc_value<const void*>(CUBLASLT_MATMUL_DESC_BIAS_POINTER), bias);
  release(api, p);
  EXPECT_EQ(state.descriptors_alive, 0) << "the preference and every descriptor are destroyed";
}

// torch.bmm(a[12,32,64], b[12,64,48]): each layout is a strided batch of 12, a and b a matrix
// apart, d m*n apart. A b broadcast to every product (stride 0) keeps a's batch. The alignments
// the heuristic assumes are those every product's operands have: a stride of 5 floats (20 bytes)
// leaves 4.
TEST_F(CublasLtPlan, AStridedBatchSetsEveryLayoutsCountAndStride) {
  MatmulShape s{32, 48, 64, false, false, 1.0f, CUBLASLT_EPILOGUE_DEFAULT, 0};
  s.batch = 12, s.stride_a = 32 * 64, s.stride_b = 0;
  const Key key = key_of(s, 0x1000, 0x2000, 0x3000);
  EXPECT_EQ(key.align_a, 256u);
  EXPECT_EQ(key.align_b, 256u) << "b, broadcast, is the same matrix for every product";
  EXPECT_EQ(key.align_d, 256u);  // 32 * 48 floats apart
  state.results = {result(11, 0)};
  Plan p;
  ASSERT_TRUE(build(api, handle, key, kWorkspace, p).ok());
  ASSERT_EQ(state.layouts.size(), 3u);
  EXPECT_EQ(state.layouts[0].batch, 12);
  EXPECT_EQ(state.layouts[0].stride, 32 * 64);
  EXPECT_EQ(state.layouts[1].batch, 12);
  EXPECT_EQ(state.layouts[1].stride, 0);
  EXPECT_EQ(state.layouts[2].batch, 12);
  EXPECT_EQ(state.layouts[2].stride, 32 * 48);
  release(api, p);

  MatmulShape odd = s;
  odd.stride_a = 5;
  EXPECT_EQ(key_of(odd, 0x1000, 0x2000, 0x3000).align_a, 4u);
  EXPECT_FALSE(same(key_of(s, 0x1000, 0x2000, 0x3000), key_of(odd, 0x1000, 0x2000, 0x3000)));
  MatmulShape fewer = s;
  fewer.batch = 6;
  EXPECT_FALSE(same(key_of(s, 0x1000, 0x2000, 0x3000), key_of(fewer, 0x1000, 0x2000, 0x3000)));
}

TEST_F(CublasLtPlan, ARefusedBatchAttributeIsNamedAsTheCallThatRefusedIt) {
  MatmulShape s{32, 48, 64, false, false, 1.0f, CUBLASLT_EPILOGUE_DEFAULT, 0};
  s.batch = 4, s.stride_a = 32 * 64, s.stride_b = 64 * 48;
  state.results = {result(11, 0)};
  state.layout_set_status = CUBLAS_STATUS_NOT_SUPPORTED;
  Plan p;
  const Outcome o = build(api, handle, key_of(s, 0x1000, 0x2000, 0x3000), kWorkspace, p);
  EXPECT_FALSE(o.ok());
  EXPECT_STREQ(o.call, "cublasLtMatrixLayoutSetAttribute") << "the layout was created; setting its batch failed";
  EXPECT_EQ(o.status, CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(state.layouts.size(), 1u) << "nothing asked after the first refusal";
  release(api, p);
  EXPECT_EQ(state.descriptors_alive, 0);
}

#if KEVO_EXPORT_CUBLASLT_EMULATION
// An emulated plan asks for the bf16x9 compute type and points its descriptor at an emulation
// descriptor holding cuBLAS's strategy; it is its own problem (the key), and its descriptors are
// released. A cuBLASLt without the emulation entry points refuses it, named.
TEST_F(CublasLtPlan, AnEmulatedPlanAsksForBf16x9WithCublasStrategy) {
  Api emulating = api;
  emulating.emulation_create = &emulation_create;
  emulating.emulation_destroy = &emulation_destroy;
  emulating.emulation_set = &emulation_set;
  MatmulShape s{16, 128, 256, false, true, 1.0f, CUBLASLT_EPILOGUE_DEFAULT, 0};
  EXPECT_EQ(s.emulation, 0) << "plain fp32 unless asked";
  const Key plain = key_of(s, 0, 0, 0);
  s.emulation = CUBLAS_EMULATION_STRATEGY_EAGER;
  const Key eager = key_of(s, 0, 0, 0);
  EXPECT_FALSE(same(plain, eager)) << "an emulated problem gets its own plan";
  state.results = {result(7, 0)};
  state.compute = CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
  Plan p;
  ASSERT_TRUE(build(emulating, handle, eager, kWorkspace, p).ok());
  ASSERT_NE(p.emulation, nullptr);
  EXPECT_EQ(state.emulation[CUBLASLT_EMULATION_DESC_STRATEGY], CUBLAS_EMULATION_STRATEGY_EAGER);
  EXPECT_EQ(desc_value<cublasLtEmulationDesc_t>(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR), p.emulation);
  EXPECT_EQ(p.usable, 1);
  release(emulating, p);
  EXPECT_EQ(state.descriptors_alive, 0) << "the emulation descriptor is destroyed with the plan";

  s.emulation = CUBLAS_EMULATION_STRATEGY_PERFORMANT;
  Plan q;
  ASSERT_TRUE(build(emulating, handle, key_of(s, 0, 0, 0), kWorkspace, q).ok());
  EXPECT_EQ(state.emulation[CUBLASLT_EMULATION_DESC_STRATEGY], CUBLAS_EMULATION_STRATEGY_PERFORMANT);
  release(emulating, q);

  Plan none;
  const Outcome o = build(api, handle, eager, kWorkspace, none);  // api: no emulation entry points
  EXPECT_FALSE(o.ok());
  EXPECT_STREQ(o.call, "cublasLtEmulationDescCreate");
  EXPECT_EQ(o.status, CUBLAS_STATUS_NOT_SUPPORTED);
  release(api, none);
  EXPECT_EQ(state.descriptors_alive, 0);
}
#endif

TEST_F(CublasLtPlan, KeepsTheHeuristicsResultsThatFitInItsOrder) {
  const MatmulShape s{64, 64, 64, true, false, 1.0f, CUBLASLT_EPILOGUE_DEFAULT, -1};
  state.results = {result(1, 0, CUBLAS_STATUS_NOT_SUPPORTED), result(2, kWorkspace + 1), result(3, kWorkspace),
                   result(4, 0)};
  Plan p;
  ASSERT_TRUE(build(api, handle, key_of(s, 0, 0, 0), kWorkspace, p).ok());
  ASSERT_EQ(p.usable, 2);
  EXPECT_EQ(p.algos[0].data[0], 3u);
  EXPECT_EQ(p.algos[1].data[0], 4u);
  EXPECT_EQ(state.layouts[0].rows, 64u) << "a transposed: stored [k, m]";
  release(api, p);

  // No algorithm at all is no usable one, not a failure; another heuristic error is one.
  state.heuristic_status = CUBLAS_STATUS_NOT_SUPPORTED;
  Plan none;
  EXPECT_TRUE(build(api, handle, key_of(s, 0, 0, 0), kWorkspace, none).ok());
  EXPECT_EQ(none.usable, 0);
  release(api, none);
  state.heuristic_status = CUBLAS_STATUS_INVALID_VALUE;
  Plan bad;
  const Outcome o = build(api, handle, key_of(s, 0, 0, 0), kWorkspace, bad);
  EXPECT_FALSE(o.ok());
  EXPECT_STREQ(o.call, "cublasLtMatmulAlgoGetHeuristic");
  EXPECT_EQ(o.status, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_FALSE(o.cuda);
  release(api, bad);
  EXPECT_EQ(state.descriptors_alive, 0);
}

TEST_F(CublasLtPlan, AutotuningKeepsTheSmallestMedianAndPassesOverWhatDoesNotLaunch) {
  const MatmulShape s{1024, 4096, 4096, false, true, 2.0f, CUBLASLT_EPILOGUE_BIAS, -1};
  state.results = {result(10, 0), result(20, 0), result(30, 0), result(40, 0)};
  // Warm-up first, then 5 timed runs. 10: median 5. 20: median 3 despite one slow run. 30 never
  // launches. 40: median 3 too, after 20: the first of equals wins.
  state.run_ms = {{10, {50, 5, 5, 4, 6, 5}}, {20, {50, 3, 9, 2, 3, 3}}, {40, {50, 3, 3, 3, 3, 3}}};
  Plan p;
  ASSERT_TRUE(build(api, handle, key_of(s, 0, 0, 0), kWorkspace, p).ok());
  float median[kMaxAlgorithms];
  const float a = 0, b = 0;
  float d = 0;
  ASSERT_TRUE(tune(api, handle, p, 2.0f, &a, &b, &d, nullptr, kWorkspace, nullptr, median).ok());
  EXPECT_EQ(p.tuned, 1);
  EXPECT_EQ(median[0], 5.0f);
  EXPECT_EQ(median[1], 3.0f);
  EXPECT_EQ(median[2], -1.0f);
  EXPECT_EQ(median[3], 3.0f);
  EXPECT_EQ(state.runs[10], 6u) << "one warm-up and kTunedRuns timed runs";
  EXPECT_EQ(state.events_created, kTunedRuns + 1);
  EXPECT_EQ(state.events_destroyed, state.events_created);
  for (const Matmul& m : state.matmuls) EXPECT_EQ(m.alpha, 2.0f);
  release(api, p);
}

TEST_F(CublasLtPlan, AFailedCudaCallStopsAutotuningAndNamesItself) {
  const MatmulShape s{32, 32, 32, false, false, 1.0f, CUBLASLT_EPILOGUE_RELU, -1};
  state.results = {result(1, 0), result(2, 0)};
  state.run_ms = {{1, {1}}, {2, {1}}};
  state.fail_event_record_after = 7;  // in the second algorithm's runs
  Plan p;
  ASSERT_TRUE(build(api, handle, key_of(s, 0, 0, 0), kWorkspace, p).ok());
  float median[kMaxAlgorithms];
  const float a = 0, b = 0;
  float d = 0;
  const Outcome o = tune(api, handle, p, 1.0f, &a, &b, &d, nullptr, kWorkspace, nullptr, median);
  EXPECT_FALSE(o.ok());
  EXPECT_TRUE(o.cuda);
  EXPECT_STREQ(o.call, "event_record");
  EXPECT_EQ(o.status, 700);
  EXPECT_EQ(p.tuned, -1) << "no choice from an interrupted timing";
  EXPECT_EQ(state.events_destroyed, state.events_created);
  release(api, p);
}

TEST_F(CublasLtPlan, PlansAreKeyedByProblemAndAlignmentNotByAlphaOrAlgo) {
  const MatmulShape s{8, 8, 8, false, false, 1.0f, CUBLASLT_EPILOGUE_DEFAULT, 0};
  MatmulShape other = s;
  other.alpha = 3.0f;
  other.algo = -1;
  EXPECT_TRUE(same(key_of(s, 256, 512, 1024), key_of(other, 256, 512, 1024)));
  EXPECT_FALSE(same(key_of(s, 256, 512, 1024), key_of(s, 256, 516, 1024)));
  other = s;
  other.epilogue = CUBLASLT_EPILOGUE_GELU;
  EXPECT_FALSE(same(key_of(s, 0, 0, 0), key_of(other, 0, 0, 0)));
  EXPECT_EQ(alignment(0), 256u);
  EXPECT_EQ(alignment(0x1004), 4u);
  EXPECT_EQ(alignment(0x1001), 1u);
}

}  // namespace
}  // namespace kevo_export::cublaslt
