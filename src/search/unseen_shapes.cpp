// Drawing unseen shapes for a shape-general export, and the conditions its header would check.
#include "search/unseen_shapes.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "core/error.h"
#include "lower/lower.h"
#include "mutate/mutation.h"
#include "mutate/space.h"
#include "store/export_shapes.h"

namespace kevo::search {

ShapeConditions kernel_conditions(const Task& task, const store::VariantRecord& v) {
  if (v.space.empty()) return {};
  auto spaces = lower::lower(task);
  const mutate::DesignSpace* space = mutate::find_space(spaces, v.space);
  if (!space) {
    ShapeConditions none;
    none.pinned.push_back("space " + v.space + " (this kevo does not lower the task onto it)");
    return none;
  }
  return mutate::shape_conditions(*space, {v.space, v.genome});
}

bool header_admits(const Task& task, const Candidate& c, const std::vector<ShapeCondition>& kernel, const AxisValues& shape) {
  for (const Axis& a : task.axes)
    if (!a.value && (!shape.count(a.name) || !a.admits(shape.at(a.name)))) return false;
  Workload w;
  w.axes = shape;
  const std::map<std::string, int64_t> all = task.axis_values(w);
  std::map<std::string, int64_t> with_sms = all;
  with_sms.emplace(kNumSms, DeviceLimits{}.num_sms);
  for (const ShapeCondition& cond : store::exporter::plan_conditions(task, c))
    if (!cond.holds(with_sms)) return false;
  for (const ShapeCondition& cond : kernel)
    if (!cond.holds(all)) return false;
  try {
    for (const auto* list : {&task.inputs, &task.outputs})
      for (const TensorDecl& t : *list)
        for (int64_t d : task.shape_of(t, w))
          if (d <= 0) return false;
    Graph g = task.graph(w);
    if (g.outputs.size() != task.outputs.size()) return false;
    for (size_t k = 0; k < g.outputs.size(); ++k)
      if (g.values[g.outputs[k]].shape != task.shape_of(task.outputs[k], w)) return false;
    resolve_plan(c, task, w, DeviceLimits{});
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

namespace {

int64_t round_to(const Axis& a, int64_t v) {  // the nearest admitted multiple at or below v (min when none)
  v = std::clamp(v, a.min, a.max);
  int64_t r = v / a.multiple_of * a.multiple_of;
  if (r < a.min) r += a.multiple_of;
  return std::min(r, a.max);
}

// Awkward sizes of one axis, in the order they are tried.
std::vector<int64_t> awkward(const Axis& a) {
  std::vector<int64_t> v{1, a.min, a.max, a.min + a.multiple_of, a.max / a.multiple_of * a.multiple_of,
                         a.max - a.multiple_of};
  if (a.multiple_of == 1) {
    for (int64_t p = 4; p <= a.max && p <= (int64_t{1} << 40); p *= 4) {  // one off a power of two
      v.push_back(p - 1);
      v.push_back(p + 1);
    }
    v.push_back(a.max % 2 == 0 ? a.max - 1 : a.max);  // the largest odd size
    v.push_back(std::max<int64_t>(a.min, 3));
  }
  std::vector<int64_t> out;
  for (int64_t x : v)
    if (a.admits(x) && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

}  // namespace

std::vector<AxisValues> draw_unseen_shapes(const Task& task, const std::function<bool(const AxisValues&)>& admits,
                                           const UnseenShapeOptions& o) {
  std::vector<const Axis*> vars;
  for (const Axis& a : task.axes)
    if (!a.value) vars.push_back(&a);
  std::set<AxisValues> seen;
  for (const Workload& w : task.workloads) seen.insert(w.axes);
  std::vector<AxisValues> out;
  auto offer = [&](const AxisValues& s) {
    if (static_cast<int>(out.size()) >= o.count || !seen.insert(s).second) return;
    Workload w;
    w.axes = s;
    try {
      if (task.bytes_moved(w) > o.max_bytes) return;
    } catch (const std::exception&) {
      return;  // a size that overflows
    }
    if (admits(s)) out.push_back(s);
  };
  std::mt19937_64 rng(o.seed);
  // The awkward ones: one axis awkward, the others at a workload's values (taken in turn), and
  // the random-from-range for the others when the workload's values fall outside.
  const int awkward_share = std::max(1, o.count * 2 / 3);
  size_t turn = 0;
  for (const Axis* a : vars)
    for (int64_t v : awkward(*a)) {
      if (static_cast<int>(out.size()) >= awkward_share) break;
      AxisValues s = task.workloads[turn++ % task.workloads.size()].axes;
      s[a->name] = v;
      offer(s);
    }
  AxisValues lo, hi;
  for (const Axis* a : vars) lo[a->name] = a->min, hi[a->name] = a->max;
  if (!vars.empty()) {
    offer(lo);
    offer(hi);
  }
  // Random: log-uniform per axis. Stop after enough tries (the constraints may admit few).
  for (int tries = 0; tries < 200 * o.count && static_cast<int>(out.size()) < o.count && !vars.empty(); ++tries) {
    AxisValues s;
    for (const Axis* a : vars) {
      const double l = std::log(static_cast<double>(a->min)), h = std::log(static_cast<double>(a->max));
      const double x = std::exp(std::uniform_real_distribution<double>(l, h)(rng));
      s[a->name] = round_to(*a, static_cast<int64_t>(std::llround(x)));
    }
    offer(s);
  }
  return out;
}

Task with_checked_shapes(const Task& task, const std::vector<AxisValues>& shapes) {
  Task t = task;
  t.workloads.clear();
  for (const AxisValues& s : shapes) {
    Workload w;
    w.axes = s;
    w.timed = false;
    w.loc = task.workloads.front().loc;
    t.workloads.push_back(std::move(w));
  }
  return t;
}

void take_axis_ranges(Task& task, const Task& from) {
  auto fail = [&](const std::string& what) {
    throw InputError(Location{from.file, 0, 0}, "axes", "cannot lend its axis ranges to the campaign's '" + task.name + "': " + what);
  };
  if (from.name != task.name) fail("it is task '" + from.name + "'");
  if (from.axes.size() != task.axes.size()) fail("other axes");
  for (size_t i = 0; i < task.axes.size(); ++i)
    if (from.axes[i].name != task.axes[i].name || from.axes[i].value != task.axes[i].value) fail("other axes");
  if (from.workloads.size() != task.workloads.size()) fail("other workloads");
  for (size_t i = 0; i < task.workloads.size(); ++i)
    if (from.workloads[i].axes != task.workloads[i].axes) fail("other workloads");
  for (size_t i = 0; i < task.axes.size(); ++i) {
    task.axes[i].min = from.axes[i].min;
    task.axes[i].max = from.axes[i].max;
    task.axes[i].multiple_of = from.axes[i].multiple_of;
    task.axes[i].declared = from.axes[i].declared;
  }
}

std::string shape_text(const Task& task, const AxisValues& shape) {
  std::string s;
  for (const Axis& a : task.axes)
    if (!a.value && shape.count(a.name)) s += (s.empty() ? "" : ", ") + a.name + "=" + std::to_string(shape.at(a.name));
  return s.empty() ? "(no var axes)" : s;
}

}  // namespace kevo::search
