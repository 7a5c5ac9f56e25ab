// The arms as a campaign decides by them: each listed once with what it needs, each made by name,
// an unknown name refused with the list.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "policy/arms.h"

namespace kevo::policy {

namespace {

TEST(Arms, EachArmIsListedOnceAndMadeByItsName) {
  std::set<std::string> names;
  for (const Arm& a : arms()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_EQ(find_arm(a.name), &a);
    if (a.llm || a.frozen) continue;  // the llm arm needs a client; a frozen one a checkpoint
    EXPECT_NE(make_policy(a.name, ArmOptions{}), nullptr) << a.name;
  }
  EXPECT_EQ(find_arm("genetic"), nullptr);
  EXPECT_THROW(make_policy("genetic", ArmOptions{}), std::invalid_argument);
  EXPECT_EQ(unknown_arm("genetic"), "unknown policy 'genetic' (have: random, learned, learned-frozen, llm)");
}

TEST(Arms, WhatAnArmNeedsIsReadFromTheList) {
  EXPECT_TRUE(arm_is_learned("learned", "random"));
  EXPECT_TRUE(arm_is_learned("learned-frozen", "random"));
  EXPECT_FALSE(arm_is_learned("random", "learned"));
  // The llm arm is learned exactly where its template policy is.
  EXPECT_TRUE(arm_is_learned("llm", "learned"));
  EXPECT_FALSE(arm_is_learned("llm", "random"));
  EXPECT_TRUE(arm_uses_llm("llm"));
  EXPECT_FALSE(arm_uses_llm("learned"));
  EXPECT_FALSE(arm_uses_llm("genetic"));
  // An llm arm without a client is refused, not crashed on.
  ArmOptions o;
  o.llm.model = "m";
  EXPECT_THROW(make_policy("llm", o), std::runtime_error);
}

}  // namespace

}  // namespace kevo::policy
