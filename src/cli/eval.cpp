// `kevo eval`: build a candidate for this GPU and evaluate it end to end (correctness trials,
// cold-cache timing, eager baseline); `kevo worker`, the GPU worker the engine spawns, and
// `kevo sim-worker`, a simulated GPU's.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/candidate.h"
#include "core/task.h"
#include "eval/compile_pool.h"
#include "eval/cuda_driver.h"
#include "eval/gpu_worker.h"
#include "eval/runner.h"
#include "eval/simulated_gpus.h"

namespace kevo::cli {

namespace {

void print(const eval::Measurement& m) {
  for (const eval::WorkloadMeasurement& w : m.workloads) {
    std::cout << "  workload " << w.workload << " (" << w.axes << "): " << eval::to_string(w.status) << ", "
              << w.trials << " trial" << (w.trials == 1 ? "" : "s") << " passed, max error "
              << fmt("%.3g", w.max_error_ratio) << " of the tolerance" << (w.timed ? "" : " (checked, not timed)")
              << "\n";
    if (w.candidate.n == 0) continue;
    std::cout << "    candidate " << fmt("%.4f", w.candidate.median_ms) << " ms [p20 " << fmt("%.4f", w.candidate.p20_ms)
              << ", p80 " << fmt("%.4f", w.candidate.p80_ms) << ", n " << w.candidate.n
              << (w.candidate.converged ? "" : ", not converged") << "; events " << fmt("%.4f", w.candidate.event_median_ms)
              << " ms; SM " << w.candidate.sm_clock_mhz << " MHz, " << w.candidate.temperature_c << " C]\n";
    std::cout << "    eager " << fmt("%.4f", w.eager.median_ms) << " ms: " << fmt("%.2f", w.speedup) << "x";
    if (w.compile_ms > 0)
      std::cout << "; torch.compile " << fmt("%.4f", w.compile_ms) << " ms: "
                << fmt("%.2f", w.compile_ms / w.candidate.median_ms) << "x";
    if (w.floor_ms > 0)
      std::cout << "; speed of light " << fmt("%.4f", w.floor_ms) << " ms ("
                << fmt("%.0f", 100 * w.floor_ms / w.candidate.median_ms) << "% of it; "
                << (w.compute_floor_ms > w.dram_floor_ms ? "compute" : "DRAM") << " floor)";
    std::cout << "\n";
  }
  if (m.ok()) {
    std::cout << "result: ok, " << fmt("%.3f", m.fitness) << "x faster than eager over the weighted mix of timed "
              << "workloads (geometric mean of their speedups " << fmt("%.3f", m.speedup) << "x)";
    if (m.speedup_vs_compile > 0) std::cout << ", " << fmt("%.3f", m.speedup_vs_compile) << "x faster than torch.compile";
    if (m.held_back_checked) std::cout << "; re-verified on the held-back workload";
    std::cout << "\n";
  } else {
    std::cout << "result: " << eval::to_string(m.status) << ": " << m.error << "\n";
  }
}

}  // namespace

int cmd_worker(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "kevo worker: takes no arguments (it is started by kevo itself)\n";
    return 2;
  }
  return eval::gpu_worker_main();
}

int cmd_sim_worker(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "kevo sim-worker: takes no arguments (it is started by kevo run --simulate-gpus)\n";
    return 2;
  }
  return eval::simulated_worker_main();
}

