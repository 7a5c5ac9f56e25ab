// Compile throughput: distinct candidate sources through a CompilePool of one worker per core.
//   compile_bench [N_SOURCES] [WORKERS] [ARCH]      prints compiles/s and compiles/s per worker
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "eval/compile_pool.h"

namespace {

// The bundled softmax candidate with one constant changed per copy, so each copy is a new cache
// key and a full NVRTC compile of a realistic ~100-line kernel.
std::string variant(const std::string& base, int i) {
  return base + "\n// variant " + std::to_string(i) + "\n__device__ int kevo_bench_variant_" + std::to_string(i) +
         " = " + std::to_string(i) + ";\n";
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 32;
  int workers = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::thread::hardware_concurrency());
  std::string arch = argc > 3 ? argv[3] : "sm_90a";
  std::ifstream in(std::string(KEVO_SOURCE_ROOT) + "/tests/data/candidates/softmax.cu");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string base = ss.str();
  if (base.empty() || n <= 0 || workers <= 0) {
    std::fprintf(stderr, "usage: compile_bench [N_SOURCES>0] [WORKERS>0] [ARCH]\n");
    return 2;
  }
  kevo::eval::CompilePoolConfig pc;
  pc.kevo_binary = KEVO_BINARY;
  pc.workers = workers;
  kevo::eval::CompilePool pool(pc);
  auto request = [&](int i) {
    kevo::eval::BuildRequest r;
    r.source = variant(base, i);
    r.name_expressions = {"softmax_rows<256>"};
    r.arch = arch;
    r.use_cache = false;
    return r;
  };
  // Warm the workers (process start, LibTorch load, NVRTC's first call) outside the timing.
  std::vector<kevo::eval::BuildRequest> warm;
  for (int w = 0; w < workers; ++w) warm.push_back(request(-1 - w));
  pool.build_all(warm);
  std::vector<kevo::eval::BuildRequest> reqs;
  for (int i = 0; i < n; ++i) reqs.push_back(request(i));
  auto t0 = std::chrono::steady_clock::now();
  auto results = pool.build_all(reqs);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int ok = 0;
  double nvrtc = 0;
  for (const auto& r : results) {
    ok += r.status == kevo::eval::BuildStatus::Ok;
    nvrtc += r.seconds;
  }
  std::printf("compile_bench: %d sources, %d workers, %s: %d ok in %.2f s wall = %.2f compiles/s, "
              "%.2f compiles/s per worker; mean NVRTC time per compile %.3f s\n",
              n, workers, arch.c_str(), ok, wall, n / wall, n / wall / workers, nvrtc / n);
  return ok == n ? 0 : 1;
}
