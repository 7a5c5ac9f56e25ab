// The llm arm's settings: their checks, each failure one line naming the flag.
#include "policy/llm_settings.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace kevo::policy {

namespace {

std::string number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

void validate_endpoint(const LlmSettings& c) {
  auto fail = [](const std::string& message) { throw std::runtime_error(message); };
  if (c.url.rfind("http://", 0) != 0 && c.url.rfind("https://", 0) != 0)
    fail("--llm-url: '" + c.url + "' must start with http:// or https://");
  if (c.model.empty()) fail("--llm-model: give the model the server serves");
  if (c.concurrency < 1 || c.concurrency > 256)
    fail("--llm-concurrency: " + std::to_string(c.concurrency) + " is outside 1..256");
  if (!(c.timeout_seconds > 0) || !std::isfinite(c.timeout_seconds))
    fail("--llm-timeout: " + number(c.timeout_seconds) + " s must be positive");
  if (!(c.connect_timeout_seconds > 0) || !std::isfinite(c.connect_timeout_seconds))
    fail("--llm-timeout: the connect timeout " + number(c.connect_timeout_seconds) + " s must be positive");
  if (c.retries < 0 || c.retries > 20) fail("--llm-retries: " + std::to_string(c.retries) + " is outside 0..20");
  if (!(c.backoff_seconds >= 0) || !std::isfinite(c.backoff_seconds))
    fail("--llm-backoff: " + number(c.backoff_seconds) + " s must be zero or more");
  if (c.token_budget < 0) fail("--llm-token-budget: " + std::to_string(c.token_budget) + " must be zero or more");
}

void validate_sampling(const LlmSettings& c) {
  auto fail = [](const std::string& message) { throw std::runtime_error(message); };
  if (!(c.temperature >= 0 && c.temperature <= 2)) fail("--llm-temperature: " + number(c.temperature) + " is outside [0, 2]");
  if (c.max_tokens < 1) fail("--llm-max-tokens: " + std::to_string(c.max_tokens) + " must be at least 1");
  if (c.samples < 1 || c.samples > 64) fail("--llm-samples: " + std::to_string(c.samples) + " is outside 1..64");
}

void validate_policy(const LlmSettings& c) {
  auto fail = [](const std::string& message) { throw std::runtime_error(message); };
  if (c.weight > 1 || std::isnan(c.weight)) fail("--llm-weight: must be between 0 and 1, or 'auto'");
  if (c.mix != "random" && c.mix != "learned") fail("--llm-mix: '" + c.mix + "': use random or learned");
  if (c.inspirations < 0 || c.inspirations > 16) fail("--llm-inspirations: must be between 0 and 16");
  if (c.max_prompt_source < 256) fail("--llm-max-prompt-source: must be at least 256");
  if (c.max_prompt_tokens < 1024) fail("--llm-max-prompt-tokens: must be at least 1024");
  if (!c.adapter_path.empty() && c.adapter_name.empty()) fail("--adapter-name: give the name the adapter is served as");
  if (!c.adapter_path.empty() && c.between_generations.empty())
    fail("--load-adapter: an adapter is (re)loaded after --between-generations; give that command too");
}

}  // namespace

void validate(const LlmSettings& settings) {
  validate_endpoint(settings);
  validate_sampling(settings);
  validate_policy(settings);
}

}  // namespace kevo::policy
