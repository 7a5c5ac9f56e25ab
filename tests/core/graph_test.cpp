// Op graph bookkeeping: text form, FLOP counts and attribute access.
#include "core/graph.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace kevo {
namespace {

TEST(Graph, TextFormNamesOpsAttributesAndTypes) {
  Graph g;
  int x = g.add_value({"x", DType::Float32, {16, 32}, -1});
  g.inputs.push_back(x);
  int y = g.add_value({"y", DType::Float32, {16, 32}, 0});
  g.nodes.push_back({"softmax", {x}, {{"dim", int64_t{1}}}, {y}, {2, 9}});
  g.outputs.push_back(y);
  std::string text = g.to_string();
  EXPECT_NE(text.find("%0 x: float32[16, 32]"), std::string::npos) << text;
  EXPECT_NE(text.find("%1 = softmax(%0) {dim=1} : float32[16, 32]  # 2:9"), std::string::npos) << text;
  EXPECT_NE(text.find("return %1"), std::string::npos) << text;
}

TEST(Graph, CountsMatmulAndConvFlops) {
  Graph g;
  int a = g.add_value({"a", DType::Float32, {64, 128}, -1});
  int w = g.add_value({"w", DType::Float32, {256, 128}, -1});
  int y = g.add_value({"y", DType::Float32, {64, 256}, 0});
  g.nodes.push_back({"linear", {a, w, -1}, {}, {y}, {}});
  EXPECT_EQ(g.matmul_conv_flops(), 2LL * 64 * 256 * 128);
  int x = g.add_value({"x", DType::Float32, {2, 3, 8, 8}, -1});
  int k = g.add_value({"k", DType::Float32, {4, 3, 3, 3}, -1});
  int z = g.add_value({"z", DType::Float32, {2, 4, 6, 6}, 1});
  g.nodes.push_back({"conv2d", {x, k, -1}, {}, {z}, {}});
  EXPECT_EQ(g.matmul_conv_flops(), 2LL * 64 * 256 * 128 + 2LL * (2 * 4 * 6 * 6) * (3 * 3 * 3));
}

// The ops KernelBench adds: 3-D and transposed convolutions, einsum, attention.
TEST(Graph, CountsTheFlopsOfEveryProductOp) {
  auto flops_of = [](const std::string& op, std::vector<Shape> in, Shape out, std::map<std::string, AttrValue> attrs) {
    Graph g;
    std::vector<int> ids;
    for (Shape& s : in) ids.push_back(g.add_value({"i", DType::Float32, s, -1}));
    int y = g.add_value({"y", DType::Float32, out, 0});
    g.nodes.push_back({op, ids, attrs, {y}, {}});
    return g.matmul_conv_flops();
  };
  // conv3d: every output element takes Cin/groups * kD * kH * kW multiply-adds.
  EXPECT_EQ(flops_of("conv3d", {{2, 4, 6, 6, 6}, {8, 2, 3, 3, 3}}, {2, 8, 4, 4, 4}, {}), 2LL * (2 * 8 * 64) * (2 * 27));
  // conv_transpose2d: every input element scatters Cout/groups * kH * kW multiply-adds.
  EXPECT_EQ(flops_of("conv_transpose2d", {{2, 4, 5, 5}, {4, 3, 3, 3}}, {2, 3, 7, 7}, {}), 2LL * (2 * 4 * 25) * (3 * 9));
  EXPECT_EQ(flops_of("einsum", {{8, 16, 32, 64}, {64, 24}}, {8, 16, 32, 24}, {{"equation", std::string("bijl,lk->bijk")}}),
            2LL * 8 * 16 * 32 * 64 * 24);
  EXPECT_EQ(flops_of("einsum", {{5, 7, 64}, {64, 24}}, {5, 7, 24}, {{"equation", std::string("...l,lk->...k")}}),
            2LL * 35 * 64 * 24);
  // Attention: q k^T (L x S x E) and the weighted sum of v (L x S x Ev), per batch.
  EXPECT_EQ(flops_of("scaled_dot_product_attention", {{2, 3, 10, 16}, {2, 3, 12, 16}, {2, 3, 12, 8}}, {2, 3, 10, 8},
                     {}),
            2LL * 6 * 10 * 12 * (16 + 8));
}

TEST(Graph, AttributeAccessorsTellNoneFromValues) {
  Node n{"clamp", {0}, {{"min", std::monostate{}}, {"max", 1.5}, {"dims", std::vector<int64_t>{0, 2}}}, {1}, {}};
  EXPECT_TRUE(attr_is_none(n, "min"));
  EXPECT_TRUE(attr_is_none(n, "absent"));
  EXPECT_FALSE(attr_is_none(n, "max"));
  EXPECT_DOUBLE_EQ(attr_float(n, "max"), 1.5);
  EXPECT_EQ(attr_ints(n, "dims"), (std::vector<int64_t>{0, 2}));
  EXPECT_THROW(attr_int(n, "absent"), std::logic_error);
}

}  // namespace
}  // namespace kevo
