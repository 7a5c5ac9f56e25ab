// Verification of a shape-general export: draw unseen shapes the header would accept, run the
// candidate on each through kevo's own evaluation (NVRTC build, GPU worker, checked-only
// workloads, the task's tolerance), refuse on the first failure.
#include "search/general_export.h"

#include <algorithm>
#include <ctime>

#include "core/error.h"
#include "eval/compile_pool.h"
#include "eval/cuda_driver.h"
#include "eval/runner.h"

namespace kevo::search {

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

// The shapes the header would accept beyond the workloads, with the kernel's conditions.
std::vector<AxisValues> shapes_to_verify(Task& task, const Candidate& c, const store::VariantRecord& v,
                                         const GeneralExportOptions& o, ShapeConditions* cond) {
  if (auto r = o.ranges.find(task.name); r != o.ranges.end()) take_axis_ranges(task, r->second);
  *cond = kernel_conditions(task, v);
  if (!cond->pinned.empty()) {
    std::string facts;
    for (const std::string& p : cond->pinned) facts += (facts.empty() ? "" : ", ") + p;
    refuse(task, "the kernel's constraints read " + facts + ", which has no expression over the axes");
  }
  const std::vector<ShapeCondition> conditions = cond->conditions;
  std::vector<AxisValues> shapes =
      draw_unseen_shapes(task, [&](const AxisValues& s) { return header_admits(task, c, conditions, s); }, o.draw);
  if (shapes.empty()) refuse(task, "the axis ranges and the kernel's conditions admit no shape beyond the workloads");
  return shapes;
}

}  // namespace

store::ExportShapes verify_unseen_shapes(Task& task, const Candidate& c, const store::VariantRecord& v,
                                         const GeneralExportOptions& o, const CheckShapes& check,
                                         const std::function<std::string()>& device) {
  ShapeConditions cond;
  const std::vector<AxisValues> shapes = shapes_to_verify(task, c, v, o, &cond);
  // A measurement stops at its first failing workload. A shape whose check cannot tell outputs
  // that ignore the inputs (one element of relu, say: the reference's mean is the answer) says
  // nothing of the kernel: it is left out of the verified shapes and the shapes after it run again.
  std::vector<AxisValues> todo = shapes, verified;
  int unverifiable = 0;
  while (!todo.empty()) {
    const eval::Measurement m = check(with_checked_shapes(task, todo));
    size_t next = todo.size();
    for (const eval::WorkloadMeasurement& w : m.workloads) {
      const AxisValues& shape = todo[static_cast<size_t>(w.workload)];
      if (w.status == eval::EvalStatus::Ok) {
        verified.push_back(shape);
      } else if (w.status == eval::EvalStatus::Unverifiable) {
        ++unverifiable;
        next = static_cast<size_t>(w.workload) + 1;
      } else {
        refuse(task, "fails on the unseen shape " + shape_text(task, shape) + ": " + eval::to_string(w.status) +
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
  out.verified_on = device() + ", " + today() + ", " + std::to_string(o.trials) + " trials per shape, the task's tolerance" +
                    (unverifiable ? "; " + std::to_string(unverifiable) + " more too small for the check to tell" : "");
  return out;
}

struct ShapeVerifier::State {
  std::unique_ptr<eval::Runner> runner;
};

ShapeVerifier::ShapeVerifier(GeneralExportOptions o) : o_(std::move(o)), s_(std::make_unique<State>()) {}
ShapeVerifier::~ShapeVerifier() = default;

store::ExportShapes ShapeVerifier::verify(Task& task, const Candidate& c, const store::VariantRecord& v) {
  std::unique_ptr<eval::BuildResult> built;
  auto check = [&](const Task& checked) {
    if (!s_->runner) {
      if (!eval::cuda_driver_status().available)
        refuse(task, "verifying " + std::to_string(checked.workloads.size()) + " unseen shapes needs a CUDA GPU: " +
                         eval::cuda_driver_status().error);
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
    if (!built) {
      eval::BuildRequest req;
      req.source = c.source;
      req.name_expressions = c.kernel_names();
      req.arch = s_->runner->arch();
      eval::CompilePoolConfig pc;
      pc.workers = 1;
      eval::CompilePool compiler(pc);
      built = std::make_unique<eval::BuildResult>(compiler.build_all({req}).front());
    }
    return s_->runner->evaluate({eval::EvalJob{&checked, c, *built, {}}}).front();
  };
  return verify_unseen_shapes(task, c, v, o_, check, [&] { return "GPU " + s_->runner->device_name(); });
}

}  // namespace kevo::search
