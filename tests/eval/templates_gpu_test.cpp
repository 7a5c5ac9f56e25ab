// Every template family's instances compute the task's reference on every workload: random
// legal genomes of every space of every development task (and of the test contracts in
// tests/data/tasks/, such as batch norm and pooling), plus named corners of some spaces, rendered,
// built for this GPU and evaluated by the runner (fresh inputs, poisoned outputs, guard bytes,
// timed-run check). KEVO_TEMPLATE_GPU_TASKS=a,b keeps only the tasks of those names;
// KEVO_TEMPLATE_GPU_DIRS=/a,/b reads the contracts of those folders instead (imported KernelBench
// problems, say), KEVO_TEMPLATE_GPU_SHARD=i/n keeps every n-th contract from the i-th, so that a
// long sweep can be spread over several runs, and KEVO_TEMPLATE_GPU_TRIALS=n sets the correctness
// trials per workload (and shortens the timing).
#include <gtest/gtest.h>
#include "eval/torch_tensors.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <future>
#include <map>
#include <random>

#include "core/candidate.h"
#include "core/error.h"
#include "core/task.h"
#include "eval/builder.h"
#include "eval/compile_pool.h"
#include "eval/cuda_api.h"
#include "eval/cuda_driver.h"
#include "eval/runner.h"
#include "lower/lower.h"
#include "mutate/space.h"

