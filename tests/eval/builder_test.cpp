// The Builder on this machine's NVRTC (no GPU needed): architectures, errors, the cache, what
// untrusted source may not do, the wire format, and compile workers that hang or run out of memory.
#include "eval/builder.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>
#include <poll.h>
#include <signal.h>
#include <ftw.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/frame.h"
#include "eval/build_wire.h"
#include "eval/compile_pool.h"

namespace kevo::eval {
namespace {

// Files under a folder, recursively. (std::filesystem is avoided: LibTorch 2.x wheels export
// their own copies of its symbols, which crash in programs built with a newer GCC.)
std::vector<std::string> files_under(const std::string& dir) {
  static std::vector<std::string>* found;
  std::vector<std::string> out;
  found = &out;
  nftw(dir.c_str(), [](const char* path, const struct stat*, int type, struct FTW*) {
    if (type == FTW_F) found->push_back(path);
    return 0;
  }, 16, FTW_PHYS);
  return out;
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// A plain C kernel and a template kernel, as a plan names them.
constexpr const char* kSimple = R"(
extern "C" __global__ void scale(float* out, const float* in, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

template <typename T, int kVec>
__global__ void axpy(T* y, const T* x, T a, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * kVec;
#pragma unroll
  for (int v = 0; v < kVec; ++v)
    if (i + v < n) y[i + v] += a * x[i + v];
}
)";

// Register pressure under __launch_bounds__(1024, 2) (at most 32 registers) forces spills.
constexpr const char* kSpilling = R"(
__constant__ float weights[64];
extern "C" __global__ void __launch_bounds__(1024, 2) pressure(float* out, const float* in) {
  float v[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) v[i] = in[threadIdx.x + i * 1024];
  float acc = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int i = 0; i < 96; ++i) acc = acc * v[(i * 5 + r) % 96] + v[i] + weights[i % 64];
  out[threadIdx.x] = acc;
}

template <int kTile>
__global__ void tiled(float* out) {
  __shared__ float tile[kTile];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[kTile - 1 - threadIdx.x];
}
)";

// Exponentially growing types: NVRTC's front end spins for minutes in little memory.
constexpr const char* kHangs = R"(
template <class A, class B> struct P {};
template <class T, int N> struct Blow { using type = typename Blow<P<T, T>, N - 1>::type; };
template <class T> struct Blow<T, 0> { using type = T; };
extern "C" __global__ void k(long long* o) { typename Blow<int, 40>::type x; (void)x; o[0] = sizeof(x); }
)";

// Ten million statements from a few macro lines: the front end runs out of memory.
constexpr const char* kExhaustsMemory = R"(
#define X1 v = v * 3 + 1;
#define X2 X1 X1 X1 X1 X1 X1 X1 X1 X1 X1
#define X3 X2 X2 X2 X2 X2 X2 X2 X2 X2 X2
#define X4 X3 X3 X3 X3 X3 X3 X3 X3 X3 X3
#define X5 X4 X4 X4 X4 X4 X4 X4 X4 X4 X4
#define X6 X5 X5 X5 X5 X5 X5 X5 X5 X5 X5
#define X7 X6 X6 X6 X6 X6 X6 X6 X6 X6 X6
extern "C" __global__ void k(int* o) { int v = o[threadIdx.x]; X7 o[threadIdx.x] = v; }
)";

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

class BuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kevo-builder-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    nftw(dir_.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
         FTW_DEPTH | FTW_PHYS);
  }

  BuildRequest request(std::string source, std::vector<std::string> names) const {
    BuildRequest q;
    q.source = std::move(source);
    q.name_expressions = std::move(names);
    q.cache_dir = dir_ + "/cache";
    return q;
  }

  // The cache entry files of a build, found by its key.
  std::string entry(const BuildResult& r, const char* suffix) const {
    return dir_ + "/cache/" + r.cache_key.substr(0, 2) + "/" + r.cache_key + suffix;
  }

  std::string dir_;
};

