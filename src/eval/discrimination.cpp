// What a task's tolerance accepts that ignores the inputs, and the criterion that does not.
#include "eval/discrimination.h"

#include <algorithm>
#include <cstdio>

namespace kevo::eval {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

// A tensor of `ref`'s element count holding `value` everywhere, without the memory of one.
torch::Tensor filled_like(const torch::Tensor& ref, double value) {
  return torch::full({1}, value, ref.options()).expand({ref.numel()});
}

// The answers a kernel could write without reading its inputs: zeros, one constant (the declared
// draw's mean), one fixed output (the declared draw's, on the perturbed draws). With `everywhere`,
// those `c` accepts on every draw (a kernel writing them would pass every trial: no check can be
// built); without, those it accepts on any draw (where the check must be made stricter).
std::vector<std::string> accepted(const torch::Tensor& declared, const torch::Tensor& declared2,
                                  const std::vector<const torch::Tensor*>& perturbed, const Criterion& c,
                                  bool everywhere) {
  auto judged = [&](const auto& answer_for, const std::vector<const torch::Tensor*>& draws) {
    int passed = 0;
    for (const torch::Tensor* t : draws) passed += passes(answer_for(*t), *t, c);
    return everywhere ? passed == static_cast<int>(draws.size()) : passed > 0;
  };
  const std::vector<const torch::Tensor*> all = {&declared, &declared2, perturbed[0], perturbed[1]};
  std::vector<std::string> out;
  if (judged([](const torch::Tensor& t) { return filled_like(t, 0); }, all)) out.push_back("zeros");
  if (declared.is_floating_point() && declared.numel() > 1) {  // a scalar is its own mean
    const double m = mean_of(declared);
    if (judged([&](const torch::Tensor& t) { return filled_like(t, m); }, all)) out.push_back("the constant " + number(m));
  }
  std::vector<const torch::Tensor*> fixed_on = perturbed;
  if (everywhere) fixed_on.push_back(&declared2);
  if (judged([&](const torch::Tensor&) { return declared; }, fixed_on))
    out.push_back("a fixed output (the declared draw's, on other draws)");
  return out;
}

// Whether `ref`, the reference in the contract's dtype, misses `exact` (the same inputs in
// float64) by more than `scaled` allows: its outputs are below what the dtype resolves.
bool rounding_noise(const torch::Tensor& ref, const torch::Tensor& exact, const Criterion& scaled) {
  if (!ref.is_floating_point() || ref.numel() != exact.numel()) return false;
  return !passes(ref, exact.to(torch::kFloat64), scaled);
}

// Whether the task computes in float32 or wider: its floating inputs and outputs are. A 16-bit
// reference rounds every op's result to its dtype, relative to each value, which rtol (set for
// the dtype) covers: no noise floor there.
bool wide_task(const Task& task) {
  auto wide = [](const std::vector<TensorDecl>& ts) {
    return std::all_of(ts.begin(), ts.end(), [](const TensorDecl& t) {
      return !is_floating(t.dtype) || t.dtype == DType::Float32 || t.dtype == DType::Float64;
    });
  };
  return wide(task.inputs) && wide(task.outputs);
}

// How far `ref` misses `exact` (the same inputs in float64, rounded to ref's dtype: the result's
// own storage is not the reference's error; one copy of ref's size, checked in chunks), where that
// is over kNoiseShare of the allowance `c` gives: sets v's reference_error, reference_share and
// noise_floor.
void measure_reference_error(const torch::Tensor& ref, const torch::Tensor& exact, const Criterion& c,
                             OutputVerdict& v) {
  if (!ref.is_floating_point() || ref.numel() != exact.numel() || ref.numel() == 0) return;
  const torch::Tensor rounded = exact.to(ref.scalar_type());
  const ValueCheck miss = check_values(ref, rounded, c);
  v.reference_share = miss.max_ratio;
  const double magnitude = mean_abs_of(rounded);
  if (miss.max_ratio <= kNoiseShare || !(magnitude > 0)) return;
  v.reference_error = miss.max_abs / magnitude;
  v.noise_floor = kNoiseMargin * v.reference_error;
}

}  // namespace

bool Discrimination::ok() const {
  for (const OutputVerdict& v : outputs)
    if (!v.discriminates()) return false;
  return true;
}

