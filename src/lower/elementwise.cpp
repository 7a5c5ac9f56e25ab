// Family "elementwise": a graph of elementwise ops (with broadcasting inputs) fused into one
// kernel over the flat output.
#include <nlohmann/json.hpp>

#include <sstream>

#include "lower/families.h"

namespace kevo::lower {

namespace {

// How one input reaches an output element: the same flat index, or through broadcast strides.
struct Leaf {
  int value;
  std::string name;       // C++ identifier of the contract input
  bool full = false;      // same shape as the output
  std::vector<int> dims;  // broadcast: output dims (right-aligned) where the input varies
  std::vector<std::string> strides;  // the input's stride along each of those dims (expressions)
};

// Broadcast index code for a leaf: from the flat output index, the input's flat index.
std::string index_function(const Leaf& l, int out_rank) {
  std::ostringstream s;
  s << "  static __device__ __forceinline__ long long index_" << l.name << "(const Params& p, long long i) {\n";
  s << "    long long at = 0;\n";
  for (int d = out_rank - 1; d >= 0; --d) {
    auto it = std::find(l.dims.begin(), l.dims.end(), d);
    if (it != l.dims.end())
      s << "    at += (i % p.d" << d << ") * p.s_" << l.name << "_" << (it - l.dims.begin()) << ";\n";
    if (d > 0) s << "    i /= p.d" << d << ";\n";
  }
  s << "    return at;\n  }\n";
  return s.str();
}

class ElementwiseSpace : public DesignSpace {
 public:
  ElementwiseSpace(TaskGraphPtr tg, Region region, std::vector<Leaf> leaves, std::vector<Facts> facts)
      : DesignSpace("elementwise", "the whole graph as one fused elementwise kernel over the output", "elementwise",
                    std::move(facts)),
        tg_(std::move(tg)), region_(std::move(region)), leaves_(std::move(leaves)) {}

  std::string render(const Genome& g) const override {
    auto v = values(g);
    const Task& task = tg_->task();
    const Graph& gr = tg_->graph();
    const int out = tg_->output();
    const int rank = tg_->rank(out);
    const std::string out_name = ident(task.outputs.front().name);
    std::ostringstream body;
    body << "// The fused body, generated from the reference's op graph (first workload):\n";
    std::istringstream ref(gr.to_string());
    for (std::string line; std::getline(ref, line);) body << "//   " << line << "\n";
    body << "struct Body {\n  struct Params {\n";
    for (const Leaf& l : leaves_) body << "    const float* __restrict__ " << l.name << ";\n";
    body << "    float* __restrict__ " << out_name << ";\n";
    for (const std::string& f : size_fields()) body << "    long long " << f << ";\n";
    body << "  };\n\n";
    for (const Leaf& l : leaves_)
      if (!l.full) body << index_function(l, rank) << "\n";
    body << "  template <int kVec>\n  static __device__ __forceinline__ void apply(const Params& p, long long i) {\n";
    for (const Leaf& l : leaves_) {
      body << "    float " << l.name << "[kVec];\n";
      if (l.full) {
        body << "    kevo::load_vec<kVec>(" << l.name << ", p." << l.name << " + i);\n";
      } else {
        body << "#pragma unroll\n    for (int k = 0; k < kVec; ++k) " << l.name << "[k] = p." << l.name << "[index_"
             << l.name << "(p, i + k)];\n";
      }
    }
    body << "    float result[kVec];\n#pragma unroll\n    for (int k = 0; k < kVec; ++k) {\n";
    std::string result;
    body << emit_region(gr, region_, [&](int leaf) { return leaf_name(leaf) + "[k]"; }, "      ", &result);
    body << "      result[k] = " << result << ";\n    }\n";
    body << "    kevo::store_vec<kVec>(p." << out_name << " + i, result);\n  }\n};\n\n";

    const int64_t block = v["kBlock"], vec = v["kVec"], items = v["kItems"], shape = v["kShape"], waves = v["kWaves"];
    std::ostringstream k;
    k << "extern \"C\" __global__ void __launch_bounds__(" << block << ") kevo_elementwise(";
    std::vector<std::string> params;
    for (const Leaf& l : leaves_) params.push_back("const float* " + l.name);
    params.push_back("float* " + out_name);
    params.push_back("long long n");
    for (const std::string& f : size_fields()) params.push_back("long long " + f);
    for (size_t i = 0; i < params.size(); ++i) k << (i ? ", " : "") << params[i];
    k << ") {\n  Body::Params p{";
    std::vector<std::string> fields;
    for (const Leaf& l : leaves_) fields.push_back(l.name);
    fields.push_back(out_name);
    for (const std::string& f : size_fields()) fields.push_back(f);
    for (size_t i = 0; i < fields.size(); ++i) k << (i ? ", " : "") << fields[i];
    k << "};\n  kevo::elementwise<" << block << ", " << vec << ", " << items << ", " << enumerator(g, "kShape")
      << ", Body>(p, n);\n}\n";

    nlohmann::json args = nlohmann::json::array();
    for (const Leaf& l : leaves_) args.push_back(task.inputs[static_cast<size_t>(tg_->input_index(l.value))].name);
    args.push_back(task.outputs.front().name);
    std::string n = tg_->product(out, 0, rank);
    args.push_back({{"int64", n}});
    if (has_broadcast()) {
      for (int d = 0; d < rank; ++d) args.push_back({{"int64", tg_->dim(out, d)}});
      for (const Leaf& l : leaves_)
        for (const std::string& st : l.strides) args.push_back({{"int64", st}});
    }
    const int64_t tile = block * vec * items;
    nlohmann::json grid = shape ? nlohmann::json(std::to_string(waves) + " * num_sms")
                                : nlohmann::json("(" + n + " + " + std::to_string(tile - 1) + ") // " + std::to_string(tile));
    nlohmann::json plan = {{"steps", {{{"kernel", "kevo_elementwise"}, {"grid", {grid}}, {"block", {block}}, {"args", args}}}}};
    std::string comment = "Generated by kevo from template family 'elementwise' (space " + id() + ").\nGenome: " +
                          g.to_string() + " = kBlock " + std::to_string(block) + ", kVec " + std::to_string(vec) +
                          ", kItems " + std::to_string(items) + ", " + (shape ? "grid-stride over " + std::to_string(waves) + " blocks per SM" : "one pass") + ".";
    return candidate_text(task, task.name + "_elementwise", plan, comment,
                          candidate_templates(manifest()) + "\n" + body.str() + k.str());
  }

