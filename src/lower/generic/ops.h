// Building the generic family's program (generic/program.cpp, generic/views.cpp, generic/ops.cpp).
#pragma once

#include <memory>

#include "lower/generic/ir.h"

namespace kevo::lower::generic {

class Dims;

class ProgramBuilder {
 public:
  explicit ProgramBuilder(const TaskGraph& tg);
  ~ProgramBuilder();
  Program build();

  const TaskGraph& tg() const { return tg_; }
  // The program value of a graph value (-1 for an absent optional operand).
  int of(int graph_value) const;
  const Value& value(int v) const;
  int add(Value v);
  // A value with a graph value's dtype, dims and sizes.
  Value like(int graph_value, const std::string& what) const;
  // A float32 value of the given dims whose sizes per workload come from base's.
  Value shaped(const Value& base, const std::vector<std::string>& dims,
               const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& size) const;

 private:
  std::vector<int> lower_node(const Node& n);
  int elementwise(const Node& n);
  std::vector<int> view(const Node& n);  // generic/views.cpp; empty when n is not a view

  const TaskGraph& tg_;
  std::unique_ptr<Dims> dims_;
  Program prog_;
  std::vector<int> slot_;  // graph value -> program value
};

// Helpers the op files share (generic/ops.cpp).
using Term = std::function<std::string(Code&, const std::string& o, const std::string& k)>;
using Finish = std::function<std::string(Code&, const std::string& o, const std::string& acc, const std::string& arg)>;
std::string at(const std::string& i, int d);  // "i[d]"
std::vector<int64_t> ints_or(const Node& n, const std::string& key, std::vector<int64_t> fallback);
bool bool_or(const Node& n, const std::string& key, bool fallback);
std::string str_or(const Node& n, const std::string& key, const std::string& fallback);
Finish plain();  // the accumulator as it is
// The mean of a reduction over `extents`; `then` uses it as "$".
Finish mean_of(std::vector<std::string> extents, const std::string& then = "$");
// A reduction value of `shape`'s dims and sizes: K = product of extents.
int reduction(ProgramBuilder& b, const std::string& what, const Value& shape, const std::vector<int>& operands,
              const std::string& op, std::vector<std::string> extents, Term term, Finish finish, bool contraction = false);
// The shape of x reduced over dims (kept as 1 or removed).
Value reduced_shape(ProgramBuilder& b, int x, const std::vector<int64_t>& dims, bool keep);
// The index of x for output index o and reduction index k of a reduction over dims.
std::string x_index(Code& c, int x, const std::vector<int64_t>& dims, bool keep, const std::string& o, const std::string& k);
// An x index with the reduced dims at 0 (where a keepdim statistic of it is read).
std::string kept_index(Code& c, int x, const std::vector<int64_t>& dims, const std::string& xi);
// x reduced over dims with op, each term f(x) ("$" is x's value) or term_of(x's index).
int reduce_over(ProgramBuilder& b, const std::string& what, int x, std::vector<int64_t> dims, bool keep, const std::string& op,
                const std::string& f, Finish finish, std::vector<int> extra = {},
                std::function<std::string(Code&, const std::string& xi)> term_of = nullptr);
// A map of `shape` reading operands elementwise (broadcast; -1 operands read as "").
int elementwise_map(ProgramBuilder& b, const Value& shape, const std::string& what, std::vector<int> operands,
                    std::function<std::string(Code&, const std::vector<std::string>& args, const std::string& i)> f);
// The max and the sum of exp(x - max) of x over dims, both keepdim.
std::pair<int, int> softmax_stats(ProgramBuilder& b, const std::string& what, int x, std::vector<int64_t> dims);

// Every op that is neither elementwise nor a view (generic/ops.cpp); throws when it has no lowering.
std::vector<int> lower_op(ProgramBuilder& b, const Node& n);

}  // namespace kevo::lower::generic
