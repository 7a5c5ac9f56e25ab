// The replay evaluator: answers from measurements recorded on a GPU (sweeps or earlier campaigns),
// so searches and policies can be compared on any machine. Kernel Tuner's "simulation mode".
#include <map>
#include <sstream>
#include <tuple>

#include "search/evaluator.h"
#include "store/campaign_file.h"

namespace kevo::search {

namespace {

std::string genome_key(const std::string& task, const std::string& space, const std::vector<int64_t>& genome) {
  std::ostringstream s;
  s << task << '\n' << space << '\n';
  for (int64_t v : genome) s << v << ',';
  return s.str();
}

class ReplayEvaluator : public VariantEvaluator {
 public:
  explicit ReplayEvaluator(const std::vector<std::string>& files) : files_(files) {
    store::ReadOptions measured_only;  // no sources, no checkpoints: a large file reads fast
    measured_only.sources = store::ReadOptions::Sources::none;
    measured_only.checkpoint_bytes = store::ReadOptions::Checkpoints::none;
    for (const std::string& f : files) {
      store::for_each_measured(store::read_campaign(f, measured_only), [&](const std::string& task, const store::VariantRecord& var,
                                                            const store::MeasurementRecord& m) {
        store::MeasurementRecord r = m;
        r.gpu = "replay:" + f + (m.gpu.empty() ? "" : " (" + m.gpu + ")");
        if (!var.space.empty()) by_genome_.emplace(genome_key(task, var.space, var.genome), r);
        if (!var.source_hash.empty()) by_hash_.emplace(task + '\n' + var.source_hash, r);
        if (gpu_.empty() && !m.gpu.empty()) gpu_ = m.gpu;
      });
    }
  }

  std::string describe() const override {
    std::string s = "replay of";
    for (const std::string& f : files_) s += " " + f;
    return s + " (" + std::to_string(by_genome_.size()) + " recorded genomes)";
  }
  std::string gpu_name() const override { return gpu_.empty() ? "replay" : gpu_ + ", replayed"; }

  std::vector<store::MeasurementRecord> measure(const std::vector<EvalRequest>& batch) override {
    std::vector<store::MeasurementRecord> out;
    for (const EvalRequest& r : batch) {
      const store::MeasurementRecord* found = nullptr;
      if (!r.space.empty()) {
        auto it = by_genome_.find(genome_key(r.task->name, r.space, r.genome));
        if (it != by_genome_.end()) found = &it->second;
      }
      if (!found) {
        auto it = by_hash_.find(r.task->name + '\n' + r.source_hash);
        if (it != by_hash_.end()) found = &it->second;
      }
      store::MeasurementRecord m;
      if (found) {
        m = *found;
      } else {
        m.status = "unmeasured";
        m.error = "no recording of this variant in the replay files";
        m.gpu = "replay";
      }
      m.variant = r.variant;
      out.push_back(std::move(m));
    }
    return out;
  }

 private:
  std::vector<std::string> files_;
  std::map<std::string, store::MeasurementRecord> by_genome_, by_hash_;
  std::string gpu_;
};

}  // namespace

std::unique_ptr<VariantEvaluator> make_replay_evaluator(const std::vector<std::string>& files) {
  return std::make_unique<ReplayEvaluator>(files);
}

}  // namespace kevo::search