TEST_F(BuilderTest, CompilesForHopperAndBlackwell) {
  for (const char* arch : {"sm_90a", "sm_100a", "sm_103a", "sm_80"}) {
    BuildRequest q = request(kSimple, {"scale", "axpy<float, 4>"});
    q.arch = arch;
    BuildResult r = build(q);
    ASSERT_EQ(r.status, BuildStatus::Ok) << arch << ": " << r.error << "\n" << r.log;
    EXPECT_EQ(r.cubin.substr(0, 4), "\x7f" "ELF") << arch;
    EXPECT_EQ(r.arch, arch);
    EXPECT_FALSE(r.nvrtc_version.empty());
    EXPECT_TRUE(contains(r.options, std::string("-arch=") + arch));
    for (const char* o : {"--std=c++17", "--ptxas-options=-v", "-lineinfo", "-default-device"})
      EXPECT_TRUE(contains(r.options, o)) << o;
    EXPECT_FALSE(contains(r.options, "--use_fast_math"));
    EXPECT_EQ(r.lowered_names.at("scale"), "scale");  // extern "C": the plain name
    EXPECT_EQ(r.lowered_names.at("axpy<float, 4>"), "_Z4axpyIfLi4EEvPT_PKS0_S0_i");
    ASSERT_NE(r.kernel("axpy<float, 4>"), nullptr);
    EXPECT_GT(r.kernel("scale")->registers, 0);
    EXPECT_GT(r.kernel("scale")->constant_bytes, 0) << arch;  // kernel parameters live in bank 0
    EXPECT_FALSE(r.cache_hit);
  }
}

TEST_F(BuilderTest, RecordsFastMathAndAllowedExtraOptions) {
  BuildRequest q = request(kSimple, {"scale"});
  q.fast_math = true;
  q.extra_options = {"-maxrregcount=64", "-DTILE=4", "--ptxas-options=-O3", "--ftz=true"};
  BuildResult r = build(q);
  ASSERT_EQ(r.status, BuildStatus::Ok) << r.error;
  for (const char* o : {"--use_fast_math", "-maxrregcount=64", "-DTILE=4", "--ptxas-options=-O3", "--ftz=true"})
    EXPECT_TRUE(contains(r.options, o)) << o;
}

// The allow-list must only hold options this NVRTC takes, each on its own.
TEST_F(BuilderTest, EveryAllowedOptionIsAcceptedByNvrtc) {
  for (const char* o : {"--extra-device-vectorization", "-extra-device-vectorization", "--restrict", "-restrict", "-w",
                        "--disable-warnings", "--device-int128", "-device-int128", "--maxrregcount=64",
                        "-maxrregcount=32", "--ftz=false", "-ftz=true", "--prec-div=false", "-prec-div=true",
                        "--prec-sqrt=false", "-prec-sqrt=true", "--fmad=false", "-fmad=true", "-DTILE",
                        "-DTILE=(4 * 2)", "--define-macro=N=3",
                        "-UTILE", "--undefine-macro=TILE", "--diag-suppress=177,550", "-diag-suppress=177",
                        "--diag-error=177", "-diag-error=177", "--diag-warn=177", "-diag-warn=177",
                        "--ptxas-options=-O2", "--ptxas-options=--warn-on-spills", "--ptxas-options=-dlcm=cg",
                        "--ptxas-options=--allow-expensive-optimizations=true", "--ptxas-options=--maxrregcount=40",
                        "--std=c++20", "-std=c++17", "--use_fast_math", "-lineinfo"}) {
    BuildRequest q = request(kSimple, {"scale"});
    q.extra_options = {o};
    q.use_cache = false;
    BuildResult r = build(q);
    EXPECT_EQ(r.status, BuildStatus::Ok) << o << ": " << r.error << "\n" << r.log;
  }
}

TEST_F(BuilderTest, RejectsOptionsThatReachFilesOrChangeTheOutput) {
  for (const char* bad : {"-I/etc", "--include-path=/etc", "--pre-include=/etc/passwd", "-include", "--time=/tmp/t.csv",
                          "--create-pch=x.pch", "--pch", "-arch=sm_80", "-rdc=true", "-dlto", "--fdevice-syntax-only",
                          "--ptxas-options=-v,--x", "-maxrregcount=1000", "-DX=\n#include", "-DTILE\"=1",
                          "-Xptxas", "--ptxas-options=--output-file=/tmp/x", "--dopt=on", "-G"}) {
    BuildRequest q = request(kSimple, {"scale"});
    q.extra_options = {bad};
    BuildResult r = build(q);
    EXPECT_EQ(r.status, BuildStatus::BadRequest) << bad;
    EXPECT_NE(r.error.find("not allowed"), std::string::npos) << r.error;
  }
}

