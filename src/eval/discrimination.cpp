// What a task's tolerance accepts that ignores the inputs, and the criterion that does not.
#include "eval/discrimination.h"

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

double mean_of(const torch::Tensor& t) { return t.to(torch::kFloat64).mean().item<double>(); }

// The answers that ignore the inputs which `c` accepts for this output.
std::vector<std::string> accepted(const torch::Tensor& declared, const torch::Tensor& perturbed,
                                  const torch::Tensor& perturbed2, const Criterion& c) {
  std::vector<std::string> out;
  const bool real = declared.is_floating_point();
  const bool many = declared.numel() > 1;  // a scalar is its own mean
  if (passes(filled_like(declared, 0), declared, c) || passes(filled_like(perturbed, 0), perturbed, c))
    out.push_back("zeros");
  if (real && many) {
    const double m = mean_of(declared), mp = mean_of(perturbed);
    if (passes(filled_like(declared, m), declared, c)) out.push_back("the constant " + number(m));
    else if (passes(filled_like(perturbed, mp), perturbed, c)) out.push_back("a constant (" + number(mp) + ")");
  }
  if (passes(declared, perturbed, c)) out.push_back("the declared distribution's outputs on perturbed inputs");
  if (passes(perturbed2, perturbed, c)) out.push_back("another perturbed draw's outputs");
  return out;
}

}  // namespace

bool Discrimination::ok() const {
  for (const OutputVerdict& v : outputs)
    if (!v.discriminates()) return false;
  return true;
}

std::string Discrimination::error() const {
  for (const OutputVerdict& v : outputs)
    if (!v.discriminates())
      return "output '" + v.output + "': even with atol scaled to the outputs (" + number(v.scaled_atol) + "), " +
             listed(v.still_accepts) + " pass: no check tells outputs that ignore the inputs from this task's";
  return "";
}

std::vector<Criterion> Discrimination::criteria(const Tolerance& t) const {
  std::vector<Criterion> out;
  for (const OutputVerdict& v : outputs) out.push_back({t, v.scaled});
  return out;
}

std::vector<std::string> Discrimination::report(const Tolerance& t) const {
  std::vector<std::string> lines;
  for (const OutputVerdict& v : outputs) {
    std::string s = v.output + ": ";
    if (!v.discriminates()) {
      s += "does not discriminate: " + error();
    } else if (v.scaled) {
      s += "atol " + number(t.atol) + " accepts " + listed(v.plain_accepts) + "; kevo checks it with atol scaled to rtol x mean |" +
           v.output + "| (" + number(v.scaled_atol) + "), which rejects them";
    } else {
      s += "the tolerance discriminates (rejects zeros, a constant and other draws' outputs)";
    }
    if (v.discriminates() && v.declared_draws_agree)
      s += "; another draw of the declared distribution passes (an average the inputs barely move): the "
           "perturbed trials reject the declared distribution's outputs";
    lines.push_back(s);
  }
  return lines;
}

Discrimination discriminate(const Task& task, const Draw& declared, const Draw& declared2, const Draw& perturbed,
                            const Draw& perturbed2) {
  Discrimination d;
  const Criterion plain{task.tolerance, false}, scaled{task.tolerance, true};
  for (size_t o = 0; o < task.outputs.size() && o < declared.outputs.size(); ++o) {
    const torch::Tensor &d0 = declared.outputs[o], &p1 = perturbed.outputs[o], &p2 = perturbed2.outputs[o];
    OutputVerdict v;
    v.output = task.outputs[o].name;
    v.plain_accepts = accepted(d0, p1, p2, plain);
    v.scaled_atol = scaled.atol_for(d0);
    if (!v.plain_accepts.empty()) {
      v.scaled = true;
      v.still_accepts = accepted(d0, p1, p2, scaled);
    }
    v.declared_draws_agree = passes(declared2.outputs[o], d0, v.scaled ? scaled : plain);
    d.outputs.push_back(std::move(v));
  }
  return d;
}

}  // namespace kevo::eval
