// A deterministic stand-in for the GPU: fitness is a fixed function of (task, space, genome) with a
// known optimum per space, and about one variant in eight fails; it records what it was asked. A
// campaign that screens gets the replayed screening's answers (evaluators/recorded_measurements.h).
#pragma once

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mutate/space.h"
#include "evaluators/evaluator.h"
#include "evaluators/recorded_measurements.h"

namespace kevo::testing {

class SyntheticEvaluator : public evaluators::VariantEvaluator {
 public:
  std::vector<store::MeasurementRecord> measure(const std::vector<evaluators::EvalRequest>& batch) override {
    if (fail_after >= 0 && calls >= fail_after) throw std::runtime_error("synthetic crash");
    ++calls;
    std::vector<store::MeasurementRecord> out;
    for (const auto& r : batch) {
      requests.push_back(r);
      out.push_back(score(r));
      evaluators::screen_recorded(r.bar, out.back());  // as a campaign that screens is answered
    }
    return out;
  }
  evaluators::EvaluatorInfo info() const override { return {"synthetic"}; }

  // Peaked landscape: each knob's value index pulls towards a target derived from its position.
  static store::MeasurementRecord score(const evaluators::EvalRequest& r) {
    store::MeasurementRecord m;
    m.variant = r.variant;
    uint64_t h = 1469598103934665603ULL;
    for (char c : r.task->name + r.space) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    double s = 0;
    for (size_t k = 0; k < r.genome.size(); ++k) {
      uint64_t hk = (h ^ (k * 0x9e3779b97f4a7c15ULL)) * 1099511628211ULL;
      double target = static_cast<double>(hk % 7);
      double v = std::log2(static_cast<double>(std::abs(r.genome[k]) + 1));
      s -= 0.05 * (v - target) * (v - target);
      h = (h ^ static_cast<uint64_t>(r.genome[k] + 7)) * 1099511628211ULL;
    }
    if (h % 8 == 0) {
      m.status = "wrong_result";
      m.error = "synthetic failure";
      return m;
    }
    m.status = "ok";
    m.fitness = 2.0 * std::exp(s) + static_cast<double>(h % 97) * 1e-4;
    m.occupancy = static_cast<double>(h % 100) / 100.0;
    store::WorkloadRecord w;
    w.status = "ok";
    w.median_ms = 1.0 / m.fitness;
    w.eager_ms = 1.0;
    w.floor_ms = 0.4;
    w.speedup = m.fitness;
    m.workloads.push_back(w);
    return m;
  }

  int calls = 0;
  int fail_after = -1;  // measure() throws from this call on (a crash mid-generation)
  std::vector<evaluators::EvalRequest> requests;
};

}  // namespace kevo::testing