namespace kevo::eval {
namespace {

const std::string kRoot = std::string(KEVO_SOURCE_ROOT) + "/";

// Instances measured besides the random draws, by the kind of space (the id before '/'): corners
// whose index math random draws may miss (and paths they rarely hit). The pool family's streaming kernel: the shortest walk
// with one lane column, the widest strips, and the longest walks with the most loads ahead.
// Knobs not named take their first value; corners a task's manifest rejects are left out.
const std::map<std::string, std::vector<std::map<std::string, int64_t>>>& corners() {
  static const std::map<std::string, std::vector<std::map<std::string, int64_t>>> all = {
      {"pool_stream",
       {{{"kBlockW", 32}, {"kBlockH", 1}, {"kCols", 1}, {"kRows", 4}, {"kAhead", 1}},
        {{"kBlockW", 512}, {"kBlockH", 1}, {"kCols", 4}, {"kRows", 4}, {"kAhead", 1}},
        {{"kBlockW", 128}, {"kBlockH", 2}, {"kCols", 4}, {"kRows", 128}, {"kAhead", 8}},
        {{"kBlockW", 128}, {"kBlockH", 2}, {"kCols", 4}, {"kRows", 64}, {"kAhead", 4}},
        {{"kBlockW", 64}, {"kBlockH", 4}, {"kCols", 2}, {"kRows", 8}, {"kAhead", 8}},
        {{"kBlockW", 32}, {"kBlockH", 8}, {"kCols", 1}, {"kRows", 16}, {"kAhead", 2}}}},
      // The gemm family's TMA path (16-bit linear tasks): the plan's tensor maps end to end, two
      // consumer warpgroups (m128 per warpgroup, and m64 by n256), a staged epilogue, and persistent
      // blocks (the epilogue from registers, staged after the ring, in a second kernel). Split-K is
      // not legal there (the small workload has one K tile); bench/gemm_bench.cu's group 7 runs it.
      // The split spaces ("gemm/linear+..."; tests/data/tasks/linear_*.json) take these corners too,
      // the rest's knobs at their first values: linear_bf16_log_softmax's row statistics on the TMA
      // path, one tile per block and persistent.
      {"gemm",
       {{{"kPath", 1}, {"kLoad", 1}, {"kPrecision", 2}, {"kBM", 128}, {"kBN", 256}, {"kBK", 64}, {"kWarpsM", 2},
         {"kWarpsN", 1}, {"kStages", 4}, {"kRaster", 1}, {"kGroup", 8}},
        {{"kPath", 1}, {"kLoad", 1}, {"kPrecision", 2}, {"kBM", 128}, {"kBN", 128}, {"kBK", 64}, {"kStages", 5},
         {"kEpilogue", 1}},
        {{"kPath", 1}, {"kLoad", 1}, {"kPrecision", 2}, {"kBM", 256}, {"kBN", 128}, {"kBK", 64}, {"kWarpsM", 2},
         {"kStages", 3}, {"kGroup", 16}},
        {{"kPath", 1}, {"kLoad", 1}, {"kPersistent", 1}, {"kPrecision", 2}, {"kBM", 128}, {"kBN", 256}, {"kBK", 64},
         {"kWarpsM", 2}, {"kStages", 4}, {"kRaster", 1}, {"kGroup", 8}},
        {{"kPath", 1}, {"kLoad", 1}, {"kPersistent", 1}, {"kPrecision", 2}, {"kBM", 128}, {"kBN", 128}, {"kBK", 64},
         {"kStages", 6}, {"kEpilogue", 2}},
        {{"kPath", 1}, {"kLoad", 1}, {"kPersistent", 1}, {"kPrecision", 2}, {"kBM", 128}, {"kBN", 128}, {"kBK", 64},
         {"kStages", 4}, {"kEpilogue", 1}},
        // A serial split-K (16-bit, and fp32 in promoted 3xTF32): its workspace and turn counters,
        // per product of a batch (tests/data/tasks/bmm_*.json).
        {{"kPrecision", 2}, {"kBM", 64}, {"kBN", 64}, {"kBK", 32}, {"kWarpsM", 2}, {"kWarpsN", 2}, {"kStages", 3},
         {"kSplit", 1}, {"kSplits", 2}},
        {{"kPrecision", 4}, {"kBM", 64}, {"kBN", 64}, {"kBK", 32}, {"kWarpsM", 2}, {"kWarpsN", 2}, {"kStages", 3},
         {"kSplit", 1}, {"kSplits", 2}}}},
      // The conv family: each layout's gather with the tap table and the staged epilogue, and the
      // smallest tile (one warp, 4-byte weight copies, computed taps, stores from registers).
      {"conv",
       {{{"kLayout", 1}, {"kOffsets", 1}, {"kEpilogue", 1}, {"kBM", 128}, {"kBN", 128}, {"kBK", 32}, {"kWarpsM", 4},
         {"kWarpsN", 2}, {"kStages", 3}, {"kWeightCopy", 16}, {"kPrecision", 3}},
        {{"kLayout", 0}, {"kOffsets", 1}, {"kEpilogue", 1}, {"kBM", 128}, {"kBN", 64}, {"kBK", 32}, {"kWarpsM", 2},
         {"kWarpsN", 2}, {"kStages", 4}, {"kWeightCopy", 16}},
        {{"kLayout", 0}, {"kOffsets", 0}, {"kEpilogue", 0}, {"kBM", 64}, {"kBN", 32}, {"kBK", 16}, {"kWarpsM", 1},
         {"kWarpsN", 1}, {"kStages", 2}, {"kWeightCopy", 4}}}},
      // The normalize family's fewest threads per channel, one CTA each (no split, no cluster),
      // two-pass and Welford: each thread folds a long run of the channel alone, where an
      // uncompensated fp32 sum drifts (tests/data/tasks/batch_norm_offset.json: 2^20 terms a
      // channel, mean 30.5, std 0.29).
      {"normalize_channels",
       {{{"kThreads", 32}, {"kRows", 1}, {"kCluster", 1}, {"kSplit", 1}, {"kVec", 1}, {"kItems", 1}, {"kAlgo", 0}},
        {{"kThreads", 32}, {"kRows", 1}, {"kCluster", 1}, {"kSplit", 1}, {"kVec", 1}, {"kItems", 1}, {"kAlgo", 1}}}},
      {"normalize_channel_columns", {{{"kBlockX", 32}, {"kBlockY", 1}, {"kSplit", 1}, {"kItems", 1}}}},
  };
  return all;
}

// Whether a failed measurement is the one designed failure of cuBLASLt's algorithm knob: a launch
// error saying that the genome's own kAlgo (an index, not -1's autotuning) is past the list the
// heuristic returned for some workload's shape.
bool asked_past_the_list(const Measurement& m, int64_t algo) {
  if (m.status != EvalStatus::LaunchError || algo < 0) return false;
  const size_t at = m.error.find("cublaslt.matmul: algo ");
  long long asked = -1, listed = -1;
  if (at == std::string::npos ||
      std::sscanf(m.error.c_str() + at, "cublaslt.matmul: algo %lld but the heuristic returned %lld", &asked, &listed) != 2)
    return false;
  return asked == algo && listed >= 0 && asked >= listed;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    size_t end = std::min(text.find(',', at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// The contracts to sample: every .json of the development and test folders, or of the folders
// KEVO_TEMPLATE_GPU_DIRS names; each folder's files in name order.
std::vector<std::string> contract_files() {
  std::vector<std::string> folders = {kRoot + "tasks", kRoot + "tests/data/tasks"};
  if (const char* dirs = std::getenv("KEVO_TEMPLATE_GPU_DIRS")) folders = split_list(dirs);
  std::vector<std::string> files;
  for (const std::string& folder : folders) {
    std::vector<std::string> in_folder;
    DIR* d = opendir(folder.c_str());
    EXPECT_NE(d, nullptr) << "cannot read the folder " << folder;
    for (dirent* e; d && (e = readdir(d));)
      if (std::string n = e->d_name; n.size() > 5 && n.substr(n.size() - 5) == ".json") in_folder.push_back(folder + "/" + n);
    if (d) closedir(d);
    std::sort(in_folder.begin(), in_folder.end());
    files.insert(files.end(), in_folder.begin(), in_folder.end());
  }
  return files;
}

// Every n-th file from the i-th, for KEVO_TEMPLATE_GPU_SHARD=i/n (all of them without it).
std::vector<std::string> shard(const std::vector<std::string>& files) {
  const char* spec = std::getenv("KEVO_TEMPLATE_GPU_SHARD");
  int i = 0, n = 1;
  if (!spec) return files;
  if (std::sscanf(spec, "%d/%d", &i, &n) != 2 || n < 1 || i < 0 || i >= n) {
    ADD_FAILURE() << "KEVO_TEMPLATE_GPU_SHARD=" << spec << ": expected i/n with 0 <= i < n";
    return {};
  }
  std::vector<std::string> out;
  for (size_t k = static_cast<size_t>(i); k < files.size(); k += static_cast<size_t>(n)) out.push_back(files[k]);
  return out;
}

mutate::Genome genome_of(const mutate::DesignSpace& s, const std::map<std::string, int64_t>& values) {
  mutate::Genome g{s.id(), {}};
  for (const mutate::Knob& k : s.knobs()) {
    auto it = values.find(k.name);
    g.values.push_back(it == values.end() ? k.values.front() : it->second);
  }
  return g;
}

TEST(TemplatesGpu, SampledInstancesOfEverySpacePassOnEveryWorkload) {
  if (!cuda_api()) GTEST_SKIP() << "no CUDA GPU: " << cuda_driver_status().error;
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA GPU";
  const char* env = std::getenv("KEVO_TEMPLATE_GPU_SAMPLES");
  const int per_space = env ? std::max(1, std::atoi(env)) : 3;

  const std::vector<std::string> files = shard(contract_files());
  const char* only = std::getenv("KEVO_TEMPLATE_GPU_TASKS");

  EvalOptions o;
  o.kevo_binary = KEVO_BINARY;
  o.gpus = {0};
  const char* trials = std::getenv("KEVO_TEMPLATE_GPU_TRIALS");  // a sweep: 1 trial, a shorter timing
  o.trials = trials ? std::max(1, std::atoi(trials)) : 2;
  o.max_seconds = trials ? 0.1 : 0.3;
  // A sweep checks correctness: a generic baseline can take seconds per run, so one warm-up, one rep.
  o.min_reps = trials ? 1 : 5;
  o.warmup = trials ? 1 : 3;
  Runner ev(o);
  std::mt19937_64 rng(7);
  std::vector<Task> tasks(files.size());
  std::vector<EvalJob> jobs;
  std::vector<BuildRequest> requests;  // one per job
  std::vector<std::string> labels;
  std::vector<int64_t> algos;  // each job's kAlgo (cuBLASLt's list index), or -2 without one
  for (size_t t = 0; t < files.size(); ++t) {
    std::vector<std::unique_ptr<mutate::DesignSpace>> spaces;
    try {
      tasks[t] = load_task(files[t]);
      if (only && ("," + std::string(only) + ",").find("," + tasks[t].name + ",") == std::string::npos) continue;
      spaces = lower::lower(tasks[t], ev.arch());  // the knob values legal on this GPU (wgmma: sm_90a)
    } catch (const InputError& e) {
      ADD_FAILURE() << files[t] << ": " << e.what();
      continue;
    }
    EXPECT_FALSE(spaces.empty()) << files[t];
    for (const auto& s : spaces) {
      std::vector<mutate::Genome> genomes;
      try {
        for (int i = 0; i < per_space; ++i) genomes.push_back(s->random_genome(rng));
      } catch (const std::runtime_error& e) {  // a space without legal genomes: a lowering bug, not the sweep's end
        ADD_FAILURE() << tasks[t].name << " " << s->id() << ": " << e.what();
        continue;
      }
      auto extra = corners().find(s->id().substr(0, s->id().find('/')));
      if (extra != corners().end())
        for (const auto& values : extra->second)
          if (mutate::Genome g = genome_of(*s, values); s->legal(g)) genomes.push_back(g);
      for (const mutate::Genome& g : genomes) {
        EvalJob j;
        j.task = &tasks[t];
        try {
          j.candidate = parse_candidate(s->render(g), g.to_string() + ".cu", tasks[t]);
        } catch (const InputError& e) {
          ADD_FAILURE() << tasks[t].name << " " << g.to_string() << ": rendered plan invalid: " << e.what();
          continue;
        }
        BuildRequest req;
        req.source = j.candidate.source;
        req.name_expressions = j.candidate.kernel_names();
        req.arch = ev.arch();
        req.use_cache = false;
        requests.push_back(std::move(req));
        jobs.push_back(std::move(j));
        labels.push_back(tasks[t].name + " " + g.to_string());
        const int algo = s->manifest().knob("kAlgo");
        algos.push_back(algo < 0 ? -2 : g.values[static_cast<size_t>(algo)]);
      }
    }
  }
  ASSERT_FALSE(jobs.empty()) << "no instance to measure (KEVO_TEMPLATE_GPU_TASKS matches no task?)";
  // NVRTC in worker processes, one per core, as a campaign builds; each instance goes to the GPU
  // as soon as it is built, and its line is printed as soon as it is measured (a long sweep that
  // runs out of time still says what it measured).
  CompilePoolConfig compile;
  compile.kevo_binary = KEVO_BINARY;
  std::vector<std::future<Measurement>> pending(jobs.size());
  const auto start = std::chrono::steady_clock::now();
  CompilePool(compile).build_each(requests, [&](size_t i, BuildResult r) {
    jobs[i].build = std::move(r);
    pending[i] = ev.submit(jobs[i]);
  });
  std::printf("%zu instances built in %.0f s\n", jobs.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  int failed = 0, short_list = 0, ok = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Measurement m = pending[i].get();
    std::printf("%-60s %-16s speedup %6.2f", labels[i].c_str(), to_string(m.status), m.speedup);
    for (const auto& w : m.workloads)
      std::printf("  w%d %.4f ms (eager %.4f, floor %.4f)", w.workload, w.candidate.median_ms, w.eager.median_ms, w.floor_ms);
    std::printf("\n");
    if (m.ok()) {
      ++ok;
    } else if (asked_past_the_list(m, algos[i])) {
      // A kAlgo past the heuristic's list for some workload's shape: the candidate fails, as designed.
      ++short_list;
      std::printf("  (not counted: %s)\n", m.error.c_str());
    } else {
      ++failed;
      ADD_FAILURE() << labels[i] << ": " << to_string(m.status) << ": " << m.error;
    }
    std::fflush(stdout);
  }
  std::printf("%zu instances, %d ok, %d failed, %d asked cuBLASLt for an algorithm past its heuristic list\n",
              jobs.size(), ok, failed, short_list);
  // The excuse covers a few library genomes, not the run: at most 5% of the instances, and most are ok.
  EXPECT_LE(short_list * 20, static_cast<int>(jobs.size())) << "too many instances excused";
  EXPECT_GE(ok * 10, static_cast<int>(jobs.size()) * 9) << "most instances must pass";
}

}  // namespace
}  // namespace kevo::eval