TEST_F(BuilderTest, RejectsArchitecturesWithoutSass) {
  for (const char* bad : {"compute_90", "sm_90x", "sm_999", "90", ""}) {
    BuildRequest q = request(kSimple, {"scale"});
    q.arch = bad;
    EXPECT_EQ(build(q).status, BuildStatus::BadRequest) << bad;
  }
}

TEST_F(BuilderTest, SyntaxErrorIsACompileErrorNamingTheLine) {
  BuildResult r = build(request("extern \"C\" __global__ void broken(float* out) {\n  float x = 1.0f\n"
                                "  out[threadIdx.x] = x;\n}\n",
                                {"broken"}));
  EXPECT_EQ(r.status, BuildStatus::CompileError);
  EXPECT_NE(r.log.find("candidate.cu(3): error"), std::string::npos) << r.log;
  EXPECT_NE(r.error.find("candidate.cu(3): error"), std::string::npos) << r.error;
  EXPECT_TRUE(r.cubin.empty());
}

TEST_F(BuilderTest, NameExpressionThatDoesNotResolveIsACompileError) {
  BuildResult missing = build(request(kSimple, {"scale", "softmax_rows<256, 4>"}));
  EXPECT_EQ(missing.status, BuildStatus::CompileError);
  EXPECT_NE(missing.error.find("softmax_rows<256, 4>"), std::string::npos) << missing.error;

  std::string with_device_function = "__device__ float twice(float x) { return 2 * x; }\n" + std::string(kSimple);
  BuildResult device_function = build(request(with_device_function, {"twice"}));
  EXPECT_EQ(device_function.status, BuildStatus::CompileError);
  EXPECT_NE(device_function.error.find("'twice'"), std::string::npos) << device_function.error;
}

TEST_F(BuilderTest, SecondBuildHitsTheCacheAndChangesMiss) {
  BuildRequest q = request(kSimple, {"scale", "axpy<float, 4>"});
  BuildResult first = build(q);
  ASSERT_EQ(first.status, BuildStatus::Ok) << first.error;
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(exists(entry(first, ".json")));
  EXPECT_TRUE(exists(entry(first, ".cubin")));

  BuildResult second = build(q);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.status, BuildStatus::Ok);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.lowered_names, first.lowered_names);
  EXPECT_EQ(second.options, first.options);
  EXPECT_EQ(second.resources.kernels.size(), first.resources.kernels.size());
  EXPECT_EQ(second.kernel("scale")->registers, first.kernel("scale")->registers);
  EXPECT_EQ(second.compile_seconds, first.compile_seconds);
  ASSERT_TRUE(find_cached(q).has_value());

  BuildRequest other_source = q;
  other_source.source += "\n// a comment changes the key\n";
  BuildRequest other_options = q;
  other_options.extra_options = {"-maxrregcount=64"};
  BuildRequest other_arch = q;
  other_arch.arch = "sm_100a";
  BuildRequest other_names = q;
  other_names.name_expressions = {"scale", "axpy<float, 2>"};
  BuildRequest fast = q;
  fast.fast_math = true;
  for (const BuildRequest* changed : {&other_source, &other_options, &other_arch, &other_names, &fast}) {
    EXPECT_FALSE(find_cached(*changed).has_value());
    BuildResult r = build(*changed);
    EXPECT_EQ(r.status, BuildStatus::Ok) << r.error;
    EXPECT_FALSE(r.cache_hit);
    EXPECT_NE(r.cache_key, first.cache_key);
  }
  BuildRequest no_cache = q;
  no_cache.use_cache = false;
  EXPECT_FALSE(build(no_cache).cache_hit);
}

TEST_F(BuilderTest, CompileErrorsAreCachedToo) {
  BuildRequest q = request("extern \"C\" __global__ void k() { undefined_call(); }\n", {"k"});
  EXPECT_FALSE(build(q).cache_hit);
  BuildResult again = build(q);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.status, BuildStatus::CompileError);
  EXPECT_NE(again.log.find("undefined_call"), std::string::npos);
}

