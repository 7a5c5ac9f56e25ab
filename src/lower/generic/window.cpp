// The generic family's window ops: convolutions and transposed convolutions (1-3 D, stride,
// padding, dilation, groups, output padding) and pooling (max, average, adaptive), each output
// element a direct loop over its window.
#include "lower/generic/ops.h"

namespace kevo::lower::generic {

namespace {

int spatial_of(const std::string& op) {
  const size_t p = op.find("pool");
  if (p != std::string::npos) return op[p + 4] - '0';
  return op[op.size() - 2] - '0';
}

int64_t list_at(const Node& n, const std::string& key, int s, int64_t fallback) {
  std::vector<int64_t> v = ints_or(n, key, {});
  if (v.empty()) return fallback;
  return v[std::min(static_cast<size_t>(s), v.size() - 1)];
}

std::string lit(int64_t v) { return "(Idx)" + std::to_string(v); }

std::vector<int> conv(ProgramBuilder& b, const Node& n, const std::string& what) {
  const int x = b.of(n.inputs[0]), w = b.of(n.inputs[1]), bias = n.inputs.size() > 2 ? b.of(n.inputs[2]) : -1;
  const int sp = spatial_of(n.op);
  const bool transposed = n.op.rfind("conv_transpose", 0) == 0;
  const int xr = b.value(x).rank();
  const bool batched = xr == sp + 2;
  const int64_t groups = static_cast<int64_t>(attr_float_or(n, "groups", 1));
  const Value& wv = b.value(w);
  // Weight [Cout, Cin/g, k...] (transposed: [Cin, Cout/g, k...]); the summed dims: Cin/g, then k.
  std::vector<std::string> extents = {transposed ? "((" + wv.dims[0] + ") // " + std::to_string(groups) + ")" : wv.dims[1]};
  std::vector<int64_t> ks, st, pad, dil;
  for (int s = 0; s < sp; ++s) {
    extents.push_back(wv.dims[static_cast<size_t>(2 + s)]);
    ks.push_back(wv.sizes[0][static_cast<size_t>(2 + s)]);
    st.push_back(list_at(n, "stride", s, 1));
    pad.push_back(list_at(n, "padding", s, 0));
    dil.push_back(list_at(n, "dilation", s, 1));
  }
  const Value shape = b.like(n.outputs[0], what);
  const int cout_dim = batched ? 1 : 0;
  Term term = [=](Code& c, const std::string& o, const std::string& k) {
    const std::string co = at(o, cout_dim);
    const std::string cin_g = c.size(extents[0]);
    const std::string coutg = transposed ? c.dim(w, 1) : "(" + c.dim(w, 0) + " / " + std::to_string(groups) + ")";
    const std::string g = c.fresh("g");
    c.line("const Idx " + g + " = " + co + " / " + coutg + ";");
    std::string valid = "true";
    std::vector<std::string> xi, wi;
    if (batched) xi.push_back(at(o, 0));
    xi.push_back(g + " * " + cin_g + " + " + at(k, 0));
    if (transposed) wi = {g + " * " + cin_g + " + " + at(k, 0), co + " % " + coutg};
    else wi = {co, at(k, 0)};
    for (int s = 0; s < sp; ++s) {
      const std::string os = at(o, cout_dim + 1 + s), kk = at(k, 1 + s), in = c.dim(x, xr - sp + s);
      const std::string pos = c.fresh("q");
      if (!transposed) {
        c.line("const Idx " + pos + " = " + os + " * " + lit(st[s]) + " - " + lit(pad[s]) + " + " + kk + " * " + lit(dil[s]) + ";");
        valid += " && " + pos + " >= 0 && " + pos + " < " + in;
        xi.push_back(pos);
      } else {
        const std::string t = c.fresh("t");
        c.line("const Idx " + t + " = " + os + " + " + lit(pad[s]) + " - " + kk + " * " + lit(dil[s]) + ";");
        c.line("const Idx " + pos + " = " + t + " / " + lit(st[s]) + ";");
        valid += " && " + t + " >= 0 && " + t + " % " + lit(st[s]) + " == 0 && " + pos + " < " + in;
        xi.push_back(pos);
      }
      wi.push_back(kk);
    }
    const std::string ok = c.fresh("ok");
    c.line("const bool " + ok + " = " + valid + ";");
    // Out-of-window reads are never made: the index is clamped and the product discarded.
    for (size_t d = 0; d < xi.size(); ++d) xi[d] = ok + " ? (Idx)(" + xi[d] + ") : (Idx)0";
    const std::string xv = c.read(x, c.index(xi));
    return ok + " ? " + xv + " * " + c.read(w, c.index(wi)) + " : 0.f";
  };
  Finish fin = plain();
  std::vector<int> ops = {x, w};
  if (bias >= 0) {
    ops.push_back(bias);
    fin = [bias, cout_dim](Code& c, const std::string& o, const std::string& acc, const std::string&) {
      return acc + " + " + c.read(bias, c.index({at(o, cout_dim)}));
    };
  }
  return {reduction(b, what, shape, ops, "GSum", extents, term, fin, true)};
}

std::vector<int> pool(ProgramBuilder& b, const Node& n, const std::string& what) {
  const int x = b.of(n.inputs[0]);
  const int sp = spatial_of(n.op);
  const int xr = b.value(x).rank();
  const bool is_max = n.op.rfind("max", 0) == 0 || n.op.rfind("adaptive_max", 0) == 0;
  const bool adaptive = n.op.rfind("adaptive", 0) == 0;
  const bool indices = n.op.find("_with_indices") != std::string::npos;
  const Value shape = b.like(n.outputs[0], what);
  const int first = xr - sp;  // the first spatial dim (input and output alike)
  std::vector<int64_t> ks, st, pad, dil;
  std::vector<std::string> extents;
  for (int s = 0; s < sp; ++s) {
    const std::string in = b.value(x).dims[static_cast<size_t>(first + s)], out = shape.dims[static_cast<size_t>(first + s)];
    if (adaptive) {
      // The widest window: ceil(in / out) + 1 bounds every (end - start).
      extents.push_back("(" + in + " + " + out + " - 1) // " + out + " + 1");
      ks.push_back(0), st.push_back(0), pad.push_back(0), dil.push_back(1);
    } else {
      ks.push_back(list_at(n, "kernel_size", s, 1));
      st.push_back(list_at(n, "stride", s, ks.back()));
      pad.push_back(list_at(n, "padding", s, 0));
      dil.push_back(list_at(n, "dilation", s, 1));
      extents.push_back(std::to_string(ks.back()));
    }
  }
  const bool include_pad = bool_or(n, "count_include_pad", true);
  const int64_t divisor = static_cast<int64_t>(attr_float_or(n, "divisor_override", 0));
  // Each window position's input index and whether it lies inside the input.
  auto window = [=](Code& c, const std::string& o, const std::string& k, std::vector<std::string>* xi) {
    std::string valid = "true";
    for (int d = 0; d < first; ++d) xi->push_back(at(o, d));
    for (int s = 0; s < sp; ++s) {
      const std::string os = at(o, first + s), in = c.dim(x, first + s), pos = c.fresh("q");
      if (adaptive) {
        const std::string out = c.size(shape.dims[static_cast<size_t>(first + s)]);
        const std::string start = c.fresh("s"), end = c.fresh("e");
        c.line("const Idx " + start + " = " + os + " * " + in + " / " + out + ";");
        c.line("const Idx " + end + " = ((" + os + " + 1) * " + in + " + " + out + " - 1) / " + out + ";");
        c.line("const Idx " + pos + " = " + start + " + " + at(k, s) + ";");
        valid += " && " + pos + " < " + end;
      } else {
        c.line("const Idx " + pos + " = " + os + " * " + lit(st[s]) + " - " + lit(pad[s]) + " + " + at(k, s) + " * " + lit(dil[s]) + ";");
        valid += " && " + pos + " >= 0 && " + pos + " < " + in;
      }
      xi->push_back(pos);
    }
    const std::string ok = c.fresh("ok");
    c.line("const bool " + ok + " = " + valid + ";");
    for (std::string& e : *xi) e = ok + " ? (Idx)(" + e + ") : (Idx)0";
    return ok;
  };
  Term term = [=](Code& c, const std::string& o, const std::string& k) {
    std::vector<std::string> xi;
    const std::string ok = window(c, o, k, &xi);
    return ok + " ? " + c.read(x, c.index(xi)) + " : " + (is_max ? "-__int_as_float(0x7f800000)" : "0.f");
  };
  // Average: the divisor torch uses (the window clipped to the padded or the real input).
  Finish avg = [=](Code& c, const std::string& o, const std::string& acc, const std::string&) {
    if (divisor > 0) return acc + " / " + float_literal(static_cast<double>(divisor));
    std::string count = "(Idx)1";
    for (int s = 0; s < sp; ++s) {
      const std::string os = at(o, first + s), in = c.dim(x, first + s);
      const std::string lo = c.fresh("lo"), hi = c.fresh("hi");
      if (adaptive) {
        const std::string out = c.size(shape.dims[static_cast<size_t>(first + s)]);
        c.line("const Idx " + lo + " = " + os + " * " + in + " / " + out + ";");
        c.line("const Idx " + hi + " = ((" + os + " + 1) * " + in + " + " + out + " - 1) / " + out + ";");
      } else {
        c.line("Idx " + lo + " = " + os + " * " + lit(st[s]) + " - " + lit(pad[s]) + ";");
        c.line("Idx " + hi + " = " + lo + " + " + lit(ks[s]) + "; if (" + hi + " > " + in + " + " + lit(pad[s]) + ") " + hi +
               " = " + in + " + " + lit(pad[s]) + ";");
        if (!include_pad)
          c.line("if (" + lo + " < 0) " + lo + " = 0; if (" + hi + " > " + in + ") " + hi + " = " + in + ";");
      }
      count += " * (" + hi + " - " + lo + ")";
    }
    return acc + " / (float)(" + count + ")";
  };
  std::vector<int> out;
  out.push_back(reduction(b, what, shape, {x}, is_max ? "GMax" : "GSum", extents, term, is_max ? plain() : avg));
  if (indices) {
    // The flat index of the pick within its (n, c) plane, from the window position `arg`.
    Finish where = [=](Code& c, const std::string& o, const std::string&, const std::string& arg) {
      const std::string k = c.unflat_dims(extents, arg);
      std::vector<std::string> xi;
      window(c, o, k, &xi);
      std::string f = "(Idx)0";
      for (int s = 0; s < sp; ++s) f = "(" + f + ") * " + c.dim(x, first + s) + " + (" + xi[static_cast<size_t>(first + s)] + ")";
      return "(float)(" + f + ")";
    };
    out.push_back(reduction(b, what + " (indices)", b.like(n.outputs[1], what), {x}, "GArgMax", extents, term, where));
  }
  return out;
}

}  // namespace

std::vector<int> lower_window_op(ProgramBuilder& b, const Node& n, const std::string& what) {
  if (n.op.rfind("conv", 0) == 0) return conv(b, n, what);
  if (n.op.find("pool") != std::string::npos) return pool(b, n, what);
  return {};
}

}  // namespace kevo::lower::generic
