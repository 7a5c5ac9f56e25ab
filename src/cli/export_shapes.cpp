// Verification of a shape-general export: draw unseen shapes the header would accept, run the
// candidate on each through kevo's own evaluation (NVRTC build, GPU worker, checked-only
// workloads, the task's tolerance), refuse on the first failure.
#include "cli/export_shapes.h"

#include <algorithm>
#include <ctime>

#include "core/error.h"
#include "eval/compile_pool.h"
#include "eval/cuda_driver.h"
#include "eval/runner.h"

namespace kevo::cli {

struct ShapeVerifier::State {
  std::unique_ptr<eval::Runner> runner;
};

ShapeVerifier::ShapeVerifier(GeneralExportOptions o) : o_(std::move(o)), s_(std::make_unique<State>()) {}
ShapeVerifier::~ShapeVerifier() = default;

namespace {

[[noreturn]] void refuse(const Task& task, const std::string& what) {
  throw InputError(Location{task.file, 0, 0}, "export", what + " (export for the validated shapes only: drop --general)");
}

std::string today() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

}  // namespace

store::ExportShapes ShapeVerifier::verify(Task& task, const Candidate& c, const store::VariantRecord& v) {
  if (auto r = o_.ranges.find(task.name); r != o_.ranges.end()) search::take_axis_ranges(task, r->second);
  const ShapeConditions cond = search::kernel_conditions(task, v);
  if (!cond.pinned.empty()) {
    std::string facts;
    for (const std::string& p : cond.pinned) facts += (facts.empty() ? "" : ", ") + p;
    refuse(task, "the kernel's constraints read " + facts + ", which has no expression over the axes");
  }
  const std::vector<search::AxisValues> shapes = search::draw_unseen_shapes(
      task, [&](const search::AxisValues& s) { return search::header_admits(task, c, cond.conditions, s); }, o_.draw);
  if (shapes.empty()) refuse(task, "the axis ranges and the kernel's conditions admit no shape beyond the workloads");
  if (!eval::cuda_driver_status().available)
    refuse(task, "verifying " + std::to_string(shapes.size()) + " unseen shapes needs a CUDA GPU: " +
                     eval::cuda_driver_status().error);
  if (!s_->runner) {
    eval::EvalOptions eo;
    eo.trials = o_.trials;
    eo.seed = o_.draw.seed;
    eo.gpus = o_.gpus;
    try {
      s_->runner = std::make_unique<eval::Runner>(eo);
    } catch (const std::exception& e) {
      refuse(task, std::string("no GPU to verify on: ") + e.what());
    }
  }
  eval::BuildRequest req;
  req.source = c.source;
  req.name_expressions = c.kernel_names();
  req.arch = s_->runner->arch();
  eval::CompilePoolConfig pc;
  pc.workers = 1;
  eval::CompilePool compiler(pc);
  const eval::BuildResult built = compiler.build_all({req}).front();
  // An evaluation stops at its first failing workload. A shape whose check cannot tell outputs that
  // ignore the inputs (one element of relu, say: the reference's mean is the answer) says nothing
  // of the kernel: it is left out of the verified shapes and the shapes after it run again.
  std::vector<search::AxisValues> todo = shapes, verified;
  int unverifiable = 0;
  while (!todo.empty()) {
    const Task checked = search::with_checked_shapes(task, todo);
    const eval::Measurement m = s_->runner->evaluate({eval::EvalJob{&checked, c, built, {}}}).front();
    size_t next = todo.size();
    for (const eval::WorkloadMeasurement& w : m.workloads) {
      const search::AxisValues& shape = todo[static_cast<size_t>(w.workload)];
      if (w.status == eval::EvalStatus::Ok) {
        verified.push_back(shape);
      } else if (w.status == eval::EvalStatus::Unverifiable) {
        ++unverifiable;
        next = static_cast<size_t>(w.workload) + 1;
      } else {
        refuse(task, "fails on the unseen shape " + search::shape_text(task, shape) + ": " + eval::to_string(w.status) +
                         (m.error.empty() ? "" : ": " + m.error));
      }
    }
    if (m.ok()) break;
    if (next == todo.size() && m.status != eval::EvalStatus::Unverifiable)
      refuse(task, "verification on unseen shapes failed: " + m.error);
    todo.erase(todo.begin(), todo.begin() + static_cast<std::ptrdiff_t>(std::min(next, todo.size())));
  }
  if (verified.empty())
    refuse(task, "none of the " + std::to_string(shapes.size()) + " unseen shapes could be verified (" +
                     std::to_string(unverifiable) + " too small for the task's check to tell)");
  store::ExportShapes out;
  out.general = true;
  out.kernel = cond.conditions;
  out.verified = verified;
  out.verified_on = "GPU " + s_->runner->device_name() + ", " + today() + ", " + std::to_string(o_.trials) +
                    " trials per shape, the task's tolerance" +
                    (unverifiable ? "; " + std::to_string(unverifiable) + " more too small for the check to tell" : "");
  return out;
}

}  // namespace kevo::cli
