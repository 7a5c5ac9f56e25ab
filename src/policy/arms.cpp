// The arms' policies by name.
#include "policy/arms.h"

#include <stdexcept>

#include "policy/learned_policy.h"

namespace kevo::policy {

namespace {

std::unique_ptr<Policy> learned(const ArmOptions& o, bool frozen) {
  LearnedPolicyConfig lc;
  lc.seed = o.seed;
  lc.frozen = frozen;
  lc.init = o.init;
  return make_learned_policy(lc);
}

}  // namespace

const std::vector<std::string>& arm_names() {
  static const std::vector<std::string> names = {"random", "learned", "learned-frozen", "llm"};
  return names;
}

bool is_arm(const std::string& name) {
  for (const std::string& a : arm_names())
    if (a == name) return true;
  return false;
}

std::string unknown_arm(const std::string& name) {
  std::string have;
  for (const std::string& a : arm_names()) have += (have.empty() ? "" : ", ") + a;
  return "unknown policy '" + name + "' (have: " + have + ")";
}

bool arm_is_learned(const std::string& arm, const std::string& llm_mix) {
  return arm == "learned" || arm == "learned-frozen" || (arm == "llm" && llm_mix == "learned");
}

std::unique_ptr<Policy> make_policy(const std::string& arm, const ArmOptions& o) {
  if (arm == "random") return make_random_policy();
  if (arm == "learned" || arm == "learned-frozen") return learned(o, arm == "learned-frozen");
  if (arm == "llm") {
    std::unique_ptr<Policy> templates = o.llm.mix == "learned" ? learned(o, false) : make_random_policy();
    return make_llm_policy(o.llm, o.llm_client, std::move(templates));
  }
  throw std::invalid_argument(unknown_arm(arm));
}

}  // namespace kevo::policy
