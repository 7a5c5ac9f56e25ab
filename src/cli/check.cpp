// `kevo check`: validate contracts, report bytes and FLOPs per workload, run small references.
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/task.h"
#include "eval/oracle.h"

namespace kevo::cli {

namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

std::string human_count(double n) {
  const char* units[] = {"", "k", "M", "G", "T", "P"};
  int u = 0;
  while (n >= 1000 && u < 5) n /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", n, units[u]);
  return buf;  // "0 ", "2.15 T": a unit follows directly
}

// The workload's var axes in the contract's order.
std::string axes_text(const Task& task, const Workload& w) {
  std::string s = "{";
  for (const Axis& a : task.axes) {
    auto it = w.axes.find(a.name);
    if (it != w.axes.end()) s += (s.size() > 1 ? ", " : "") + a.name + "=" + std::to_string(it->second);
  }
  return s + "}";
}

std::string human_seconds(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  else if (s < 1) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// Whether workload `i`'s check tells outputs computed from the inputs from outputs that ignore
// them (docs/evaluation.md); 2 when no check can (the contract is refused), else 0.
int report_discrimination(const std::string& path, size_t i, const Task& task, const Workload& w, uint64_t seed) {
  eval::DiscriminationReport d = eval::check_discrimination_on_cpu(task, w, seed);
  for (const std::string& line : d.lines) std::cout << "    discrimination: " << line << "\n";
  std::cout << "    perturbed trials: " << d.perturbation << "\n";
  if (d.ok) return 0;
  std::cout << path << ": workload " << i << ": " << d.error << "\n";
  return 2;
}

// Checks one contract; prints its report. Returns 0, 1 (reference misbehaves) or 2 (invalid).
// What a reference may cost before `kevo check` leaves it to the GPU.
struct CpuLimits {
  int64_t bytes;
  int64_t flops;
};

int check_one(const std::string& path, bool show_graph, bool run, CpuLimits limits, uint64_t seed) {
  Task task;
  try {
    task = load_task(path);
  } catch (const InputError& e) {
    std::cout << e.what() << "\n";
    return 2;
  }
  std::cout << path << ": " << task.name << " - " << task.description << "\n";
  int status = 0;
  bool ran_any = false, non_finite = false;
  for (size_t i = 0; i < task.workloads.size(); ++i) {
    const Workload& w = task.workloads[i];
    Graph g = task.graph(w);
    int64_t bytes = task.bytes_moved(w);
    int64_t flops = g.matmul_conv_flops();
    std::cout << "  workload " << i << " " << axes_text(task, w) << ": " << human_bytes(static_cast<double>(bytes))
              << " to move (" << bytes << " bytes), " << human_count(static_cast<double>(flops))
              << "FLOP in matmul/conv";
    bool ran_on_cpu = false;
    if (!run) {
      std::cout << "\n";
    } else if (bytes > limits.bytes) {
      std::cout << "; not run on the CPU (over the " << human_bytes(static_cast<double>(limits.bytes)) << " limit)\n";
    } else if (flops > limits.flops) {
      std::cout << "; not run on the CPU (over the " << human_count(static_cast<double>(limits.flops))
                << "FLOP limit)\n";
    } else {
      eval::ReferenceRun r = eval::run_reference_on_cpu(task, w, seed);
      ran_any = ran_on_cpu = true;
      std::cout << "; ran on the CPU in " << human_seconds(r.seconds) << ":";
      for (const eval::OutputSummary& o : r.outputs) {
        std::cout << " " << o.name << " " << dtype_name(o.dtype) << shape_string(o.shape);
        if (o.non_finite) {
          std::cout << " with " << o.non_finite << " non-finite values";
          non_finite = true;
        } else {
          std::cout << " finite, mean abs " << o.mean_abs;
        }
      }
      std::cout << "\n";
      if (!non_finite) status = std::max(status, report_discrimination(path, i, task, w, seed));
    }
    if (run && !ran_on_cpu) std::cout << "    discrimination: checked on the GPU before the task's first evaluation\n";
    if (show_graph) {
      std::istringstream lines(g.to_string());
      for (std::string line; std::getline(lines, line);) std::cout << "    " << line << "\n";
    }
  }
  if (run && !ran_any) std::cout << "  no workload is small enough to run on the CPU\n";
  if (non_finite) std::cout << path << ": the reference produced non-finite outputs: no candidate could match it\n";
  return std::max(status, non_finite ? 1 : 0);
}

}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  po::options_description opts("options");
  std::vector<std::string> files;
  int64_t limit_mb = 512;
  double limit_gflop = 2.0;
  int64_t seed = 0;
  opts.add_options()("task", po::value(&files)->required(), "task contract files (JSON)")(
      "graph", po::bool_switch(), "print each workload's op graph")(
      "no-run", po::bool_switch(), "only validate; do not run references")(
      "cpu-limit-mb", po::value(&limit_mb)->default_value(512),
      "run a workload's reference on the CPU only when it moves at most this many MB")(
      "cpu-limit-gflop", po::value(&limit_gflop)->default_value(2.0),
      "... and does at most this many GFLOP of matmul/conv")(
      "seed", po::value(&seed)->default_value(0), "seed of the random inputs");
  po::positional_options_description pos;
  pos.add("task", -1);
  po::variables_map vm;
  if (int rc = parse_options("check", "TASK.json... [--graph] [--no-run] [--cpu-limit-mb N] [--cpu-limit-gflop G] [--seed S]", args, opts,
                             pos, vm);
      rc >= 0)
    return rc;
  if (seed < 0) {
    std::cerr << "kevo check: --seed must not be negative\n";
    return 2;
  }
  if (limit_mb < 0 || limit_mb > 1000000000 || !(limit_gflop >= 0) || limit_gflop > 1e9) {
    std::cerr << "kevo check: --cpu-limit-mb and --cpu-limit-gflop must be non-negative (and sane)\n";
    return 2;
  }
  CpuLimits limits{limit_mb * 1000 * 1000, static_cast<int64_t>(limit_gflop * 1e9)};
  int worst = 0, bad = 0;
  for (const std::string& f : files) {
    int rc = check_one(f, vm["graph"].as<bool>(), !vm["no-run"].as<bool>(), limits, static_cast<uint64_t>(seed));
    worst = std::max(worst, rc);
    bad += rc != 0;
  }
  std::cout << (files.size() - bad) << " of " << files.size() << " contract" << (files.size() == 1 ? "" : "s")
            << " ok\n";
  return worst;
}

}  // namespace kevo::cli
