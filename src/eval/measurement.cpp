// Status names and the JSON form of a Measurement (read by reports and the campaign file).
#include "eval/measurement.h"

#include <nlohmann/json.hpp>

namespace kevo::eval {

namespace {

constexpr const char* kNames[] = {"ok",          "compile_error",  "bad_plan",           "launch_error",
                                  "cuda_error",  "timeout",        "worker_crashed",     "wrong_result",
                                  "not_finite",  "unwritten",      "input_modified",     "out_of_bounds",
                                  "unexpected_kernels", "timed_run_wrong", "held_back_failed", "internal_error",
                                  "stateful",    "input_independent", "distribution_fitted", "faster_than_light",
                                  "unverifiable", "screened"};

nlohmann::json timing_json(const TimingFigures& t) {
  return {{"median_ms", t.median_ms}, {"p20_ms", t.p20_ms},   {"p80_ms", t.p80_ms},
          {"half_width_ms", t.half_width_ms}, {"n", t.n},     {"converged", t.converged},
          {"event_median_ms", t.event_median_ms}, {"kernels", t.kernels},
          {"sm_clock_mhz", t.sm_clock_mhz},   {"temperature_c", t.temperature_c}};
}

}  // namespace

static_assert(std::size(kNames) == static_cast<size_t>(EvalStatus::Screened) + 1, "a name for every status");

const char* to_string(EvalStatus s) { return kNames[static_cast<int>(s)]; }

bool parse_status(const std::string& name, EvalStatus& out) {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (name == kNames[i]) {
      out = static_cast<EvalStatus>(i);
      return true;
    }
  return false;
}

nlohmann::json to_json(const Measurement& m) {
  nlohmann::json workloads = nlohmann::json::array();
  for (const WorkloadMeasurement& w : m.workloads) {
    nlohmann::json j = {{"workload", w.workload},          {"axes", w.axes}, {"timed", w.timed},
                        {"status", to_string(w.status)},   {"trials", w.trials},
                        {"max_abs_error", w.max_abs_error}, {"max_error_ratio", w.max_error_ratio},
                        {"candidate", timing_json(w.candidate)}, {"eager", timing_json(w.eager)},
                        {"speedup", w.speedup}};
    if (w.compile_ms > 0) j["torch_compile_ms"] = w.compile_ms;
    if (w.floor_ms > 0) {
      j["floor_ms"] = w.floor_ms;
      j["dram_floor_ms"] = w.dram_floor_ms;
      j["compute_floor_ms"] = w.compute_floor_ms;
      if (w.candidate.median_ms > 0) j["speed_of_light_fraction"] = w.floor_ms / w.candidate.median_ms;
    }
    if (w.worst.count > 0)
      j["worst"] = {{"output", w.worst.output}, {"index", w.worst.index}, {"got", w.worst.got},
                    {"expected", w.worst.expected}, {"allowed", w.worst.allowed}, {"count", w.worst.count}};
    workloads.push_back(std::move(j));
  }
  nlohmann::json j = {{"task", m.task},         {"candidate", m.candidate},     {"status", to_string(m.status)},
                      {"error", m.error},       {"gpu", m.gpu},                 {"arch", m.arch},
                      {"fitness", m.fitness},   {"speedup", m.speedup},   {"held_back_checked", m.held_back_checked},
                      {"wall_seconds", m.wall_seconds}, {"gpu_seconds", m.gpu_seconds},
                      {"worker_replaced", m.worker_replaced}, {"workloads", workloads}};
  if (m.speedup_vs_compile > 0) j["speedup_vs_torch_compile"] = m.speedup_vs_compile;
  if (m.screen_fitness > 0) j["screen"] = {{"fitness", m.screen_fitness}, {"admit_fitness", m.admit_fitness}};
  if (!m.phase_seconds.empty()) j["phase_seconds"] = m.phase_seconds;
  return j;
}

}  // namespace kevo::eval