TEST_F(BuilderTest, CorruptCacheEntryIsRebuilt) {
  BuildRequest q = request(kSimple, {"scale"});
  BuildResult first = build(q);
  ASSERT_EQ(first.status, BuildStatus::Ok) << first.error << "\n" << first.log;

  std::ofstream(entry(first, ".json"), std::ios::trunc) << "{\"status\": \"ok\", \"trunc";
  BuildResult after_bad_json = build(q);
  EXPECT_EQ(after_bad_json.status, BuildStatus::Ok) << after_bad_json.error << "\n" << after_bad_json.log;
  EXPECT_FALSE(after_bad_json.cache_hit);
  EXPECT_EQ(after_bad_json.cubin, first.cubin);
  EXPECT_TRUE(build(q).cache_hit);  // the rebuild rewrote the entry

  std::string cubin = first.cubin;
  cubin[cubin.size() / 2] ^= 0x5a;
  std::ofstream(entry(first, ".cubin"), std::ios::binary | std::ios::trunc) << cubin;
  BuildResult after_bad_cubin = build(q);
  EXPECT_FALSE(after_bad_cubin.cache_hit);
  EXPECT_EQ(after_bad_cubin.cubin, first.cubin);

  ASSERT_EQ(truncate(entry(first, ".cubin").c_str(), 10), 0);
  EXPECT_FALSE(build(q).cache_hit);
  EXPECT_TRUE(build(q).cache_hit);
  for (const std::string& file : files_under(dir_ + "/cache"))
    EXPECT_EQ(file.find(".tmp."), std::string::npos) << "temporary file left: " << file;
}

TEST_F(BuilderTest, ResourceReportShowsSpillsStackAndSharedMemory) {
  BuildResult r = build(request(kSpilling, {"pressure", "tiled<512>"}));
  ASSERT_EQ(r.status, BuildStatus::Ok) << r.error << "\n" << r.log;
  const KernelResources* pressure = r.kernel("pressure");
  ASSERT_NE(pressure, nullptr);
  EXPECT_LE(pressure->registers, 32);
  EXPECT_GT(pressure->spill_store_bytes, 0);
  EXPECT_GT(pressure->spill_load_bytes, 0);
  EXPECT_GE(pressure->stack_frame_bytes, pressure->spill_store_bytes);
  const KernelResources* tiled = r.kernel("tiled<512>");
  ASSERT_NE(tiled, nullptr);
  EXPECT_EQ(tiled->shared_bytes, 512 * 4);
  EXPECT_EQ(tiled->barriers, 1);
  EXPECT_EQ(tiled->spill_store_bytes, 0);
  EXPECT_EQ(r.resources.module_constant_bytes, 64 * 4);  // __constant__ float weights[64]
  EXPECT_NE(r.log.find("ptxas info"), std::string::npos);  // the verbatim log is kept
}

// Each of these would make NVRTC open a file named by the candidate.
TEST_F(BuilderTest, UntrustedSourceCannotIncludeFiles) {
  std::string marker = dir_ + "/marker.h";
  std::ofstream(marker) << "#error MARKER_FILE_WAS_READ\n";
  const std::string sources[] = {
      "#include \"" + marker + "\"\n",
      "#include <" + marker + ">\n",
      "%:include \"" + marker + "\"\n",
      "#  /* comment */ include \"" + marker + "\"\n",
      "#inc\\\nlude \"" + marker + "\"\n",
      "#include \\\n\"" + marker + "\"\n",
      "#define HEADER \"" + marker + "\"\n#include HEADER\n",
      "#include_next \"" + marker + "\"\n",
      "#if __has_include(\"" + marker + "\")\n#endif\n",
      "#include <cuda/std/../../../../../../../../" + marker + ">\n",
      "#include <stdio.h>\n",
      "#include \"cuda_fp16.h\" // fine\n#include \"marker.h\"\n",
      "/* a comment opening */ #include \"" + marker + "\"\n",
      "#embed \"" + marker + "\"\n",
      "#incl\\u0075de \"" + marker + "\"\n",
      "extern \"C\" __global__ void k() {}\n#include \"" + std::string(1, '\0') + "\"\n",
  };
  for (const std::string& s : sources) {
    BuildResult r = build(request(s + "extern \"C\" __global__ void k2(float* o) { o[0] = 1; }\n", {"k2"}));
    EXPECT_EQ(r.status, BuildStatus::CompileError) << s;
    EXPECT_EQ(r.log.find("MARKER_FILE_WAS_READ"), std::string::npos) << s;
    EXPECT_NE(r.error.find("candidate.cu"), std::string::npos) << r.error;
  }
  BuildResult line = build(request("// one\n// two\n#include </etc/passwd>\n", {}));
  EXPECT_NE(line.error.find("candidate.cu(3): error: #include </etc/passwd> is not allowed"), std::string::npos)
      << line.error;
  // A name expression is pasted into a source NVRTC generates: it must not carry a directive.
  BuildResult injected = build(request(kSimple, {"scale\n#include \"" + marker + "\""}));
  EXPECT_EQ(injected.status, BuildStatus::CompileError);
  EXPECT_EQ(injected.log.find("MARKER_FILE_WAS_READ"), std::string::npos);
}

