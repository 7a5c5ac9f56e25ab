// What the campaign asks of an evaluator: measure batches of variants, pipelined (a batch handed
// over while the one before it is still measured, its records collected in order). Three
// implementations: the GPU (NVRTC compile pool plus the sandboxed runner), simulated GPUs (the same
// pipeline, recorded answers after the time they held a GPU) and replay (recorded answers at once).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/screening.h"
#include "core/task.h"
#include "store/genome_names.h"
#include "store/records.h"

namespace kevo::evaluators {

struct EvalRequest {
  const Task* task = nullptr;
  int64_t variant = 0;
  std::string space;              // empty for a free-form variant
  std::vector<int64_t> genome;
  std::shared_ptr<const store::KnobList> knobs;  // the space's knobs by name (a replay reads recordings by them)
  std::string source;             // the candidate text (.cu with its kevo-plan block)
  std::string source_hash;
  AdmissionBar bar;               // screening: what it must reach to enter its island's archive
};

// Where a GPU (or simulated) evaluator's time went since it was made; zeros for replay.
struct EngineFigures {
  std::vector<double> busy_seconds;  // per GPU: time its slot held a job
  std::vector<long> jobs;            // per GPU: jobs it took (the running one included)
  int64_t sources = 0;               // distinct candidate texts prepared (parsed, then built)
  int64_t compiled = 0;              // built by NVRTC in a compile worker
  int64_t cache_hits = 0;            // built from the CUBIN cache
  int64_t failed_before_gpu = 0;     // bad plans and compile errors: answered without a GPU
  double compile_seconds = 0;        // NVRTC's time for the compiled ones, summed over the workers
  double prepare_seconds = 0;        // the pipeline's thread: parsing, cache look-ups, compiles waited for
  std::map<std::string, double> phase_seconds;  // the GPU evaluations' wall time by phase (eval/phase_clock.h)
  int64_t screened = 0;              // screened out
  int64_t promoted = 0;              // screened, then verified fully and ok
  double promoted_log_ratio = 0;     // Σ log(full fitness / the screen's estimate) over those
};

// What an evaluator is, for the campaign's lines and files.
struct EvaluatorInfo {
  std::string description;  // "1 x NVIDIA H200 (sm_90a)", "replay: results/spaces/relu.h5"
  int gpus = 0;             // GPUs it measures on (simulated ones too); 0 for replay
  std::string gpu_name;     // the GPU a campaign records ("NVIDIA H200 (sm_90a)"; a replay's, the recording's)
  // The architecture its candidates are built for ("sm_90a"): campaigns lower their tasks for it, so
  // a knob value the manifest allows only elsewhere (wgmma off Hopper) is never proposed. Empty where
  // nothing is built for a real GPU (replay and simulated GPUs, whose searches stay the recordings').
  std::string target_arch;
};

// Every evaluator measures (measure, or the pipelined submit/collect/ready) and says what it is
// (info); the GPU-backed ones also say where their time went (figures).
class VariantEvaluator {
 public:
  virtual ~VariantEvaluator() = default;
  // One record per request, in order. A candidate's failure is a status, never an exception.
  // Not to be mixed with batches submitted and not yet collected.
  virtual std::vector<store::MeasurementRecord> measure(const std::vector<EvalRequest>& batch) = 0;

  // Pipelined measurement (campaigns and sweeps): submit() hands a batch over and returns;
  // collect(n) waits for the oldest batch's next n records (by default all it has left) and returns
  // them in request order, whatever order they were measured in; a batch is taken once its last
  // record is (or once a collect of it throws). ready(n, seconds) waits at most `seconds` for those
  // records and says whether they are measured, so a campaign commits each task's share of a
  // generation as soon as it is measured and notices a stop while it waits. The GPU evaluators
  // start a batch's compiles at once and queue its jobs behind every job of the batches before it,
  // so a GPU done with one batch goes on with the next. The default measures a batch (measure())
  // when it is first collected, and calls its records ready.
  static constexpr size_t kAll = static_cast<size_t>(-1);
  virtual void submit(std::vector<EvalRequest> batch) { submitted_.push_back({std::move(batch), {}, false, 0}); }
  virtual std::vector<store::MeasurementRecord> collect(size_t n = kAll);
  virtual bool ready(size_t n = kAll, double seconds = 0) {
    (void)n, (void)seconds;
    return true;
  }

