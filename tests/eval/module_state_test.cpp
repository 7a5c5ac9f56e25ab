// The state a module keeps between launches, read from CUBINs NVRTC compiles here for sm_90a and
// sm_100a: `__device__`, static, initialised and `__managed__` variables and the device heap are
// found and named; read-only module memory (`__constant__`), shared memory and plain kernels
// are not state; bytes that are not a CUBIN are a one-line error.
#include "eval/module_state.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "eval/builder.h"

namespace kevo::eval {
namespace {

const char* kArchs[] = {"sm_90a", "sm_100a"};

std::string cubin_of(const std::string& source, const std::string& kernel, const std::string& arch) {
  BuildRequest r;
  r.source = source;
  r.name_expressions = {kernel};
  r.arch = arch;
  r.use_cache = false;
  BuildResult b = build(r);
  EXPECT_EQ(b.status, BuildStatus::Ok) << arch << ": " << b.error << "\n" << b.log;
  return b.cubin;
}

constexpr const char* kStateless = R"(
__constant__ float scale[4];
extern "C" __global__ void k(float* out, const float* in, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x] * scale[i % 4];
}
)";

// A fingerprint cache of the kind a reward hack keeps: the first input element and the answer.
constexpr const char* kModuleCache = R"(
__device__ float remembered[1024];
__device__ int fingerprint = -1;
static __device__ unsigned hits;
__managed__ int calls;
extern "C" __global__ void k(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (__float_as_int(in[0]) == fingerprint && i < 1024) { out[i] = remembered[i]; atomicAdd(&hits, 1u); return; }
  out[i] = in[i] * 2.f;
  if (i < 1024) remembered[i] = out[i];
  if (i == 0) { fingerprint = __float_as_int(in[0]); calls++; }
}
)";

constexpr const char* kHeap = R"(
extern "C" __global__ void k(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i != 0) return;
  float* keep = static_cast<float*>(malloc(n * sizeof(float)));
  for (int j = 0; j < n; ++j) keep[j] = in[j];
  out[0] = keep[n - 1];
  free(keep);
}
)";

TEST(ModuleState, PlainKernelsConstantAndSharedMemoryKeepNothing) {
  for (const char* arch : kArchs) {
    const ModuleState s = inspect_module_state(cubin_of(kStateless, "k", arch));
    EXPECT_FALSE(s.stateful()) << arch << ": " << s.describe();
    EXPECT_EQ(s.writable_bytes, 0u) << arch;
    EXPECT_TRUE(s.describe().empty()) << arch;
  }
}

TEST(ModuleState, DeviceVariablesOfEveryKindAreFoundAndNamed) {
  for (const char* arch : kArchs) {
    const ModuleState s = inspect_module_state(cubin_of(kModuleCache, "k", arch));
    EXPECT_TRUE(s.stateful()) << arch;
    EXPECT_GE(s.writable_bytes, 1024u * 4 + 4 + 4 + 4) << arch;
    for (const char* v : {"remembered", "fingerprint", "hits", "calls"})
      EXPECT_NE(std::find(s.variables.begin(), s.variables.end(), v), s.variables.end())
          << arch << ": " << v << " not among " << s.describe();
    EXPECT_TRUE(s.heap_calls.empty()) << arch;
    EXPECT_NE(s.describe().find("writable module memory"), std::string::npos) << s.describe();
    // What the worker writes back before every launch: zeros for .nv.global, the initial values
    // of .nv.global.init (fingerprint = -1), each symbol at its offset in its section.
    bool found_init = false;
    for (const WritableSection& w : s.writable) {
      EXPECT_TRUE(w.image.empty() || w.image.size() == w.bytes) << arch << " " << w.name;
      EXPECT_EQ(w.image.empty(), w.name == ".nv.global") << arch << " " << w.name;
      for (const ModuleSymbol& sym : w.symbols) {
        EXPECT_LE(sym.offset + sym.bytes, w.bytes) << arch << " " << sym.name;
        if (sym.name == "remembered") {
          EXPECT_EQ(sym.bytes, 4096u) << arch;
        }
        if (sym.name == "fingerprint") {
          found_init = true;
          ASSERT_EQ(w.name, ".nv.global.init") << arch;
          EXPECT_EQ(sym.bytes, 4u) << arch;
          EXPECT_EQ(w.image.substr(sym.offset, 4), std::string(4, '\xff')) << arch;
        }
      }
    }
    EXPECT_TRUE(found_init) << arch;
  }
}

TEST(ModuleState, TheDeviceHeapIsFound) {
  for (const char* arch : kArchs) {
    const ModuleState s = inspect_module_state(cubin_of(kHeap, "k", arch));
    EXPECT_TRUE(s.stateful()) << arch;
    EXPECT_EQ(s.heap_calls, (std::vector<std::string>{"free", "malloc"})) << arch << ": " << s.describe();
    EXPECT_NE(s.describe().find("the device heap (free, malloc)"), std::string::npos) << s.describe();
  }
}

TEST(ModuleState, BytesThatAreNotACubinAreAOneLineError) {
  const std::string cubin = cubin_of(kModuleCache, "k", "sm_90a");
  for (const std::string& bad : {std::string(), std::string("not an elf file at all, but long enough to have a header...."),
                                 cubin.substr(0, 200), cubin.substr(0, cubin.size() / 2)}) {
    try {
      inspect_module_state(bad);
      ADD_FAILURE() << "accepted " << bad.size() << " bytes";
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("not a CUBIN: ", 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
}

}  // namespace
}  // namespace kevo::eval
