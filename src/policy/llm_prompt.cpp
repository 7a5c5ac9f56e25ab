// Building a prompt within its budget: the required sections first, then the library's parts the
// parent uses and other elites while they fit.
#include "policy/llm_prompt.h"

#include <sstream>

#include "core/task.h"
#include "policy/library_excerpts.h"

namespace kevo::policy {

namespace {

using nlohmann::json;

const char* kSystemPrompt =
    "You are an expert CUDA performance engineer. You improve one candidate kernel for kevo, a search "
    "engine that compiles every candidate with NVRTC, checks it against a PyTorch reference on fresh "
    "inputs and times it on the GPU. The faster a correct candidate runs, the higher it scores; a wrong, "
    "failing or slower one scores nothing.";

const char* kRules =
    "## Rules\n"
    "- A candidate is CUDA device code plus exactly one `/* kevo-plan {...} */` comment: the launch plan "
    "(kernels by name expression, grid, block, dynamic shared memory, arguments as buffers or integer "
    "expressions over the task's axes and `num_sms`). Kernels are `extern \"C\" __global__` or named "
    "template instantiations, exactly as the plan names them.\n"
    "- Device code only, no host code runs. The only `#include` lines allowed are those of kevo's template "
    "library (`#include \"kevo/...\"`), which kevo serves read-only: keep them where the candidate uses the "
    "library, drop them if you write kernels of your own. Keep every kernel's parameters in step with the "
    "plan's `args`.\n"
    "- The result must match the reference within the tolerance on every workload, including the small "
    "one, and must not read or write out of bounds.\n"
    "- Reply with one or more SEARCH/REPLACE blocks that edit the current candidate, each copying the "
    "lines to replace exactly:\n"
    "<<<<<<< SEARCH\n(lines of the current candidate)\n=======\n(their replacement)\n>>>>>>> REPLACE\n"
    "  or with the whole new candidate in one ```cuda block. To change the launch plan, edit the "
    "kevo-plan comment in place (or give the new plan in one ```json block). Say briefly what you "
    "changed and why before the code.\n";

std::string shape_text(const TensorDecl& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ", ";
    s += t.shape[i].expr.empty() ? std::to_string(t.shape[i].size) : t.shape[i].expr;
  }
  return s + "] " + dtype_name(t.dtype);
}

std::string task_text(const Task& task, const std::string& target) {
  std::ostringstream o;
  o << "## Task: " << task.name << "\n";
  if (!task.description.empty()) o << task.description << "\n";
  o << "\nReference (PyTorch):\n```python\n" << task.reference << (task.reference.empty() || task.reference.back() == '\n' ? "" : "\n")
    << "```\n";
  for (const auto& t : task.inputs) o << "- input `" << t.name << "`: " << shape_text(t) << "\n";
  for (const auto& t : task.outputs) o << "- output `" << t.name << "`: " << shape_text(t) << "\n";
  o << "- workloads:";
  for (const Workload& w : task.workloads) {
    o << " {";
    bool first = true;
    for (const auto& [axis, v] : w.axes) {
      o << (first ? "" : ", ") << axis << "=" << v;
      first = false;
    }
    o << "}";
    // The model should know which shapes the fitness times and how much each counts.
    if (!w.timed) o << " (checked for correctness, not timed)";
    else if (w.weight != 1) o << " (weight " << w.weight << ")";
  }
  o << "\n- tolerance: atol " << task.tolerance.atol << ", rtol " << task.tolerance.rtol << "\n";
  if (!task.notes.empty()) o << "- notes: " << task.notes << "\n";
  o << "- target GPU: " << (target.empty() ? std::string("NVIDIA Hopper or Blackwell (sm_90a / sm_100a)") : target)
    << "\n";
  return o.str();
}

std::string fitness_text(double f) {
  std::ostringstream o;
  o.precision(3);
  o << f << "x";
  return o.str();
}

std::string fenced(const std::string& source) {
  return "```cuda\n" + source + (source.empty() || source.back() == '\n' ? "" : "\n") + "```\n";
}

const char* kWhatMayChange =
    "## What you may change\n"
    "The candidate's own lines above: its template arguments (tile sizes, stages, paths), the code "
    "generated around the library's kernels (epilogues, fused operations), the launch plan; or replace "
    "it with kernels of your own. kevo's template library headers it includes are read-only: the parts "
    "the candidate uses are shown below as far as the prompt's budget allows.\n";

std::string measurement_text(const Parent& p) {
  if (p.report.empty()) return "";
  return "\n## Its measurement\n" + p.report + (p.report.back() == '\n' ? "" : "\n");
}

std::string library_text(const LibraryExcerpt& e) {
  return "\n### `kevo::" + e.name + "` (" + e.header + ", line " + std::to_string(e.line) + ")\n" + fenced(e.text);
}

std::string inspiration_text(const Parent& e, const LlmSettings& c) {
  std::string src = e.source;
  if (static_cast<int>(src.size()) > c.max_prompt_source)
    src = src.substr(0, static_cast<size_t>(c.max_prompt_source)) + "\n// ... (cut)\n";
  return "\n### " + fitness_text(e.fitness) + "\n" + fenced(src);
}

}  // namespace

int64_t estimate_tokens(const std::string& text) { return static_cast<int64_t>((text.size() + 2) / 3); }

Prompt build_prompt(const Context& ctx, const Request& r, const LlmSettings& c, const TokenCounter& count) {
  std::ostringstream head;
  head << task_text(*ctx.task, ctx.target) << "\n";
  head << "## Current candidate (" << fitness_text(r.parent.fitness)
       << " speedup over PyTorch eager on the task's weighted mix of timed workloads; the best of the search so far: "
       << fitness_text(ctx.best_fitness) << ")\n"
       << fenced(r.parent.source) << measurement_text(r.parent) << "\n" << kWhatMayChange;
  const std::string rules = std::string("\n") + kRules;

  Prompt p;
  p.tokens = count(kSystemPrompt) + count(head.str()) + count(rules) + 2 * kMessageFramingTokens;
  std::string user = head.str();
  if (p.tokens > c.max_prompt_tokens) {
    p.refused = "the prompt needs " + std::to_string(p.tokens) + " tokens without library parts or other candidates; " +
                "--llm-max-prompt-tokens is " + std::to_string(c.max_prompt_tokens);
  } else {
    // Optional parts in order of use to the model, each while it fits.
    auto add = [&](const std::string& text) {
      const int64_t n = count(text);
      if (p.tokens + n > c.max_prompt_tokens) return false;
      p.tokens += n;
      user += text;
      return true;
    };
    bool titled = false;
    for (const LibraryExcerpt& e : library_excerpts(r.parent.source)) {
      const std::string title = titled ? "" : "\n## kevo's template library: what the candidate uses (read-only)\n";
      if (!add(title + library_text(e))) break;
      titled = true;
      ++p.library_parts;
    }
    for (const Parent& e : r.inspirations) {
      if (p.inspirations >= c.inspirations) break;
      if (e.variant == r.parent.variant || e.source.empty()) continue;
      const std::string title = p.inspirations ? "" : "\n## Other candidates of the search, for ideas (do not edit these)\n";
      if (!add(title + inspiration_text(e, c))) break;
      ++p.inspirations;
    }
  }
  p.messages = json::array({json{{"role", "system"}, {"content", kSystemPrompt}}, json{{"role", "user"}, {"content", user + rules}}});
  return p;
}

}  // namespace kevo::policy
