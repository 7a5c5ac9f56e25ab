// The conditions every plan needs and the guard code of a shape-general header: each condition
// becomes one C++ comparison over the launcher's names, commented with why it is there.
#include "store/export_shapes.h"

#include <algorithm>
#include <sstream>

#include "store/export_text.h"

namespace kevo::store::exporter {

namespace {

void add(std::vector<ShapeCondition>& out, const std::string& lhs, const std::string& op, const std::string& rhs,
         const std::string& why) {
  try {  // a literal-only condition holds (resolve_plan checked the plan) or says nothing new
    if (AxisExpr::parse(lhs).names().empty() && AxisExpr::parse(rhs).names().empty()) return;
  } catch (const std::invalid_argument&) {
  }
  ShapeCondition c{lhs, op, rhs, why};
  for (const ShapeCondition& o : out)
    if (o.text() == c.text()) return;
  out.push_back(std::move(c));
}

// "max_shared" (plan_fits_device's parameter) is no axis: the launcher's names know the rest.
std::string side_cpp(const std::string& side, const LauncherNames& L) {
  return side == "max_shared" ? side : L.cpp(side);
}

std::string cond_cpp(const ShapeCondition& cond, const LauncherNames& L) {
  return side_cpp(cond.lhs, L) + " " + cond.op + " " + side_cpp(cond.rhs, L);
}

// The predicate's body: the conditions joined by &&, each on its own line with its reason; every
// parameter (void)-cast first, as a condition list may not read them all.
void write_predicate(std::ostringstream& h, const std::string& signature, const std::vector<std::string>& params,
                     const std::vector<ShapeCondition>& conds, const LauncherNames& L) {
  h << signature << " {\n";
  if (!params.empty()) {
    h << " ";
    for (const std::string& p : params) h << " (void)" << p << ";";
    h << "\n";
  }
  if (conds.empty()) {
    h << "  return true;\n}\n\n";
    return;
  }
  for (size_t i = 0; i < conds.size(); ++i)
    h << (i == 0 ? "  return " : "         && ") << "(" << cond_cpp(conds[i], L) << ")"
      << (i + 1 == conds.size() ? ";" : "") << "  // " << one_line(conds[i].why) << "\n";
  h << "}\n\n";
}

}  // namespace

std::vector<ShapeCondition> plan_conditions(const Task& task, const Candidate& c) {
  std::vector<ShapeCondition> out;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list)
      for (const Dim& d : t.shape)
        if (!d.expr.empty()) add(out, d.expr, ">=", "1", "every dim of " + t.name + " is positive");
  for (const ScratchBuffer& s : c.plan.buffers)
    for (const PlanExpr& e : s.shape) add(out, e.expr.text(), ">=", "0", "scratch " + s.name + " has a size");
  for (const Step& step : c.plan.steps) {
    const auto* k = std::get_if<KernelStep>(&step.op);
    if (!k) continue;
    static const char* const kGridMax[] = {"2147483647", "65535", "65535"};
    static const char* const kBlockMax[] = {"1024", "1024", "64"};
    for (size_t i = 0; i < k->grid.size(); ++i) {
      add(out, k->grid[i].expr.text(), ">=", "1", k->kernel + ": a grid dim is positive");
      add(out, k->grid[i].expr.text(), "<=", kGridMax[i], k->kernel + ": CUDA's grid limit");
    }
    std::string threads;
    for (size_t i = 0; i < k->block.size(); ++i) {
      add(out, k->block[i].expr.text(), ">=", "1", k->kernel + ": a block dim is positive");
      add(out, k->block[i].expr.text(), "<=", kBlockMax[i], k->kernel + ": CUDA's block limit");
      threads += (threads.empty() ? "" : " * ") + ("(" + k->block[i].expr.text() + ")");
    }
    if (k->block.size() > 1) add(out, threads, "<=", "1024", k->kernel + ": 1024 threads per block");
    add(out, k->shared_bytes.expr.text(), ">=", "0", k->kernel + ": dynamic shared memory has a size");
    add(out, k->shared_bytes.expr.text(), "<=", "232448", k->kernel + ": dynamic shared memory within 227 KiB");
    for (const KernelArg& a : k->args)
      if (a.kind == ArgKind::Int32) {
        add(out, a.value.expr.text(), ">=", "-2147483648", k->kernel + ": an int argument fits int32");
        add(out, a.value.expr.text(), "<=", "2147483647", k->kernel + ": an int argument fits int32");
      }
  }
  return out;
}

bool reads_num_sms(const ShapeCondition& cond, const Task& task) {
  for (const Axis& a : task.axes)
    if (a.name == kNumSms) return false;  // an axis of that name is the task's
  for (const std::string* side : {&cond.lhs, &cond.rhs}) {
    const AxisExpr e = AxisExpr::parse(*side);
    if (std::find(e.names().begin(), e.names().end(), kNumSms) != e.names().end()) return true;
  }
  return false;
}