TEST_F(BuilderTest, OrdinaryDirectivesAndHashesPass) {
  BuildResult r = build(request(R"(#define STR(x) #x
#define CAT(a, b) a##b
#if defined(__CUDACC_RTC__) && !defined(TILE)
#  define TILE 4
#endif
%:pragma once
// a comment with # signs: #1, #\t
extern "C" __global__ void k(char* out, const float* in) {
  const char* text = STR(include) "#\t#\n";
  float acc = 0;
#pragma unroll
  for (int i = 0; i < TILE; ++i) acc += in[i];
  out[0] = text[0] + static_cast<char>(acc) + CAT(1, 2);
}
)",
                                {"k"}));
  EXPECT_EQ(r.status, BuildStatus::Ok) << r.error << "\n" << r.log;
}

TEST_F(BuilderTest, AllowedToolkitHeadersCompileFromMemory) {
  BuildResult r = build(request(R"(#include <cuda_fp16.h>
#include "cuda_bf16.h"
#include <cuda/std/cstdint>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void half_sum(__half* out, const __nv_bfloat16* in) {
  cuda::std::int32_t i = cg::this_thread_block().thread_rank();
  out[i] = __float2half(__bfloat162float(in[i]) * 2.0f);
}
)",
                                {"half_sum"}));
  EXPECT_EQ(r.status, BuildStatus::Ok) << r.error << "\n" << r.log;
  for (const char* ok : {"cuda_fp16.h", "cuda_fp8.h", "cooperative_groups/reduce.h", "cuda/std/type_traits",
                         "cuda/barrier", "cuda/pipeline", "cuda_pipeline.h", "mma.h"})
    EXPECT_TRUE(is_allowed_header(ok)) << ok;
  // CUB is left out: its headers reach Thrust's `#include MACRO`, which a #define could aim anywhere.
  for (const char* bad : {"stdio.h", "cuda/std/../../x", "cuda/std/__cccl/config", "cub/cub.cuh", "/usr/include/x.h",
                          "cub/block/block_reduce.cuh", "cub/warp/warp_reduce.cuh",
                          "thrust/iterator/detail/device_system_tag.h",
                          "cuda_fp16.hpp", "cooperative_groups/details/info.h", "cuda/std/", ""})
    EXPECT_FALSE(is_allowed_header(bad)) << bad;
}

// kevo's template library is served like the toolkit's headers: by its kevo/ names, from memory,
// with what its files include; nothing else under kevo/ is offered.
TEST_F(BuilderTest, KevosTemplateLibraryCompilesFromMemory) {
  BuildResult r = build(request(R"(#include "kevo/common.cuh"
#include "kevo/gemm/gemm.cuh"
extern "C" __global__ void k(float* out, const float* in) { out[threadIdx.x] = kevo::load_float(in + threadIdx.x); }
)",
                                {"k"}));
  EXPECT_EQ(r.status, BuildStatus::Ok) << r.error << "\n" << r.log;
  for (const char* ok : {"kevo/common.cuh", "kevo/gemm/gemm.cuh", "kevo/pool/stream.cuh"})
    EXPECT_TRUE(is_allowed_header(ok)) << ok;
  for (const char* bad : {"kevo/", "kevo/none.cuh", "kevo/gemm/manifest.json", "kevo/../templates/common.cuh",
                          "gemm/gemm.cuh", "common.cuh"})
    EXPECT_FALSE(is_allowed_header(bad)) << bad;
  BuildResult unknown = build(request("#include \"kevo/none.cuh\"\n", {}));
  EXPECT_EQ(unknown.status, BuildStatus::CompileError);
  EXPECT_NE(unknown.error.find("kevo's template library"), std::string::npos) << unknown.error;
}

