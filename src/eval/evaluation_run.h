// One candidate's evaluation on one slot (eval/ only): per workload the correctness trials
// (declared and perturbed draws, judged by the task's discriminating criteria), the timed runs
// (two buffer sets in turn, nothing kept between launches, both sets' outputs checked after), the
// probe of whether it gains from state kept between launches, and the speed of light; then the
// held-back re-verification of speedups too good to take on trust. docs/evaluation.md is the
// protocol in words.
#pragma once

#include <nlohmann/json.hpp>

#include "eval/phase_clock.h"
#include "eval/runner.h"
#include "eval/slot.h"

namespace kevo::eval {

// A candidate faster than this share of the speed of light is refused (faster_than_light): read-only
// streams beat the copy bandwidth the floor is priced at by about 10%, and fp8 doubles the bf16 peak.
constexpr double kSpeedOfLightMargin = 0.5;
// A candidate whose repeated runs with its state kept take less than this share of its timed
// runs' median gains from that state (stateful).
constexpr double kStateGainLimit = 0.8;

class EvaluationRun {
 public:
  EvaluationRun(Slot& slot, const EvalJob& job) : s_(slot), job_(job), task_(*job.task), clock_(m_.phase_seconds) {}
  Measurement run();

 private:
  // What a timed workload's measurement needs beside the candidate's runs: its plan there, the
  // criteria that judge its outputs and the launch allowance (the eager baseline and the floor go
  // into the workload's measurement).
  struct TimedSetup {
    ResolvedPlan plan;
    std::vector<Criterion> criteria;
    double allowance = 0;
    SpeedOfLight sol;
  };

  enum class ShortRun { AfterTrial, StateKept };  // short_timed_run's two uses

  void fail(const Failure& f, int workload = -1);
  bool record_failure(int w, WorkloadMeasurement& wm, const Failure& f);
  std::vector<int> fitness_workloads() const;
  void evaluate();
  bool load_module();
  bool screen(const std::vector<int>& ws);
  std::optional<Failure> screen_workload(int w, const TimedSetup& su, WorkloadMeasurement& wm);
  std::optional<Failure> resolve(int w, WorkloadMeasurement& wm, ResolvedPlan& plan);
  std::optional<Failure> set_up_timed(int w, WorkloadMeasurement& wm, TimedSetup& su);
  bool measure_workload(int w, WorkloadMeasurement& wm);
  bool checked_only(int w, const ResolvedPlan& plan, WorkloadMeasurement& wm);
  std::optional<Failure> trials(int w, const ResolvedPlan& plan, const Layout& l, const std::vector<Criterion>& criteria,
                                WorkloadMeasurement& wm, double allowance);
  std::optional<Failure> timed_runs(int w, const ResolvedPlan& plan, const Layout& l,
                                    const std::vector<Criterion>& criteria, WorkloadMeasurement& wm, double allowance);
  std::optional<Failure> short_timed_run(const ResolvedPlan& plan, const Layout& l, const OracleEntry& e,
                                         const std::vector<Criterion>& criteria, WorkloadMeasurement& wm,
                                         double allowance, const nlohmann::json& timing, ShortRun kind);
  std::optional<Failure> state_probe(const ResolvedPlan& plan, const Layout& l, const WorkloadMeasurement& wm,
                                     double allowance);
  std::optional<Failure> kept_state_gain(const ResolvedPlan& plan, const Layout& l, int reps, double reset_ms,
                                         double allowance);
  std::optional<Failure> short_median(nlohmann::json req, int reps, double allowance, double& ms);
  std::optional<Failure> trial(const ResolvedPlan& plan, const Layout& l, const OracleEntry& e,
                               const std::vector<Criterion>& criteria, WorkloadMeasurement& wm, double allowance,
                               bool reload, const std::string& when);
  // The slot's reference draws and output checks, each charged to a phase of its own.
  std::shared_ptr<OracleEntry> reference(int w, uint64_t seed, bool perturbed, bool cache = true);
  std::optional<Failure> checked(const ResolvedPlan& plan, const Layout& l, int set, const OracleEntry& e,
                                 const std::vector<Criterion>& criteria, WorkloadMeasurement& wm, const std::string& when);
  static std::optional<Failure> expected_kernels(const ResolvedPlan& plan, const nlohmann::json& timing);
  bool held_back_check(const std::vector<int>& ws);

  Slot& s_;
  const EvalJob& job_;
  const Task& task_;
  Measurement m_;
  PhaseClock clock_;  // charges m_.phase_seconds
  nlohmann::json module_;
};

}  // namespace kevo::eval