int cmd_eval(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::string task_path, candidate_path, gpus = "all", baseline_path, json_path, cache_dir;
  eval::EvalOptions eo;
  int repeat = 1;
  int64_t seed = 1;
  opts.add_options()("task", po::value(&task_path)->required(), "task contract (JSON)")(
      "candidate", po::value(&candidate_path)->required(), "candidate (.cu with an embedded plan, or .json)")(
      "trials", po::value(&eo.trials)->default_value(3), "correctness trials per workload, each on fresh inputs")(
      "seed", po::value(&seed)->default_value(1), "base seed of the trials' inputs")(
      "workload", po::value(&eo.workloads)->composing(), "measure only this workload (index), repeatable")(
      "held-back", po::value(&eo.held_back)->default_value(-1),
      "workload kept for re-verifying speedups over --reverify-above (default: the largest, fresh seed)")(
      "reverify-above", po::value(&eo.reverify_above)->default_value(10), "speedup over eager that is re-verified")(
      "gpus", po::value(&gpus)->default_value("all"), "GPUs to use: all, or a list like 0,1")(
      "torch-baseline", po::value(&baseline_path), "tools/torch_baseline.py report: adds torch.compile figures")(
      "max-seconds", po::value(&eo.max_seconds)->default_value(5), "timing repetitions per workload, at most (s)")(
      "slowdown-limit", po::value(&eo.slowdown_limit)->default_value(100),
      "deadline: a launch may take this many times the eager time (at least 0.5 s)")(
      "repeat", po::value(&repeat)->default_value(1), "evaluate the candidate this many times (spread of the timer)")(
      "cache-dir", po::value(&cache_dir), "CUBIN cache folder")(
      "json", po::value(&json_path), "write the measurements here as JSON");
  po::positional_options_description pos;
  pos.add("task", 1).add("candidate", 1);
  po::variables_map vm;
  if (int rc = parse_options("eval", "TASK.json CANDIDATE [--trials 3] [--gpus all] [--json out.json]", args, opts,
                             pos, vm);
      rc >= 0)
    return rc;
  if (eo.trials < 1 || eo.trials > 1000 || repeat < 1 || repeat > 100000 || seed < 0 || !(eo.max_seconds > 0) ||
      !(eo.slowdown_limit >= 1) || !(eo.reverify_above > 0)) {
    std::cerr << "kevo eval: --trials, --repeat, --seed, --max-seconds, --slowdown-limit and --reverify-above need sane "
                 "positive values\n";
    return 2;
  }
  eo.seed = static_cast<uint64_t>(seed);
  Task task;
  Candidate candidate;
  std::map<int, double> compile_ms;
  try {
    eo.gpus = parse_gpus(gpus);
    task = load_task(task_path);
    candidate = load_candidate(candidate_path, task);
    if (!baseline_path.empty()) compile_ms = eval::torch_compile_medians(baseline_path, task.name);
  } catch (const InputError& e) {
    std::cout << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "kevo eval: " << e.what() << "\n";
    return 2;
  }
  const int n = static_cast<int>(task.workloads.size());
  for (int w : eo.workloads)
    if (w < 0 || w >= n) {
      std::cerr << "kevo eval: --workload " << w << ": " << task.name << " has workloads 0 to " << n - 1 << "\n";
      return 2;
    }
  if (eo.held_back >= n || eo.held_back < -1) {
    std::cerr << "kevo eval: --held-back " << eo.held_back << ": " << task.name << " has workloads 0 to " << n - 1 << "\n";
    return 2;
  }
  if (!eval::cuda_driver_status().available) {
    std::cerr << "kevo eval: needs a CUDA GPU: " << eval::cuda_driver_status().error << "\n";
    return 2;
  }
  std::unique_ptr<eval::Runner> runner;
  try {
    runner = std::make_unique<eval::Runner>(eo);
  } catch (const std::exception& e) {
    std::cerr << "kevo eval: " << e.what() << "\n";
    return 2;
  }
  try {  // against this GPU: its limits and what it runs (cuBLASLt's emulation is sm_100a's and sm_103a's)
    for (const Workload& w : task.workloads) resolve_plan(candidate, task, w, runner->limits());
  } catch (const InputError& e) {
    std::cout << e.what() << "\n";
    return 2;
  }

  eval::BuildRequest req;
  req.source = candidate.source;
  req.name_expressions = candidate.kernel_names();
  req.arch = runner->arch();
  req.cache_dir = cache_dir;
  eval::CompilePoolConfig pc;
  pc.workers = 1;
  eval::CompilePool compiler(pc);
  eval::BuildResult built = compiler.build_all({req}).front();

  std::cout << task.name << ": candidate " << candidate.name << " on " << runner->gpus() << " x "
            << runner->device_name() << " (" << runner->arch() << "), " << eo.trials << " trials per workload\n";
  std::vector<eval::EvalJob> jobs;
  for (int i = 0; i < repeat; ++i) jobs.push_back({&task, candidate, built, compile_ms});
  std::vector<eval::Measurement> results = runner->evaluate(jobs);
  for (size_t i = 0; i < results.size(); ++i) {
    if (repeat > 1) std::cout << "evaluation " << i + 1 << " of " << repeat << ":\n";
    print(results[i]);
  }
  if (repeat > 1) {
    std::vector<double> medians;
    for (const auto& m : results)
      if (m.ok() && m.fitness > 0) medians.push_back(std::log(m.fitness));
    if (!medians.empty()) {
      double lo = *std::min_element(medians.begin(), medians.end()), hi = *std::max_element(medians.begin(), medians.end());
      std::cout << "repeat: " << medians.size() << " of " << repeat << " ok; speedup spread (max/min - 1) "
                << fmt("%.2f", 100 * (std::exp(hi - lo) - 1)) << "%\n";
    }
    const eval::EvalStats& s = runner->stats();
    std::cout << "throughput: " << fmt("%.1f", 60.0 * s.evaluations / s.wall_seconds) << " evaluations/min, "
              << fmt("%.3f", (s.wall_seconds - s.candidate_gpu_seconds) / s.evaluations)
              << " s per evaluation beyond the candidate's own GPU time\n";
  }
  if (!json_path.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& m : results) all.push_back(eval::to_json(m));
    std::ofstream(json_path) << all.dump(1) << "\n";
  }
  for (const auto& m : results)
    if (!m.ok()) return 1;
  return 0;
}

}  // namespace kevo::cli