TEST(BuildWire, RequestAndResultRoundTrip) {
  BuildRequest q;
  q.source = "extern \"C\" __global__ void k() {}\n";
  q.name_expressions = {"k", "t<1, 2>"};
  q.arch = "sm_100a";
  q.fast_math = true;
  q.extra_options = {"-DX=1"};
  q.cache_dir = "/tmp/c";
  q.use_cache = false;
  q.time_limit_s = 2.5;
  q.memory_limit_bytes = uint64_t{3} << 30;
  BuildRequest back = build_request_from_json(build_request_to_json(q));
  EXPECT_EQ(back.source, q.source);
  EXPECT_EQ(back.name_expressions, q.name_expressions);
  EXPECT_EQ(back.arch, q.arch);
  EXPECT_EQ(back.fast_math, q.fast_math);
  EXPECT_EQ(back.extra_options, q.extra_options);
  EXPECT_EQ(back.cache_dir, q.cache_dir);
  EXPECT_EQ(back.use_cache, q.use_cache);
  EXPECT_EQ(back.time_limit_s, q.time_limit_s);
  EXPECT_EQ(back.memory_limit_bytes, q.memory_limit_bytes);

  BuildResult r;
  r.status = BuildStatus::Ok;
  r.arch = "sm_90a";
  r.options = {"-arch=sm_90a"};
  r.nvrtc_version = "13.0";
  for (size_t n : {0, 1, 2, 3, 4, 257}) {  // every base64 padding case, and all byte values
    r.cubin.clear();
    for (size_t i = 0; i < n; ++i) r.cubin += static_cast<char>(i * 7);
    r.lowered_names = {{"t<1>", "_Z1tILi1EEvv"}};
    r.resources.kernels = {KernelResources{"_Z1tILi1EEvv", 40, 1, 1024, 536, 16, 8, 12}};
    r.resources.module_constant_bytes = 256;
    r.log = "ptxas info    : Used 40 registers\n\xff";
    r.seconds = 0.25;
    r.cache_hit = true;
    BuildResult back_r = build_result_from_json(build_result_to_json(r));
    EXPECT_EQ(back_r.status, BuildStatus::Ok);
    EXPECT_EQ(back_r.cubin, r.cubin) << n;
    EXPECT_EQ(back_r.lowered_names, r.lowered_names);
    ASSERT_NE(back_r.kernel("t<1>"), nullptr);
    EXPECT_EQ(back_r.kernel("t<1>")->spill_load_bytes, 12);
    EXPECT_EQ(back_r.kernel("t<1>")->constant_bytes, 536);
    EXPECT_EQ(back_r.resources.module_constant_bytes, 256);
    EXPECT_TRUE(back_r.cache_hit);
    EXPECT_EQ(back_r.seconds, 0.25);
  }
  EXPECT_THROW(build_request_from_json("{\"source\": 3}"), InputError);
  EXPECT_THROW(build_request_from_json("not json"), InputError);
  EXPECT_THROW(build_result_from_json("{\"status\": \"fine\"}"), InputError);
}

// Sets environment variables for one scope and restores them after.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->second ? setenv(it->first.c_str(), it->second->c_str(), 1) : unsetenv(it->first.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(BuildCacheDir, FollowsTheEnvironment) {
  ScopedEnv env;
  env.set("KEVO_CACHE_DIR", "/k");
  env.set("XDG_CACHE_HOME", "/x");
  env.set("HOME", "/h");
  EXPECT_EQ(default_cache_dir(), "/k");
  env.set("KEVO_CACHE_DIR", nullptr);
  EXPECT_EQ(default_cache_dir(), "/x/kevo/cubin");
  env.set("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(default_cache_dir(), "/h/.cache/kevo/cubin");
}

// ---------------------------------------------------------------------------------------------
// A minimal stand-in for the worker supervisor: a forked child runs compile_worker_main on two
// pipes; the parent gives each answer a deadline and kills the child when it passes.

