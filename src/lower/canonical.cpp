// Equivalent spellings rewritten to one form before lowering (see canonical.h).
#include "lower/canonical.h"

#include <algorithm>
#include <set>

#include "lower/subgraph.h"

namespace kevo::lower {

namespace {

int rank_of(const Graph& g, int v) { return static_cast<int>(g.values[static_cast<size_t>(v)].shape.size()); }

// A dim attribute as an index in [0, rank).
int64_t normalized(int64_t d, int rank) { return d < 0 ? d + rank : d; }

// The einsum's equation without spaces, split into its two operands' labels and the output's;
// false for anything else (one or three operands, an ellipsis, an implicit output).
bool einsum_parts(const Node& n, std::string* a, std::string* b, std::string* out) {
  std::string eq = attr_str(n, "equation");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->"), comma = eq.find(',');
  if (n.inputs.size() != 2 || arrow == std::string::npos || comma == std::string::npos || comma > arrow ||
      eq.find('.') != std::string::npos || eq.find(',', comma + 1) < arrow)
    return false;
  *a = eq.substr(0, comma);
  *b = eq.substr(comma + 1, arrow - comma - 1);
  *out = eq.substr(arrow + 2);
  return true;
}

bool distinct(const std::string& labels) { return std::set<char>(labels.begin(), labels.end()).size() == labels.size(); }

// The op an einsum is equal to, or "": with P a prefix of distinct labels,
//   P+"k", "kn" -> P+"n": matmul (the prefix's dims are rows);
//   P+"k", "nk" -> P+"n": linear;
//   P+"mk", P+"kn" -> P+"mn": matmul (P the batch).
std::string einsum_as_matmul(const Node& n) {
  std::string a, b, out;
  if (!einsum_parts(n, &a, &b, &out) || a.empty() || b.size() < 2 || !distinct(a) || !distinct(b) || !distinct(out))
    return "";
  const char k = a.back();
  const std::string rows = a.substr(0, a.size() - 1);
  if (b.size() == 2) {
    const bool plain = b[0] == k, transposed = b[1] == k;
    const char col = plain ? b[1] : b[0];
    if ((plain || transposed) && b[0] != b[1] && rows.find(col) == std::string::npos && out == rows + col)
      return plain ? "matmul" : "linear";
    return "";
  }
  // Batched: both operands share the batch prefix.
  const size_t batch = b.size() - 2;
  if (a.size() != b.size() || a.substr(0, batch) != b.substr(0, batch) || b[batch] != k) return "";
  const char row = a[batch], col = b[batch + 1];
  return out == a.substr(0, batch) + row + col && distinct(a + col) ? "matmul" : "";
}

}  // namespace

int transposed_source(const Graph& g, int v) {
  const int p = g.values[static_cast<size_t>(v)].producer;
  if (p < 0) return -1;
  const Node& n = g.nodes[static_cast<size_t>(p)];
  if (n.inputs.size() != 1) return -1;
  const int src = n.inputs[0], r = rank_of(g, src);
  if (r < 2) return -1;
  if (n.op == "transpose") {
    const int64_t d0 = normalized(attr_int(n, "dim0"), r), d1 = normalized(attr_int(n, "dim1"), r);
    return std::min(d0, d1) == r - 2 && std::max(d0, d1) == r - 1 ? src : -1;
  }
  if (n.op == "permute") {
    std::vector<int64_t> want;
    for (int d = 0; d < r; ++d) want.push_back(d);
    std::swap(want[static_cast<size_t>(r - 2)], want[static_cast<size_t>(r - 1)]);
    std::vector<int64_t> dims = attr_ints(n, "dims");
    for (int64_t& d : dims) d = normalized(d, r);
    return dims == want ? src : -1;
  }
  return -1;
}

Graph canonical(const Graph& g) {
  Graph out = g;
  for (Node& n : out.nodes) {
    if (n.op == "bmm") {
      n.op = "matmul";
    } else if (n.op == "einsum") {
      const std::string op = einsum_as_matmul(n);
      if (op.empty()) continue;
      n.op = op;
      n.attrs.clear();
      if (op == "linear") n.inputs.push_back(-1);  // no bias
    } else if (n.op == "matmul" && n.inputs.size() == 2) {
      const int w = transposed_source(out, n.inputs[1]);
      if (w < 0 || rank_of(out, w) != 2) continue;
      n.op = "linear";
      n.inputs = {n.inputs[0], w, -1};
    }
  }
  // Without the nodes nothing reads any more (a folded transpose), every input kept in its place.
  Graph live;
  std::vector<size_t> reached;
  return extract(out, out.inputs, out.outputs, &live, &reached, /*keep_inputs=*/true) ? live : out;
}

}  // namespace kevo::lower
