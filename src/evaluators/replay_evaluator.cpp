// The replay evaluator: answers from measurements recorded on a GPU (sweeps or earlier campaigns),
// so searches and policies can be compared on any machine. Kernel Tuner's "simulation mode".
#include "evaluators/evaluator.h"
#include "evaluators/recorded_measurements.h"

namespace kevo::evaluators {

namespace {

class ReplayEvaluator : public VariantEvaluator {
 public:
  explicit ReplayEvaluator(const std::vector<std::string>& files) : recorded_(files) {}

  EvaluatorInfo info() const override {
    EvaluatorInfo i;
    i.description = "replay of";
    for (const std::string& f : recorded_.files()) i.description += " " + f;
    i.description += " (" + std::to_string(recorded_.genomes()) + " recorded genomes)";
    i.gpu_name = replayed_gpu_name(recorded_.gpu());
    return i;
  }

  std::vector<store::MeasurementRecord> measure(const std::vector<EvalRequest>& batch) override {
    std::vector<store::MeasurementRecord> out;
    for (const EvalRequest& r : batch) out.push_back(recorded_.answer(r));
    return out;
  }

 private:
  RecordedMeasurements recorded_;
};

}  // namespace

std::unique_ptr<VariantEvaluator> make_replay_evaluator(const std::vector<std::string>& files) {
  return std::make_unique<ReplayEvaluator>(files);
}

}  // namespace kevo::evaluators