std::string Discrimination::error() const {
  for (const OutputVerdict& v : outputs) {
    if (v.discriminates()) continue;
    if (v.constant)
      return "output '" + v.output + "' is the same on every draw, perturbed ones too: on the inputs the contract "
             "declares it does not depend on them, so no check tells a kernel that computes it from one that writes "
             "the constant";
    return "output '" + v.output + "': even with atol scaled to the outputs (" + number(v.scaled_atol) + "), " +
           listed(v.still_accepts) + " pass: no check tells outputs that ignore the inputs from this task's";
  }
  return "";
}

std::vector<Criterion> Discrimination::criteria(const Tolerance& t) const {
  std::vector<Criterion> out;
  for (const OutputVerdict& v : outputs) out.push_back({t, v.scaled, v.noise_floor});
  return out;
}

std::vector<std::string> Discrimination::report(const Tolerance& t) const {
  std::vector<std::string> lines;
  for (const OutputVerdict& v : outputs) {
    std::string s = v.output + ": ";
    if (!v.discriminates()) {
      s += "does not discriminate: " + error();
    } else if (v.noise) {
      s += "atol " + number(t.atol) + " accepts " + listed(v.plain_accepts) + ", and the outputs are rounding noise: the " +
           "reference misses its float64 result by more than atol scaled to them (" + number(v.scaled_atol) +
           "), so kevo checks it with the contract's tolerance (the exact outputs are within it of zero)";
    } else if (v.scaled) {
      s += "atol " + number(t.atol) + " accepts " + listed(v.plain_accepts) + "; kevo checks it with atol scaled to rtol x mean |" +
           v.output + "| (" + number(v.scaled_atol) + "), which rejects them";
    } else {
      s += "the tolerance discriminates (rejects zeros, a constant and other draws' outputs)";
    }
    if (v.discriminates() && v.noise_floor > 0)
      s += "; the reference's own rounding takes " + number(v.reference_share) + " of the allowance (it misses its float64 "
           "result by up to " + number(v.reference_error) + " x mean |" + v.output + "|): a kernel summing in another "
           "order could miss it by as much, so atol is at least " + number(v.noise_floor) + " x mean |" + v.output + "|";
    if (v.discriminates() && v.declared_draws_agree)
      s += "; another draw of the declared distribution passes (an average the inputs barely move): the "
           "perturbed trials reject the declared distribution's outputs";
    lines.push_back(s);
  }
  return lines;
}

Discrimination discriminate(const Task& task, const Draw& declared, const Draw& declared2, const Draw& perturbed,
                            const Draw& perturbed2, const std::function<const Draw*()>& exact) {
  Discrimination d;
  const Criterion plain{task.tolerance, false}, scaled{task.tolerance, true};
  const bool wide = wide_task(task);
  for (size_t o = 0; o < task.outputs.size() && o < declared.outputs.size(); ++o) {
    const torch::Tensor &d0 = declared.outputs[o], &d1 = declared2.outputs[o];
    const std::vector<const torch::Tensor*> moved = {&perturbed.outputs[o], &perturbed2.outputs[o]};
    OutputVerdict v;
    v.output = task.outputs[o].name;
    v.plain_accepts = accepted(d0, d1, moved, plain, /*everywhere=*/false);
    v.scaled_atol = scaled.atol_for(d0);
    const bool measured = wide && d0.is_floating_point();
    const Draw* e = exact && (measured || !v.plain_accepts.empty()) ? exact() : nullptr;
    const torch::Tensor* e0 = e && o < e->outputs.size() ? &e->outputs[o] : nullptr;
    if (!v.plain_accepts.empty()) {
      v.noise = e0 && rounding_noise(d0, *e0, scaled);
      v.scaled = !v.noise;
    }
    Criterion c{task.tolerance, v.scaled};
    if (e0 && measured) measure_reference_error(d0, *e0, c, v);
    c.noise_floor = v.noise_floor;
    if (!v.plain_accepts.empty() || c.noise_floor > 0) v.still_accepts = accepted(d0, d1, moved, c, /*everywhere=*/true);
    v.declared_draws_agree = passes(declared2.outputs[o], d0, c);
    v.constant = !v.discriminates() && d0.equal(d1) && d0.equal(*moved[0]) && d0.equal(*moved[1]);
    d.outputs.push_back(std::move(v));
  }
  return d;
}

}  // namespace kevo::eval
