// The op registries refuse a second registration of a name, and every bundled spelling is unique.
#include "core/name_table.h"

#include <gtest/gtest.h>

#include "core/ops.h"

namespace kevo {
namespace {

TEST(NameTable, FindsWhatWasAddedAndRefusesDuplicates) {
  NameTable<int> t;
  t.add("relu", 1);
  t.add("gelu", 2);
  ASSERT_NE(t.find("gelu"), nullptr);
  EXPECT_EQ(*t.find("gelu"), 2);
  EXPECT_EQ(t.find("silu"), nullptr);
  EXPECT_THROW(t.add("relu", 3), std::logic_error);
  EXPECT_EQ(*t.find("relu"), 1);
  EXPECT_EQ(t.names(), (std::vector<std::string>{"gelu", "relu"}));
}

TEST(NameTable, TheOpTableBuildsAndKnowsEverySpellingFamily) {
  const OpTable& ops = op_table();  // throws on a duplicate spelling across families
  for (const char* name : {"torch.add", "torch.nn.functional.gelu", "Tensor.softmax", "torch.nn.functional.conv2d",
                           "Tensor.view", "math.sqrt"})
    EXPECT_NE(ops.find(name), nullptr) << name;
  EXPECT_GT(ops.names().size(), 150u);
}

}  // namespace
}  // namespace kevo