  virtual EvaluatorInfo info() const = 0;
  virtual EngineFigures figures() const { return {}; }  // thread-safe

  std::string describe() const { return info().description; }
  int gpus() const { return info().gpus; }
  std::string gpu_name() const { return info().gpu_name; }
  std::string target_arch() const { return info().target_arch; }
  double gpu_busy_seconds() const {  // summed over GPUs, since construction; thread-safe
    double s = 0;
    for (double b : figures().busy_seconds) s += b;
    return s;
  }

 private:
  struct Held {
    std::vector<EvalRequest> requests;
    std::vector<store::MeasurementRecord> records;  // once measured
    bool measured = false;
    size_t taken = 0;                               // records collected
  };
  std::deque<Held> submitted_;
};

inline std::vector<store::MeasurementRecord> VariantEvaluator::collect(size_t n) {
  if (submitted_.empty()) throw std::logic_error("collect() without a batch submitted");
  Held& b = submitted_.front();
  if (!b.measured) {
    try {
      b.records = measure(b.requests);
    } catch (...) {
      submitted_.pop_front();
      throw;
    }
    b.measured = true;
  }
  const size_t k = std::min(n, b.records.size() - b.taken);
  std::vector<store::MeasurementRecord> out(std::make_move_iterator(b.records.begin() + static_cast<std::ptrdiff_t>(b.taken)),
                                            std::make_move_iterator(b.records.begin() + static_cast<std::ptrdiff_t>(b.taken + k)));
  b.taken += k;
  if (b.taken == b.records.size()) submitted_.pop_front();
  return out;
}

// Answers from the measurements recorded in campaign or sweep files (keyed by task, space and
// genome; free-form variants by source hash). A variant never recorded is "unmeasured".
// Throws InputError when a file cannot be read.
std::unique_ptr<VariantEvaluator> make_replay_evaluator(const std::vector<std::string>& files);

struct GpuEvaluatorConfig {
  int trials = 2;                  // correctness trials per workload
  uint64_t seed = 1;
  double max_seconds = 2;          // timing repetitions per workload, at most
  std::vector<int> gpus;           // empty: all
  int compile_workers = 0;         // 0: one per core
  std::string cache_dir;           // CUBIN cache; empty: the default
  std::string torch_baseline;      // tools/torch_baseline.py report, for torch.compile figures
};

// The real thing. Throws std::runtime_error (one line) when there is no GPU.
std::unique_ptr<VariantEvaluator> make_gpu_evaluator(const GpuEvaluatorConfig& config);

struct SimulationConfig {
  int gpus = 1;
  std::vector<std::string> replay;  // the recordings that answer
  double eval_seconds = 0;          // each evaluation holds its GPU this long; 0: as long as its recording did
  int trials = 2;                   // correctness trials per workload: the requests per evaluation
  int compile_workers = 0;          // 0: one per core
  std::string cache_dir;            // CUBIN cache; empty: the default
};

// The GPU evaluator's pipeline (parsing, the compile pool or its cache, the slot queue, the
// protocol's CPU side, a worker per GPU) on simulated GPUs: each variant is answered with its
// recording, as replay would answer it, after holding a simulated GPU as long as its evaluation
// would. A campaign on it searches exactly as the replay campaign does and shows what the engine
// costs and how busy it keeps N GPUs. Throws InputError for a bad file or setting.
std::unique_ptr<VariantEvaluator> make_simulated_evaluator(const SimulationConfig& config);

}  // namespace kevo::evaluators