namespace {

// The conditions that need the GPU: those reading num_sms, and shared memory above 48 KiB against
// the device's opt-in maximum ("max_shared").
std::vector<ShapeCondition> device_conditions(const Task& task, const Candidate& c, const LauncherNames& L) {
  std::vector<ShapeCondition> out;
  for (const ShapeCondition& cond : plan_conditions(task, c))
    if (reads_num_sms(cond, task)) out.push_back(cond);
  for (const Step& step : c.plan.steps)
    if (const auto* k = std::get_if<KernelStep>(&step.op))
      if (!(L.is_literal(k->shared_bytes.expr) && AxisExpr::parse(k->shared_bytes.expr.text()).eval({}) <= 49152))
        out.push_back({k->shared_bytes.expr.text(), "<=", "max_shared", k->kernel + ": within the device's opt-in maximum"});
  return out;
}

}  // namespace

bool needs_device_checks(const Task& task, const Candidate& c, const LauncherNames& L) {
  return !device_conditions(task, c, L).empty();
}

std::string general_guard_code(const Task& task, const Candidate& c, const std::vector<ShapeCondition>& kernel,
                               const std::vector<std::map<std::string, int64_t>>& verified, const LauncherNames& L) {
  // The names every predicate is written in; "max_shared" is reserved by Names.
  std::ostringstream h;
  std::vector<std::string> axis_list;
  for (const Axis* a : L.var_axes()) axis_list.push_back(L.axis_name(a->name));
  if (!verified.empty()) {
    h << "// The unseen shapes kevo ran this kernel on before exporting it, each checked against the\n"
      << "// reference within the task's tolerance (they all pass supported_shape()).\n"
      << "constexpr Workload kVerifiedWorkloads[] = {\n";
    for (const auto& shape : verified) {
      std::vector<std::string> vals;
      for (const Axis* a : L.var_axes()) vals.push_back(std::to_string(shape.at(a->name)));
      h << "    {" << joined(vals) << "},\n";
    }
    h << "};\n\n";
  }
  // The axis ranges of the contract.
  std::vector<ShapeCondition> ranges;
  for (const Axis* a : L.var_axes()) {
    const std::string why = "axes." + a->name + (a->declared ? " as the contract declares" : ": 1 to the largest workload's");
    ranges.push_back({a->name, ">=", std::to_string(a->min), why});
    ranges.push_back({a->name, "<=", std::to_string(a->max), why});
    if (a->multiple_of > 1) ranges.push_back({a->name + " % " + std::to_string(a->multiple_of), "==", "0", why});
  }
  std::vector<ShapeCondition> fits;
  for (const ShapeCondition& cond : plan_conditions(task, c))
    if (!reads_num_sms(cond, task)) fits.push_back(cond);

  h << "// The shapes run() accepts: inside the contract's axis ranges, within what every plan needs\n"
    << "// (positive sizes, CUDA's grid and block limits, int32 arguments), and under the kernel's own\n"
    << "// conditions (its template's constraints with its knobs, its family's assumptions). Checked in\n"
    << "// this order, so that each expression is evaluated on axes already known to be in range.\n";
  write_predicate(h, "constexpr bool in_axis_ranges(" + L.axis_params() + ")", axis_list, ranges, L);
  write_predicate(h, "constexpr bool plan_fits(" + L.axis_params() + ")", axis_list, fits, L);
  write_predicate(h, "constexpr bool conditions_hold(" + L.axis_params() + ")", axis_list, kernel, L);
  h << "constexpr bool supported_shape(" << L.axis_params() << ") {\n"
    << "  return in_axis_ranges(" << L.axis_args() << ") && plan_fits(" << L.axis_args() << ") && conditions_hold("
    << L.axis_args() << ");\n}\n\n";
  // What needs the device: the SM count (persistent grids) and the opt-in shared memory maximum.
  const std::vector<ShapeCondition> at_run = device_conditions(task, c, L);
  const std::string params = L.axis_params();
  std::vector<std::string> all = axis_list;
  const bool sms_is_axis = std::find(axis_list.begin(), axis_list.end(), L.num_sms()) != axis_list.end();
  if (!sms_is_axis) all.push_back(L.num_sms());
  all.push_back("max_shared");
  if (at_run.empty()) return h.str();  // nothing depends on the GPU: run() asks it nothing
  h << "// What depends on the GPU, checked by run() before any launch: launches sized by its SM count,\n"
    << "// dynamic shared memory above 48 KiB against the device's opt-in maximum.\n";
  write_predicate(h, "inline bool plan_fits_device(" + params + (params.empty() ? "" : ", ") +
                         (sms_is_axis ? "" : "int64_t " + L.num_sms() + ", ") + "int64_t max_shared)",
                  all, at_run, L);
  return h.str();
}

}  // namespace kevo::store::exporter
