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

const std::vector<Arm>& arms() {
  static const std::vector<Arm> all = {
      {"random"},
      {"learned", /*learned=*/true},
      {"learned-frozen", /*learned=*/true, /*frozen=*/true},
      {"llm", false, false, /*llm=*/true},
  };
  return all;
}

const Arm* find_arm(const std::string& name) {
  for (const Arm& a : arms())
    if (a.name == name) return &a;
  return nullptr;
}

std::string unknown_arm(const std::string& name) {
  std::string have;
  for (const Arm& a : arms()) have += (have.empty() ? "" : ", ") + a.name;
  return "unknown policy '" + name + "' (have: " + have + ")";
}

bool arm_uses_llm(const std::string& name) {
  const Arm* a = find_arm(name);
  return a && a->llm;
}

bool arm_is_learned(const std::string& arm, const std::string& llm_mix) {
  const Arm* a = find_arm(arm);
  return a && (a->learned || (a->llm && llm_mix == "learned"));
}

std::unique_ptr<Policy> make_policy(const std::string& arm, const ArmOptions& o) {
  const Arm* a = find_arm(arm);
  if (!a) throw std::invalid_argument(unknown_arm(arm));
  if (a->llm) {
    std::unique_ptr<Policy> templates = o.llm.mix == "learned" ? learned(o, false) : make_random_policy();
    return make_llm_policy(o.llm, o.llm_client, std::move(templates));
  }
  if (a->learned) return learned(o, a->frozen);
  return make_random_policy();
}

}  // namespace kevo::policy