 private:
  // Output dims d0.. and each broadcast input's strides s_<input>_<k>, as kernel arguments.
  std::vector<std::string> size_fields() const {
    std::vector<std::string> f;
    if (!has_broadcast()) return f;
    for (int d = 0; d < tg_->rank(tg_->output()); ++d) f.push_back("d" + std::to_string(d));
    for (const Leaf& l : leaves_)
      for (size_t k = 0; k < l.strides.size(); ++k) f.push_back("s_" + l.name + "_" + std::to_string(k));
    return f;
  }
  bool has_broadcast() const {
    for (const Leaf& l : leaves_)
      if (!l.full) return true;
    return false;
  }
  std::string leaf_name(int v) const {
    for (const Leaf& l : leaves_)
      if (l.value == v) return l.name;
    return "?";
  }

  TaskGraphPtr tg_;
  Region region_;
  std::vector<Leaf> leaves_;
};

}  // namespace

std::vector<std::unique_ptr<DesignSpace>> lower_elementwise(const TaskGraphPtr& tgp) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  const TaskGraph& tg = *tgp;
  const Graph& g = tg.graph();
  if (g.outputs.size() != 1) return out;
  const int o = tg.output();
  if (g.values[static_cast<size_t>(o)].dtype != DType::Float32 || tg.input_index(o) >= 0) return out;
  Region r = elementwise_region(g, o, [&](int v) { return tg.input_index(v) >= 0; });
  if (!r.ok) return out;
  const Shape& os = g.values[static_cast<size_t>(o)].shape;
  const int rank = static_cast<int>(os.size());
  std::vector<Leaf> leaves;
  for (int v : r.leaves) {
    const ValueInfo& in = g.values[static_cast<size_t>(v)];
    if (in.dtype != DType::Float32 || static_cast<int>(in.shape.size()) > rank) return out;
    Leaf l;
    l.value = v;
    l.name = ident(tg.task().inputs[static_cast<size_t>(tg.input_index(v))].name);
    l.full = in.shape == os;
    const int offset = rank - static_cast<int>(in.shape.size());
    if (!l.full) {
      for (int d = 0; d < static_cast<int>(in.shape.size()); ++d) {
        bool varies = false;
        for (size_t w = 0; w < tg.workloads(); ++w) varies = varies || tg.graph(w).values[static_cast<size_t>(v)].shape[static_cast<size_t>(d)] != 1;
        if (!varies) continue;
        l.dims.push_back(d + offset);
        l.strides.push_back(tg.product(v, d + 1, static_cast<int>(in.shape.size())));
      }
      if (l.dims.empty()) l.dims.push_back(rank - 1), l.strides.push_back("0");  // a single element
    }
    leaves.push_back(std::move(l));
  }
  std::vector<Facts> facts;
  for (size_t w = 0; w < tg.workloads(); ++w) facts.push_back({{"n", tg.product_value(w, o, 0, rank)}});
  out.push_back(std::make_unique<ElementwiseSpace>(tgp, std::move(r), std::move(leaves), std::move(facts)));
  out.back()->express("n", tg.product(o, 0, rank));
  return out;
}

}  // namespace kevo::lower