class TestWorker {
 public:
  TestWorker() {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(to_child[1]);
      close(from_child[0]);
      _exit(compile_worker_main(to_child[0], from_child[1]));
    }
    close(to_child[0]);
    close(from_child[1]);
    to_ = to_child[1];
    from_ = from_child[0];
    std::string ready;
    ready_ = wait_readable(30) && read_frame(from_, ready, 1 << 20) == FrameStatus::Ok;
  }
  ~TestWorker() {
    close(to_);
    close(from_);
    if (pid_ > 0 && exit_status_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  bool ready() const { return ready_; }

  // The worker's answer, or nullopt when it died or missed the deadline (then it is killed).
  std::optional<BuildResult> ask(const std::string& payload, double deadline_s) {
    if (!write_frame(to_, payload)) return std::nullopt;
    std::string answer;
    if (!wait_readable(deadline_s) || read_frame(from_, answer, uint64_t{1} << 30) != FrameStatus::Ok) {
      kill(pid_, SIGKILL);
      return std::nullopt;
    }
    return build_result_from_json(answer);
  }

  // Waits for the worker to end; its exit code, or 128 + signal.
  int wait_exit() {
    int status = 0;
    if (exit_status_ < 0 && waitpid(pid_, &status, 0) == pid_)
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_status_;
  }

  void close_input() {
    close(to_);
    to_ = -1;
  }

  void send_signal(int signal) { kill(pid_, signal); }

 private:
  bool wait_readable(double seconds) {
    pollfd p{from_, POLLIN, 0};
    return poll(&p, 1, static_cast<int>(seconds * 1000)) == 1;
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  bool ready_ = false;
  int exit_status_ = -1;
};

TEST_F(BuilderTest, WorkerAnswersRequestsAndEndsOnEof) {
  TestWorker worker;
  ASSERT_TRUE(worker.ready());
  BuildRequest q = request(kSimple, {"scale"});
  q.time_limit_s = 60;
  auto ok = worker.ask(build_request_to_json(q), 60);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, BuildStatus::Ok) << ok->error;
  EXPECT_EQ(ok->cubin, build(q).cubin);
  auto bad = worker.ask("{\"no source\": true}", 60);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, BuildStatus::BadRequest);
  EXPECT_NE(bad->error.find("source"), std::string::npos) << bad->error;
  worker.close_input();
  EXPECT_EQ(worker.wait_exit(), 0);
}

TEST_F(BuilderTest, WorkerReportsATimeoutAndTheParentGoesOn) {
  TestWorker worker;
  ASSERT_TRUE(worker.ready());
  BuildRequest q = request(kHangs, {"k"});
  q.time_limit_s = 2;
  auto start = std::chrono::steady_clock::now();
  auto answer = worker.ask(build_request_to_json(q), 30);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, BuildStatus::Timeout) << answer->error;
  EXPECT_GE(waited, 2.0);
  EXPECT_LT(waited, 10.0);
  EXPECT_NE(worker.wait_exit(), 0);  // NVRTC cannot be stopped: the worker is gone
  EXPECT_EQ(build(request(kSimple, {"scale"})).status, BuildStatus::Ok);
}

TEST_F(BuilderTest, WorkerReportsOutOfMemoryUnderItsLimit) {
  TestWorker worker;
  ASSERT_TRUE(worker.ready());
  BuildRequest q = request(kExhaustsMemory, {"k"});
  q.memory_limit_bytes = uint64_t{512} << 20;
  q.time_limit_s = 120;
  auto answer = worker.ask(build_request_to_json(q), 150);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, BuildStatus::OutOfMemory) << answer->error << "\n" << answer->log;
  // NVRTC's front end failed cleanly: the same worker, still under its limit, compiles on.
  auto next = worker.ask(build_request_to_json(request(kSimple, {"scale"})), 60);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->status, BuildStatus::Ok) << next->error;
}

TEST_F(BuilderTest, WorkerReportsACrashInsideTheCompiler) {
  TestWorker worker;
  ASSERT_TRUE(worker.ready());
  BuildRequest q = request(kHangs, {"k"});
  q.time_limit_s = 60;
  std::thread crash([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // well inside the compile
    worker.send_signal(SIGSEGV);  // as a fault inside NVRTC would raise it
  });
  auto answer = worker.ask(build_request_to_json(q), 30);
  crash.join();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, BuildStatus::Crashed) << answer->error;
  EXPECT_EQ(answer->arch, "sm_90a");
  EXPECT_NE(worker.wait_exit(), 0);
}

// Builders in several processes racing on one cache key leave one whole entry.
TEST_F(BuilderTest, ConcurrentBuildersLeaveAWholeEntry) {
  BuildRequest q = request(kSpilling, {"pressure"});
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = fork();
    if (pid == 0) _exit(build(q).status == BuildStatus::Ok ? 0 : 1);
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = -1;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  BuildResult r = build(q);
  EXPECT_TRUE(r.cache_hit);
  EXPECT_EQ(r.status, BuildStatus::Ok);
  EXPECT_GT(r.kernel("pressure")->spill_store_bytes, 0);
  EXPECT_EQ(files_under(dir_ + "/cache").size(), 2u);  // <key>.json and <key>.cubin, no temporaries
}

}  // namespace
}  // namespace kevo::eval
