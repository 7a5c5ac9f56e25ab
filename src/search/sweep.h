// `kevo sweep`: many genomes of a task's design spaces measured on the GPU and recorded, so the
// landscape is known (the floor table of the templates) and searches can be replayed on any machine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mutate/space.h"
#include "evaluators/evaluator.h"

namespace kevo::search {

struct SweepConfig {
  int64_t limit = 200;     // genomes per task, shared evenly between its spaces
  uint64_t seed = 1;       // which genomes of spaces too large to measure whole
  int batch = 32;          // genomes per evaluator call (and per commit)
  bool sources = false;    // keep candidate texts in the file (genomes re-render without them)
  // A sub-space: knob name -> the values allowed. Spaces without the knob are left out.
  std::map<std::string, std::vector<int64_t>> fix;
};

// The genomes a sweep measures for one task: every legal genome of a space with at most `share`
// of them, a uniform sample without repeats of larger ones; shares left over by small spaces go
// to the others; `fix` restricts every space to a sub-space. Deterministic in its arguments.
std::vector<mutate::Genome> sweep_genomes(const std::vector<std::unique_ptr<mutate::DesignSpace>>& spaces,
                                          int64_t limit, uint64_t seed,
                                          const std::map<std::string, std::vector<int64_t>>& fix = {});

struct SweepProgress {
  std::string task;
  int64_t measured = 0, total = 0, ok = 0;
  double best = 0;
  double gpu_busy_fraction = 0;
};

// Measures the tasks' sweeps into `path` (a campaign file whose runs have arm "sweep"), committing
// every batch atomically. An existing file is continued: genomes it holds are not measured again.
void run_sweep(const std::string& path, const std::vector<std::string>& task_files, const SweepConfig& config,
               evaluators::VariantEvaluator& evaluator, const std::string& command,
               const std::function<void(const SweepProgress&)>& progress = {});

}  // namespace kevo::search
