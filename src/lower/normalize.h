// What the normalize family's lowering files share: normalize.cpp (the row and column spaces),
// normalize_norm_op.cpp (a norm node as a row op) and normalize_channels.cpp (the channel-column
// kernel of batch norm on [N, C]).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lower/kit.h"

namespace kevo::lower::normalize {

// The op graph as comment lines, for the generated source.
std::string graph_comment(const Graph& g);
// The C++ name of a tensor as a kernel parameter (and Norm::Params field), kept clear of the
// size parameters beside it.
std::string tensor_param(const std::string& name);
// An elementwise region over exactly one graph input of the target's shape (the prologue before
// a norm, or what a pattern's reduction sums): the input's value id, or -1.
int single_input_region(const TaskGraph& tg, int target, Region* region);

// A value's dims [from, to) as plan expressions, or its product in one workload.
struct Split {
  std::string outer, reduce, inner;  // plan expressions
  std::vector<Facts> facts;          // "outer", "reduce", "inner" per workload
};

Split split(const TaskGraph& tg, int v, int from, int to);
bool inner_is_one(const Split& s);

// What a row space renders around the template: the generated Norm and the kernel's inputs.
struct RowsOp {
  std::string id, description, summary;  // summary: one comment line naming the op
  std::string norm;                       // the generated `struct Norm`
  int x = -1;                             // graph input read
  std::vector<std::string> pointers;      // Norm::Params pointer fields = contract input names
  std::vector<std::pair<std::string, std::string>> ints;  // Norm::Params int fields: name, plan expression
  std::string rows, row;                  // plan expressions
  std::string vec_unit;                   // the "vec_unit" fact's expression; empty: the row's
  std::string inner;                      // the dims after the normalised ones, 1 in every workload
  std::vector<Facts> facts;
  // Where a row's elements live: contiguous rows, or (batch norm) the channels of [N, C, S] through
  // kevo::ChannelRows(channels, spatial), whose two sizes the kernel then takes.
  bool channels = false;
  std::string channel_count, spatial;  // plan expressions, with `channels`
  std::string manifest = "normalize/manifest.json";
  std::string unit = "row";  // what a row is, in the rendered comment
};

// The parts of a Norm struct every row op shares: the prologue (fused elementwise ops before the
// norm) and apply's loop, whose body computes `value` (an expression of v[k] and the stats) into
// the norm's output value, then the fused epilogue.
struct NormParts {
  std::string prologue;  // statements, or empty
  std::string epilogue;  // statements after the norm's value, and the final expression
  std::string result;
};

std::string prologue_function(const NormParts& parts);

// The RowsOp of a single norm node `node` of the graph (softmax, log_softmax, layer, group,
// instance and batch norm), or false (normalize_norm_op.cpp).
bool norm_node_op(const TaskGraphPtr& tgp, int node, RowsOp* op);

// The channel-column space of graph node `node` when it is batch norm of an [N, C] input; null
// otherwise.
std::unique_ptr<DesignSpace> channel_columns_space(const TaskGraphPtr& tg, int node);

}  // namespace kevo::lower::normalize
