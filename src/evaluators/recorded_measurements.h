// Measurements recorded on a GPU (sweeps or earlier campaigns), keyed as a search asks for them: by
// task, space and genome (its knobs by name), free-form variants by source hash. The replay evaluator answers from
// them at once; the simulated evaluator after the time their evaluations held a GPU.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "evaluators/evaluator.h"
#include "store/records.h"

namespace kevo::evaluators {

class RecordedMeasurements {
 public:
  // Throws InputError when a file cannot be read.
  explicit RecordedMeasurements(const std::vector<std::string>& files);

  // The recording of the request's variant (its `gpu` naming the file), or null. A genome is
  // looked up by knob name where the request names its knobs (store/genome_names.h): a recording
  // made before its space gained a knob answers for the genome with that knob at its default.
  const store::MeasurementRecord* find(const EvalRequest& r) const;
  // The recording, or an "unmeasured" record for a variant never recorded; its variant is the
  // request's. A recorded "ok" answers with the fitness of the request's contract (recorded_fitness).
  store::MeasurementRecord answer(const EvalRequest& r) const;

  const std::vector<std::string>& files() const { return files_; }
  size_t genomes() const { return genomes_; }
  const std::string& gpu() const { return gpu_; }  // the first recording's GPU; empty if none says
  double median_wall_seconds() const;             // of the recordings that kept one; 0 if none

 private:
  // A space's recordings in one file: the knob names the file lists (empty where it lists none)
  // and each genome's first measurement, in file order.
  struct SpaceRecordings {
    std::vector<std::string> names;
    std::vector<std::pair<std::vector<int64_t>, store::MeasurementRecord>> genomes;
  };
  using GenomeIndex = std::map<std::vector<int64_t>, const store::MeasurementRecord*>;
  const GenomeIndex& index_for(const EvalRequest& r) const;

  std::vector<std::string> files_;
  std::map<std::string, std::vector<SpaceRecordings>> by_space_;  // task + '\n' + space -> per file
  std::map<std::string, store::MeasurementRecord> by_hash_;
  size_t genomes_ = 0;
  std::string gpu_;
  std::vector<double> walls_;
  mutable std::mutex mutex_;  // the simulated GPUs' threads ask at once
  mutable std::map<std::string, GenomeIndex> read_as_;  // task, space and the request's knobs -> genome -> recording
};

// The fitness (core/fitness.h) of `task` from a recording's per-workload times: the workloads the
// contract times now, with its weights.
double recorded_fitness(const Task& task, const store::MeasurementRecord& m);

// Screening replayed (core/screening.h): a recorded "ok" measurement stands in for the short timing
// (with the least margin: a recording keeps no short timing's spread); one that could not have
// entered the archive by `bar` becomes "screened", as the GPU would have answered.
void screen_recorded(const AdmissionBar& bar, store::MeasurementRecord& m);

// The GPU a search on these recordings names as its target: "NVIDIA H200 (sm_90a), replayed".
std::string replayed_gpu_name(const std::string& recorded_gpu);

}  // namespace kevo::evaluators
