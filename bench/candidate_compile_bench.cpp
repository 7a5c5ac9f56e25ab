// NVRTC compile time of rendered candidates as they are written (their templates included, served
// from memory) and with the templates pasted in (as candidates were written before, and as an
// exported header carries them), the same genomes, uncached, one after the other in this process.
//   candidate_compile_bench TASK.json [SAMPLES] [ARCH]
// prints, per space, the median seconds of each form and the source sizes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/task.h"
#include "core/template_library.h"
#include "eval/builder.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double compile_seconds(const std::string& source, const std::vector<std::string>& kernels, const std::string& arch) {
  kevo::eval::BuildRequest req;
  req.source = source;
  req.arch = arch;
  req.name_expressions = kernels;
  req.use_cache = false;
  const kevo::eval::BuildResult r = kevo::eval::build(req);
  if (r.status != kevo::eval::BuildStatus::Ok) {
    std::fprintf(stderr, "candidate_compile_bench: a candidate failed to compile: %s\n", r.error.c_str());
    std::exit(1);
  }
  return r.compile_seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: candidate_compile_bench TASK.json [SAMPLES] [ARCH]\n");
    return 2;
  }
  const int samples = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string arch = argc > 3 ? argv[3] : "sm_90a";
  try {
    const kevo::Task task = kevo::load_task(argv[1]);
    std::mt19937_64 rng(1);
    std::printf("%-40s %9s %9s %10s %10s\n", "space", "included", "pasted", "own bytes", "pasted");
    for (const auto& space : kevo::lower::lower(task, arch)) {
      std::vector<double> included, pasted;
      size_t own = 0, whole = 0;
      for (int i = 0; i < samples; ++i) {
        const std::string text = space->render(space->random_genome(rng));
        const kevo::Candidate c = kevo::parse_candidate(text, "candidate.cu", task);
        if (c.kernel_names().empty()) continue;
        const std::string inlined = kevo::templates::inline_library(c.source);
        own = std::max(own, text.size());
        whole = std::max(whole, inlined.size());
        included.push_back(compile_seconds(c.source, c.kernel_names(), arch));
        pasted.push_back(compile_seconds(inlined, c.kernel_names(), arch));
      }
      if (included.empty()) continue;
      std::printf("%-40s %8.3fs %8.3fs %10zu %10zu\n", space->id().c_str(), median(included), median(pasted), own, whole);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "candidate_compile_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
