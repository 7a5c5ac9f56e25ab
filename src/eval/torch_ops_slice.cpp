// LibTorch execution of op family 'slice': slice, select and cat (the rest lowers to these), and
// of 'dtype': cast.
#include "eval/torch_op_families.h"

namespace kevo::eval {

namespace {
using T = torch::Tensor;
using In = std::vector<T>;
}  // namespace

void register_torch_slice_ops(TorchOpTable& t) {
  t.add("slice", [](const Node& n, const In& in) {
    return std::vector<T>{
        in[0].slice(attr_int(n, "dim"), attr_int(n, "start"), attr_int(n, "end"), attr_int(n, "step"))};
  });
  t.add("select", [](const Node& n, const In& in) {
    return std::vector<T>{in[0].select(attr_int(n, "dim"), attr_int(n, "index"))};
  });
  // torch.cat promotes its operands to one dtype; cast first, whatever the LibTorch version does.
  t.add("cat", [](const Node& n, const In& in) {
    torch::ScalarType common = in[0].scalar_type();
    for (const T& x : in) common = torch::promote_types(common, x.scalar_type());
    std::vector<T> same;
    for (const T& x : in) same.push_back(x.to(common));
    return std::vector<T>{torch::cat(same, attr_int(n, "dim"))};
  });
  t.add("cast", [](const Node& n, const In& in) {
    return std::vector<T>{in[0].to(to_torch(*parse_dtype(attr_str(n, "dtype"))))};
  });
}

}  // namespace kevo::eval
