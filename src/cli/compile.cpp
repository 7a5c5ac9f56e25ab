// `kevo compile`: validate a candidate against its task and build it for one or more
// architectures in an isolated compile worker, printing the resource report. No GPU needed.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/candidate.h"
#include "core/task.h"
#include "eval/builder.h"
#include "eval/compile_pool.h"

namespace kevo::cli {

namespace {

void print_resources(const Candidate& c, const eval::BuildResult& r) {
  for (const std::string& name : c.kernel_names()) {
    const eval::KernelResources* k = r.kernel(name);
    auto lowered = r.lowered_names.find(name);
    std::cout << "  " << name;
    if (lowered != r.lowered_names.end() && lowered->second != name) std::cout << " (" << lowered->second << ")";
    if (!k) {
      std::cout << ": no resource report\n";
      continue;
    }
    std::cout << ": " << k->registers << " registers, " << k->shared_bytes << " B static shared, " << k->stack_frame_bytes
              << " B stack, spills " << k->spill_store_bytes << " B stores / " << k->spill_load_bytes << " B loads\n";
  }
}

}  // namespace

int cmd_compile_worker(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "kevo compile-worker: takes no arguments (it is started by kevo itself)\n";
    return 2;
  }
  // Frames go to the real stdout; fd 1 becomes stderr so that a stray printf in a library
  // cannot corrupt them.
  int frames = dup(1);
  if (frames < 0 || dup2(2, 1) < 0) {
    std::perror("kevo compile-worker");
    return 1;
  }
  return eval::compile_worker_main(0, frames);
}

int cmd_compile(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string task_path, candidate_path, cache_dir;
  std::vector<std::string> archs;
  double time_limit = 120;
  int64_t memory_mb = 8192;
  opts.add_options()("task", po::value(&task_path)->required(), "task contract (JSON)")(
      "candidate", po::value(&candidate_path)->required(), "candidate (.cu with an embedded plan, or .json)")(
      "arch", po::value(&archs)->composing(), "target architecture, repeatable (default sm_90a)")(
      "cache-dir", po::value(&cache_dir), "CUBIN cache folder (default $KEVO_CACHE_DIR or ~/.cache/kevo/cubin)")(
      "no-cache", po::bool_switch(), "compile even when the cache has the result")(
      "fast-math", po::bool_switch(), "compile with --use_fast_math")(
      "log", po::bool_switch(), "print NVRTC's whole log")(
      "time-limit-s", po::value(&time_limit)->default_value(120), "time limit of one compile")(
      "memory-limit-mb", po::value(&memory_mb)->default_value(8192), "memory limit of the compile worker");
  po::positional_options_description pos;
  pos.add("task", 1).add("candidate", 1);
  po::variables_map vm;
  if (int rc = parse_options("compile", "TASK.json CANDIDATE [--arch sm_90a]... [--no-cache] [--log]", args, opts, pos, vm);
      rc >= 0)
    return rc;
  if (!(time_limit > 0) || time_limit > 86400 || memory_mb <= 0 || memory_mb > (int64_t{1} << 30)) {
    std::cerr << "kevo compile: --time-limit-s and --memory-limit-mb must be positive and sane\n";
    return 2;
  }
  if (archs.empty()) archs.push_back("sm_90a");

  Task task;
  Candidate candidate;
  try {
    task = load_task(task_path);
    candidate = load_candidate(candidate_path, task);
    for (const std::string& arch : archs) {  // what a plan asks of the GPU (cuBLASLt's emulation)
      DeviceLimits on;
      on.arch = arch;
      for (const Workload& w : task.workloads) resolve_plan(candidate, task, w, on);
    }
  } catch (const InputError& e) {
    std::cout << e.what() << "\n";
    return 2;
  }
  std::cout << candidate_path << ": " << candidate.kernel_names().size() << " kernel(s), "
            << candidate.plan.steps.size() << " step(s); plan valid for all " << task.workloads.size()
            << " workloads of " << task.name << "\n";

  std::vector<eval::BuildRequest> requests;
  for (const std::string& arch : archs) {
    eval::BuildRequest r;
    r.source = candidate.source;
    r.name_expressions = candidate.kernel_names();
    r.arch = arch;
    r.fast_math = vm["fast-math"].as<bool>();
    r.cache_dir = cache_dir;
    r.use_cache = !vm["no-cache"].as<bool>();
    requests.push_back(std::move(r));
  }
  eval::CompilePoolConfig pc;
  pc.workers = static_cast<int>(std::min<size_t>(archs.size(), 16));
  pc.time_limit_s = time_limit;
  pc.memory_limit_bytes = static_cast<uint64_t>(memory_mb) << 20;
  eval::CompilePool pool(pc);
  std::vector<eval::BuildResult> results = pool.build_all(requests);

  int rc = 0;
  for (const eval::BuildResult& r : results) {
    if (r.status != eval::BuildStatus::Ok) {
      std::cout << candidate_path << ": " << r.arch << ": " << eval::to_string(r.status) << ": " << r.error << "\n";
      if (vm["log"].as<bool>()) std::cout << r.log << "\n";
      rc = 2;
      continue;
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f s", r.cache_hit ? r.compile_seconds : r.seconds);
    std::cout << r.arch << ": ok, " << r.cubin.size() << " B CUBIN, compiled in " << secs
              << (r.cache_hit ? " (from the cache)" : "") << ", NVRTC " << r.nvrtc_version << "\n  options:";
    for (const std::string& o : r.options) std::cout << " " << o;
    std::cout << "\n";
    print_resources(candidate, r);
    if (vm["log"].as<bool>()) std::cout << r.log << "\n";
  }
  return rc;
}

}  // namespace kevo::cli
