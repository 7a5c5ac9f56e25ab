// One candidate through the protocol of docs/evaluation.md.
#include "eval/evaluation_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/base64.h"
#include "core/error.h"
#include "core/fitness.h"
#include "core/screening.h"
#include "eval/module_memory.h"
#include "eval/module_state.h"

namespace kevo::eval {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string axes_text(const Workload& w) {
  std::string s;
  for (const auto& [name, value] : w.axes) s += (s.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return s;
}

std::string number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

TimingFigures figures_of(const Json& t) {
  TimingFigures f;
  f.median_ms = t.at("median_ms").get<double>();
  f.p20_ms = t.at("p20_ms").get<double>();
  f.p80_ms = t.at("p80_ms").get<double>();
  f.half_width_ms = t.at("half_width_ms").is_number() ? t.at("half_width_ms").get<double>() : 0.0;
  f.n = t.at("n").get<int>();
  f.converged = t.at("converged").get<bool>();
  f.event_median_ms = t.at("event_median_ms").get<double>();
  f.kernels = t.at("kernels_max").get<int>();
  f.sm_clock_mhz = t.at("sm_clock_mhz").get<unsigned>();
  f.temperature_c = t.at("temperature_c").get<unsigned>();
  return f;
}

Json timing_request(const TimingConfig& tc) {
  return {{"warmup", tc.warmup}, {"min_reps", tc.min_reps}, {"max_reps", tc.max_reps},
          {"max_seconds", tc.max_seconds}, {"target_half_width", tc.target_half_width}};
}

// A short fixed run of `reps` repetitions after one warm-up: the probe of state and the held-back check.
Json short_timing(int reps = 5) {
  return {{"warmup", 1}, {"min_reps", reps}, {"max_reps", reps}, {"max_seconds", 5.0}, {"target_half_width", 1.0}};
}

// How widely a timing's runs spread around their median: (p80 - p20) / median.
double relative_spread(const TimingFigures& t) { return t.median_ms > 0 ? (t.p80_ms - t.p20_ms) / t.median_ms : 0; }

// Repetitions of a short timing (the screen's, the state probe's): five, fewer for a kernel that
// takes long (a generic baseline on a large problem runs for seconds), never under two. In the
// probe every repetition after the warm-up runs on kept state, so a kernel that remembers is fast
// in all of them and the median shows it.
int short_reps(double candidate_ms) {
  constexpr double kProbeBudgetMs = 100;
  return static_cast<int>(std::clamp(kProbeBudgetMs / std::max(candidate_ms, 1e-3), 2.0, 5.0));
}

// Failures a kernel fitted to the declared distributions shows on perturbed inputs.
bool wrong_values(EvalStatus s) {
  return s == EvalStatus::WrongResult || s == EvalStatus::NotFinite || s == EvalStatus::InputIndependent;
}

// A failure on perturbed inputs of a kernel right on the declared distributions.
Failure distribution_fitted(const Failure& on_perturbed) {
  return Failure{EvalStatus::DistributionFitted,
                 "right on the declared distributions, wrong on perturbed inputs (scaled, shifted, with "
                 "outliers): it answers from the distributions' statistics, or loses accuracy on inputs of "
                 "another scale: " + on_perturbed.error};
}

// Whether a measurement failed for want of GPU memory (LibTorch's allocator in the oracle or the
// check, the arena, the worker's L2 flush buffer), not for anything the candidate did.
bool out_of_memory(const Measurement& m) {
  return (m.status == EvalStatus::InternalError || m.status == EvalStatus::LaunchError) &&
         (m.error.find("out of memory") != std::string::npos || m.error.find("OUT_OF_MEMORY") != std::string::npos);
}

}  // namespace

Measurement EvaluationRun::run() {
  auto start = Clock::now();
  // Out of memory once: the slot gives back what it keeps for later (cached references, LibTorch's
  // cached blocks, an arena grown for other tasks) and the candidate is measured again from the start.
  for (int attempt = 0; attempt < 2; ++attempt) {
    m_ = Measurement{};
    m_.task = task_.name;
    m_.candidate = job_.candidate.name;
    m_.gpu = s_.name() + " (gpu" + std::to_string(s_.device()) + ")";
    m_.arch = job_.build.arch;
    try {
      evaluate();
    } catch (const std::exception& e) {
      // One line: LibTorch's errors (a CUDA allocation that failed in the oracle, say) append a
      // backtrace of dozens of lines after the message.
      const std::string what = e.what();
      fail({EvalStatus::InternalError, "kevo: " + what.substr(0, what.find('\n'))});
    }
    if (!out_of_memory(m_)) break;
    if (attempt == 0) s_.release_memory();
    else m_.error += " (again after kevo gave back its cached references and arena: this workload needs more of the GPU's memory)";
  }
  m_.wall_seconds = seconds_since(start);
  return m_;
}

void EvaluationRun::fail(const Failure& f, int workload) {
  m_.status = f.status;
  m_.error = (workload >= 0 ? "workload " + std::to_string(workload) + ": " : std::string()) + f.error;
}

// Workload w failed: its measurement so far is kept, and the candidate takes the failure's status.
bool EvaluationRun::record_failure(int w, WorkloadMeasurement& wm, const Failure& f) {
  wm.status = f.status;
  m_.workloads.push_back(wm);
  fail(f, w);
  return false;
}

std::optional<Failure> EvaluationRun::checked(const ResolvedPlan& plan, const Layout& l, int set, const OracleEntry& e,
                                              const std::vector<Criterion>& criteria, WorkloadMeasurement& wm,
                                              const std::string& when) {
  auto phase = clock_.enter("output_checks");
  return s_.check(plan, l, set, e, criteria, wm, when);
}

std::shared_ptr<OracleEntry> EvaluationRun::reference(int w, uint64_t seed, bool perturbed, bool cache) {
  auto phase = clock_.enter("references");
  return s_.oracle(task_, w, seed, perturbed, cache);
}

// Every workload but the held-back one; the held-back one too when it is the only timed one (the
// fitness needs a timed workload).
std::vector<int> EvaluationRun::fitness_workloads() const {
  const EvalOptions& o = s_.options();
  if (!o.workloads.empty()) return o.workloads;
  const int n = static_cast<int>(task_.workloads.size());
  bool other_timed = false;
  for (int i = 0; i < n; ++i) other_timed = other_timed || (i != o.held_back && task_.is_timed(i));
  std::vector<int> all;
  for (int i = 0; i < n; ++i)
    if (i != o.held_back || !other_timed) all.push_back(i);
  return all;
}

// The module for the worker, with its writable memory to reset before every launch; a module that
// uses the device heap (which nothing can reset) is refused.
bool EvaluationRun::load_module() {
  ModuleState state;
  if (!job_.build.cubin.empty()) state = inspect_module_state(job_.build.cubin);
  if (!state.heap_calls.empty()) {
    fail({EvalStatus::Stateful, "the module uses " + state.describe() +
                                    ": its blocks outlive a launch, so a kernel could remember answers there; keep "
                                    "state in a scratch buffer of the plan (poisoned before every launch)"});
    return false;
  }
  module_ = {{"key", job_.build.cache_key.empty() ? std::to_string(std::hash<std::string>{}(job_.build.cubin))
                                                   : job_.build.cache_key},
             {"cubin_base64", base64_encode(job_.build.cubin)},
             {"lowered", job_.build.lowered_names},
             {"writable", writable_to_json(state.writable)}};
  return true;
}

void EvaluationRun::evaluate() {
  if (job_.build.status != BuildStatus::Ok) return fail({EvalStatus::CompileError, job_.build.error});
  if (job_.build.arch != s_.arch())
    return fail({EvalStatus::BadPlan, "built for " + job_.build.arch + ", the GPU is " + s_.arch()});
  {
    auto phase = clock_.enter("module");
    if (!load_module()) return;
  }
  std::vector<int> ws = fitness_workloads();
  if (job_.admit_fitness > 0 && !screen(ws)) return;
  auto phase = clock_.enter("protocol");
  std::vector<WorkloadTime> times;
  double log_vs_compile = 0, max_speedup = 0;
  int with_compile = 0;
  for (int w : ws) {
    WorkloadMeasurement wm;
    if (!measure_workload(w, wm)) return;
    if (!wm.timed) continue;
    times.push_back({w, wm.eager.median_ms, wm.candidate.median_ms});
    max_speedup = std::max(max_speedup, wm.speedup);
    if (wm.compile_ms > 0) log_vs_compile += std::log(wm.compile_ms / wm.candidate.median_ms), ++with_compile;
  }
  m_.fitness = weighted_speedup(task_, times);
  m_.speedup = geometric_mean_speedup(task_, times);
  if (with_compile > 0 && with_compile == static_cast<int>(times.size()))
    m_.speedup_vs_compile = std::exp(log_vs_compile / with_compile);
  if (max_speedup > s_.options().reverify_above && !held_back_check(ws)) return;
  m_.status = EvalStatus::Ok;
}

// Screening (docs/evaluation.md#screening), per timed workload: a short timed run on the declared
// draw the full protocol's timed runs use, with the state of every launch kept for the next, its
// outputs checked after; the fitness these times give is held to the job's bar (core/screening.h).
// Whatever a kernel gains from state kept between launches makes it faster here, so that it is
// verified fully, where the state probe sees it; an honest kernel runs as it does reset. True when
// the candidate goes on to the full protocol, which checks everything again from the start; false
// when it failed (its status set) or was screened out (status screened, with its short timings).
bool EvaluationRun::screen(const std::vector<int>& ws) {
  auto phase = clock_.enter("screen");
  std::vector<WorkloadTime> times;
  double spread = 0;
  for (int w : ws) {
    if (!task_.is_timed(w)) continue;
    WorkloadMeasurement wm;
    TimedSetup su;
    if (auto f = set_up_timed(w, wm, su)) return record_failure(w, wm, *f);
    if (auto f = screen_workload(w, su, wm)) return record_failure(w, wm, *f);
    times.push_back({w, wm.eager.median_ms, wm.candidate.median_ms});
    spread = std::max(spread, relative_spread(wm.candidate));
    m_.workloads.push_back(wm);
  }
  if (times.empty()) return true;
  m_.admit_fitness = job_.admit_fitness;
  m_.screen_fitness = weighted_speedup(task_, times);
  const ScreenVerdict v = screen_verdict(m_.screen_fitness, spread, job_.admit_fitness);
  if (v.verify) {
    m_.workloads.clear();
    return true;
  }
  m_.fitness = m_.screen_fitness;
  m_.speedup = geometric_mean_speedup(task_, times);
  m_.status = EvalStatus::Screened;
  m_.error = v.reason;
  return false;
}

std::optional<Failure> EvaluationRun::screen_workload(int w, const TimedSetup& su, WorkloadMeasurement& wm) {
  const Layout l = layout_of(su.plan);
  s_.ensure_arena(l.bytes);
  auto declared = reference(w, trial_seed(s_.options().seed, w, 0), false);
  {
    auto copying = clock_.enter("inputs");
    s_.prepare(su.plan, l, {declared.get()});
  }
  // The eager time stands in for the candidate's, which is not known yet.
  const Json timing = short_timing(short_reps(wm.eager.median_ms));
  if (auto f = short_timed_run(su.plan, l, *declared, su.criteria, wm, su.allowance, timing, ShortRun::StateKept))
    return f;
  ++wm.trials;
  wm.speedup = wm.eager.median_ms / std::max(wm.candidate.median_ms, 1e-9);
  return std::nullopt;
}

// The candidate's plan for workload w (bad_plan where it does not resolve there).
std::optional<Failure> EvaluationRun::resolve(int w, WorkloadMeasurement& wm, ResolvedPlan& plan) {
  const Workload& wl = task_.workloads[static_cast<size_t>(w)];
  wm.workload = w;
  wm.axes = axes_text(wl);
  wm.timed = task_.is_timed(w);
  try {
    plan = resolve_plan(job_.candidate, task_, wl, s_.limits());
  } catch (const InputError& e) {
    return Failure{EvalStatus::BadPlan, e.what()};
  }
  return std::nullopt;
}

std::optional<Failure> EvaluationRun::set_up_timed(int w, WorkloadMeasurement& wm, TimedSetup& su) {
  if (auto f = resolve(w, wm, su.plan)) return f;
  auto phase = clock_.enter("baselines");  // eager, the floor and the discrimination: once per task and workload
  wm.eager = s_.eager(task_, w);
  if (auto it = job_.compile_ms.find(w); it != job_.compile_ms.end()) wm.compile_ms = it->second;
  su.sol = s_.speed_of_light(task_, w);
  wm.floor_ms = su.sol.ms(), wm.dram_floor_ms = su.sol.dram_ms, wm.compute_floor_ms = su.sol.compute_ms;
  const Discrimination& d = s_.discrimination(task_, w);
  if (!d.ok())
    return Failure{EvalStatus::Unverifiable,
                   "the task's check cannot tell outputs that ignore the inputs from real ones: " + d.error()};
  su.criteria = d.criteria(task_.tolerance);
  su.allowance = s_.launch_allowance_s(wm.eager.median_ms);
  return std::nullopt;
}

bool EvaluationRun::measure_workload(int w, WorkloadMeasurement& wm) {
  if (!task_.is_timed(w)) {
    ResolvedPlan plan;
    if (auto f = resolve(w, wm, plan)) return record_failure(w, wm, *f);
    return checked_only(w, plan, wm);
  }
  TimedSetup su;
  if (auto f = set_up_timed(w, wm, su)) return record_failure(w, wm, *f);
  const Layout l = layout_of(su.plan, 2);
  s_.ensure_arena(l.bytes);
  if (auto f = trials(w, su.plan, l, su.criteria, wm, su.allowance)) return record_failure(w, wm, *f);
  if (auto f = timed_runs(w, su.plan, l, su.criteria, wm, su.allowance)) return record_failure(w, wm, *f);
  if (auto f = state_probe(su.plan, l, wm, su.allowance)) return record_failure(w, wm, *f);
  const SpeedOfLight& sol = su.sol;
  if (wm.candidate.median_ms < kSpeedOfLightMargin * sol.ms()) {
    std::string floor = number("%.1f MB", sol.bytes / 1e6) + " at " + number("%.2f TB/s", sol.bandwidth / 1e12);
    if (sol.flops > 0)
      floor += ", or " + number("%.1f GFLOP", sol.flops / 1e9) + " at " + number("%.0f TFLOP/s", sol.peak / 1e12) + " (bf16)";
    return record_failure(w, wm, {EvalStatus::FasterThanLight,
                                  "ran in " + number("%.4f ms", wm.candidate.median_ms) + ", under half the " +
                                      number("%.4f ms", sol.ms()) + " this GPU needs at the least (" + floor +
                                      "): a time this short means the work was not done as the task states it"});
  }
  wm.speedup = wm.eager.median_ms / std::max(wm.candidate.median_ms, 1e-9);
  m_.workloads.push_back(wm);
  return true;
}

// A workload checked but not timed: the same correctness trials, no eager baseline, no timing.
bool EvaluationRun::checked_only(int w, const ResolvedPlan& plan, WorkloadMeasurement& wm) {
  const Discrimination& d = s_.discrimination(task_, w);
  std::optional<Failure> f;
  if (!d.ok())
    f = Failure{EvalStatus::Unverifiable, "the task's check cannot tell outputs that ignore the inputs from real ones: " +
                                              d.error()};
  const Layout l = layout_of(plan, 2);
  if (!f) {
    s_.ensure_arena(l.bytes);
    f = trials(w, plan, l, d.criteria(task_.tolerance), wm, s_.launch_allowance_s(0));
  }
  if (f) {
    wm.status = f->status;
    fail(*f, w);
  }
  m_.workloads.push_back(wm);
  return !f;
}

// Trial t on draw t: the declared distributions first, perturbed ones after (a single trial is a
// perturbed one: the timed runs check the declared draws). A perturbed trial that fails on values
// where the declared draw passes is a kernel fitted to the declared distributions.
std::optional<Failure> EvaluationRun::trials(int w, const ResolvedPlan& plan, const Layout& l,
                                             const std::vector<Criterion>& criteria, WorkloadMeasurement& wm,
                                             double allowance) {
  auto phase = clock_.enter("trials");
  const int count = s_.options().trials;
  const uint64_t seed = s_.options().seed;
  bool declared_passed = false;
  for (int t = 0; t < count; ++t) {
    const bool perturbed = t > 0 || count == 1;
    auto e = reference(w, trial_seed(seed, w, t), perturbed);
    const std::string moved = e->perturbation.empty() ? "" : " (perturbed inputs: " + e->perturbation.describe() + ")";
    auto f = trial(plan, l, *e, criteria, wm, allowance, false, "in trial " + std::to_string(t + 1) + moved);
    if (!f) {
      declared_passed = declared_passed || moved.empty();
      ++wm.trials;
      continue;
    }
    if (moved.empty() || !wrong_values(f->status)) return f;
    if (!declared_passed) {
      WorkloadMeasurement scratch;
      auto d0 = reference(w, trial_seed(seed, w, 0), false);
      declared_passed = !trial(plan, l, *d0, criteria, scratch, allowance, false, "on the declared distributions");
    }
    if (!declared_passed) return f;
    return distribution_fitted(*f);
  }
  return std::nullopt;
}

// The timed runs on two declared draws in two buffer sets, in turn; each set's last outputs are
// checked against its own draw afterwards.
std::optional<Failure> EvaluationRun::timed_runs(int w, const ResolvedPlan& plan, const Layout& l,
                                                 const std::vector<Criterion>& criteria, WorkloadMeasurement& wm,
                                                 double allowance) {
  const uint64_t seed = s_.options().seed;
  const std::shared_ptr<OracleEntry> draws[2] = {reference(w, trial_seed(seed, w, 0), false),
                                                 reference(w, trial_seed(seed, w, kTimingDraw), false)};
  auto phase = clock_.enter("timed_runs");
  {
    auto copying = clock_.enter("inputs");
    s_.prepare(plan, l, {draws[0].get(), draws[1].get()});
  }
  Json req = s_.request("time", module_, plan, l);
  req["sets"] = Json::array({Json(l.offsets(0)), Json(l.offsets(1))});
  req["poison"] = Json::array({s_.poison_list(plan, l, 0), s_.poison_list(plan, l, 1)});
  const TimingConfig tc = s_.timing_config();
  req["timing"] = timing_request(tc);
  Json answer;
  const double deadline = s_.options().deadline_floor_s + tc.max_seconds * 2 + (tc.warmup + tc.min_reps + 1) * allowance;
  if (auto f = s_.ask(req, deadline, answer, m_)) return f;
  const Json& timing = answer.at("timing");
  wm.candidate = figures_of(timing);
  m_.gpu_seconds += timing.value("gpu_ms_total", 0.0) * 1e-3;
  if (auto f = expected_kernels(plan, timing)) return f;
  for (int set = 0; set < 2; ++set) {
    auto f = checked(plan, l, set, *draws[set], criteria, wm, "in the timed runs");
    if (!f) continue;
    if (f->status == EvalStatus::InputModified || f->status == EvalStatus::OutOfBounds) return f;
    return Failure{EvalStatus::TimedRunWrong, "right when checked, wrong while timed: " + f->error};
  }
  return std::nullopt;
}

// The same runs on one buffer set twice: reset before each launch as the timed runs are (outputs and
// scratch poisoned, module memory as loaded), then with nothing reset (buffers and module memory as
// the last launch left them, the same inputs). A kernel that is much faster so remembers instead
// of computing. Both timings share set, repetitions and protocol, so that nothing but the state
// differs (the timed runs alternate two sets and time longer: a small kernel's time differs
// between the two protocols by itself).
std::optional<Failure> EvaluationRun::state_probe(const ResolvedPlan& plan, const Layout& l,
                                                  const WorkloadMeasurement& wm, double allowance) {
  auto phase = clock_.enter("state_probe");
  const int reps = short_reps(wm.candidate.median_ms);
  Json reset = s_.request("time", module_, plan, l);
  reset["sets"] = Json::array({Json(l.offsets(0))});
  reset["poison"] = Json::array({s_.poison_list(plan, l, 0)});
  double reset_ms = 0;
  if (auto f = short_median(std::move(reset), reps, allowance, reset_ms)) return f;
  return kept_state_gain(plan, l, reps, reset_ms, allowance);
}

// The probe's second half: `reps` runs on buffer set 0 with nothing reset (buffers and module memory
// as the last launch left them, the same inputs), against `reset_ms`, the median of the same runs
// reset before each launch.
std::optional<Failure> EvaluationRun::kept_state_gain(const ResolvedPlan& plan, const Layout& l, int reps,
                                                      double reset_ms, double allowance) {
  Json kept = s_.request("time", module_, plan, l);
  kept["keep_state"] = true;
  kept["poison"] = Json::array();
  double kept_ms = 0;
  if (auto f = short_median(std::move(kept), reps, allowance, kept_ms)) return f;
  if (!(kept_ms < kStateGainLimit * reset_ms)) return std::nullopt;
  return Failure{EvalStatus::Stateful,
                 "ran " + number("%.1fx", reset_ms / std::max(kept_ms, 1e-9)) + " faster (" + number("%.4f ms", kept_ms) +
                     " against " + number("%.4f ms", reset_ms) +
                     ") when its buffers and module memory kept what earlier launches left there: it remembers "
                     "between launches instead of computing (kevo poisons scratch and resets module memory before "
                     "every timed launch, so that gains nothing)"};
}

// The median of a short timing request of `reps` runs after one warm-up.
std::optional<Failure> EvaluationRun::short_median(Json req, int reps, double allowance, double& ms) {
  req["timing"] = short_timing(reps);
  Json answer;
  auto f = s_.ask(req, s_.options().deadline_floor_s + (reps + 3) * allowance + 10, answer, m_);
  if (!f) ms = answer.at("timing").at("median_ms").get<double>();
  return f;
}

std::optional<Failure> EvaluationRun::trial(const ResolvedPlan& plan, const Layout& l, const OracleEntry& e,
                                            const std::vector<Criterion>& criteria, WorkloadMeasurement& wm,
                                            double allowance, bool reload, const std::string& when) {
  {
    auto copying = clock_.enter("inputs");
    s_.prepare(plan, l, {&e});
  }
  Json req = s_.request("run", module_, plan, l);
  if (reload) req["reload"] = true;
  Json answer;
  if (auto f = s_.ask(req, s_.options().deadline_floor_s + allowance, answer, m_)) return f;
  return checked(plan, l, 0, e, criteria, wm, when);
}

// Every kernel the plan launches and nothing else, on the plan's stream. A library call may run
// kernels on streams of its own (cuDNN splits grouped convolutions over internal streams and joins
// them back); the timer waits for the whole context, so they are timed, and only a plan of
// kevo's kernels alone must keep to its stream.
std::optional<Failure> EvaluationRun::expected_kernels(const ResolvedPlan& plan, const Json& timing) {
  int kernels = 0, library = 0;
  for (const ResolvedStep& s : plan.steps) (std::holds_alternative<ResolvedKernel>(s) ? kernels : library)++;
  int lo = timing.at("kernels_min").get<int>(), hi = timing.at("kernels_max").get<int>();
  int foreign = timing.at("foreign_stream_kernels").get<int>();
  if (timing.value("copies_max", 0) > 0)
    return Failure{EvalStatus::UnexpectedKernels, "CUPTI saw device copies the plan did not ask for"};
  if (foreign > 0 && library == 0)
    return Failure{EvalStatus::UnexpectedKernels, std::to_string(foreign) + " kernels ran on a stream the plan did not use"};
  bool ok = library == 0 ? (lo == kernels && hi == kernels) : lo >= kernels + library;
  if (!ok)
    return Failure{EvalStatus::UnexpectedKernels,
                   "CUPTI saw " + std::to_string(lo) + (lo == hi ? "" : "-" + std::to_string(hi)) +
                       " kernels per run; the plan launches " + std::to_string(kernels) +
                       (library ? " plus " + std::to_string(library) + " library calls" : "")};
  return std::nullopt;
}

// A speedup too good to take on trust: a fresh module, a fresh seed, the held-back (or the
// largest) workload, one trial and a short timed run whose outputs are checked too.
bool EvaluationRun::held_back_check(const std::vector<int>& ws) {
  m_.held_back_checked = true;
  int w = s_.options().held_back;
  if (w < 0) {
    w = ws.front();
    for (int i : ws)
      if (task_.bytes_moved(task_.workloads[static_cast<size_t>(i)]) >
          task_.bytes_moved(task_.workloads[static_cast<size_t>(w)]))
        w = i;
  }
  const Workload& wl = task_.workloads[static_cast<size_t>(w)];
  auto failed = [&](const std::string& why) {
    fail({EvalStatus::HeldBackFailed, "a " + std::to_string(m_.speedup).substr(0, 5) +
                                          "x speedup did not hold up on the held-back workload " + std::to_string(w) +
                                          ": " + why});
    return false;
  };
  ResolvedPlan plan;
  try {
    plan = resolve_plan(job_.candidate, task_, wl, s_.limits());
  } catch (const InputError& e) {
    return failed(e.what());
  }
  const uint64_t seed = std::random_device{}() | uint64_t{1} << 40;
  auto e = reference(w, seed, false, /*cache=*/false);
  auto phase = clock_.enter("held_back");
  const Layout l = layout_of(plan);
  s_.ensure_arena(l.bytes);
  const std::vector<Criterion> criteria = s_.discrimination(task_, w).criteria(task_.tolerance);
  WorkloadMeasurement wm;
  const double allowance = s_.launch_allowance_s(s_.eager(task_, w).median_ms);
  if (auto f = trial(plan, l, *e, criteria, wm, allowance, /*reload=*/true, "(fresh seed)")) return failed(f->error);
  if (auto f = short_timed_run(plan, l, *e, criteria, wm, allowance, short_timing(), ShortRun::AfterTrial))
    return failed(f->error);
  return true;
}

// Timed runs on buffer set 0 (its inputs those of `e`, copied there before), then its outputs
// checked against `e`: the held-back check's, after its trial, reset before every launch (wrong
// outputs then are timed_run_wrong), and the screen's, with the state of every launch kept.
std::optional<Failure> EvaluationRun::short_timed_run(const ResolvedPlan& plan, const Layout& l, const OracleEntry& e,
                                                      const std::vector<Criterion>& criteria, WorkloadMeasurement& wm,
                                                      double allowance, const Json& timing, ShortRun kind) {
  Json req = s_.request("time", module_, plan, l);
  req["sets"] = Json::array({Json(l.offsets(0))});
  if (kind == ShortRun::StateKept) {
    req["keep_state"] = true;
    req["poison"] = Json::array();
  } else {
    req["poison"] = Json::array({s_.poison_list(plan, l, 0)});
  }
  req["timing"] = timing;
  Json answer;
  const int runs = timing.at("warmup").get<int>() + timing.at("max_reps").get<int>();
  if (auto f = s_.ask(req, s_.options().deadline_floor_s + (runs + 2) * allowance + 10, answer, m_)) return f;
  const Json& t = answer.at("timing");
  wm.candidate = figures_of(t);
  m_.gpu_seconds += t.value("gpu_ms_total", 0.0) * 1e-3;
  if (auto f = expected_kernels(plan, t)) return f;
  auto f = checked(plan, l, 0, e, criteria, wm, "in the timed runs");
  if (!f || kind == ShortRun::StateKept || f->status == EvalStatus::InputModified || f->status == EvalStatus::OutOfBounds)
    return f;
  return Failure{EvalStatus::TimedRunWrong, "right when checked, wrong while timed: " + f->error};
}

}  // namespace kevo::eval
