// Family "generic": the baseline every task has. The task's program (generic_ir.h) rendered as a
// sequence of kernels, one per value that is stored (outputs, reductions, and whatever the
// genome's fusion knobs materialise; two for a reduction that kSplit splits over blocks: its
// partials, then their combine); views and elementwise chains are index remapping and inline
// code inside the kernels that read them.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <set>
#include <sstream>

#include "lower/generic/ops.h"

namespace kevo::lower {

namespace {

using generic::Code;
using generic::Kind;
using generic::Program;
using generic::Value;

std::string pointer_type(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "kevo::half_t";
    case DType::BFloat16: return "kevo::bf16_t";
    case DType::Int64: return "long long";
    case DType::Int32: return "int";
    case DType::Bool: return "bool";
  }
  return "float";
}

bool is_literal(const std::string& e) { return !e.empty() && e.find_first_not_of("0123456789") == std::string::npos; }

std::string product(const std::vector<std::string>& dims) {
  std::string s;
  for (const std::string& d : dims) s += (s.empty() ? "" : " * ") + (is_literal(d) ? d : "(" + d + ")");
  return s.empty() ? "1" : s;
}

// Uses of each value: by the values that read it, plus one per contract output it is.
std::vector<int> uses(const Program& prog) {
  std::vector<int> n(prog.values.size(), 0);
  for (const Value& v : prog.values)
    for (int u : std::set<int>(v.operands.begin(), v.operands.end())) ++n[static_cast<size_t>(u)];
  for (int o : prog.outputs) ++n[static_cast<size_t>(o)];
  return n;
}

bool same_sizes(const Value& a, const Value& b) { return a.sizes == b.sizes; }

// Blocks of `per` outputs each over n outputs, as a plan expression.
std::string tiles(const std::string& n, int64_t per) { return "(" + n + " + " + std::to_string(per - 1) + ") // " + std::to_string(per); }

// What the fusion knobs decide for one genome.
struct Partition {
  std::vector<bool> stored;       // has a buffer (input, output or scratch)
  std::map<int, int> epilogue;    // stored elementwise value E -> the reduction computed in its kernel
  std::map<int, std::set<int>> chain;  // E -> the elementwise values between that reduction and E (inlined)
};

bool reads_into_reduction(const Program& prog, int v) {
  for (const Value& w : prog.values)
    if ((w.kind == Kind::Reduce || w.kind == Kind::Scan) &&
        std::find(w.operands.begin(), w.operands.end(), v) != w.operands.end())
      return true;
  return false;
}

// Reductions whose single reader starts a same-shape elementwise chain ending at a stored value.
std::map<int, std::pair<int, std::set<int>>> epilogue_candidates(const Program& prog, const std::vector<bool>& stored) {
  std::map<int, std::pair<int, std::set<int>>> out;
  const std::vector<int> n = uses(prog);
  for (size_t a = 0; a < prog.values.size(); ++a) {
    if (prog.values[a].kind != Kind::Reduce || n[a] != 1) continue;
    if (std::find(prog.outputs.begin(), prog.outputs.end(), static_cast<int>(a)) != prog.outputs.end()) continue;
    int cur = static_cast<int>(a);
    std::set<int> chain;
    for (;;) {
      int reader = -1;
      for (size_t w = 0; w < prog.values.size(); ++w)
        for (int u : prog.values[w].operands)
          if (u == cur) reader = static_cast<int>(w);
      if (reader < 0) break;
      const Value& r = prog.values[static_cast<size_t>(reader)];
      if (r.kind != Kind::Map || !r.elementwise || !same_sizes(r, prog.values[a])) break;
      if (stored[static_cast<size_t>(reader)]) {
        out[reader] = {static_cast<int>(a), chain};
        break;
      }
      if (n[static_cast<size_t>(reader)] != 1) break;
      chain.insert(reader);
      cur = reader;
    }
  }
  return out;
}

class GenericSpace : public DesignSpace {
 public:
  GenericSpace(TaskGraphPtr tg, std::shared_ptr<const Program> prog, std::vector<Facts> facts)
      : DesignSpace("generic", "every op as a straightforward kernel; views and elementwise chains inlined", "generic",
                    std::move(facts)),
        tg_(std::move(tg)), prog_(std::move(prog)) {}

  std::string render(const Genome& g) const override;

 private:
  Partition partition(bool materialize, bool epilogue) const;
  TaskGraphPtr tg_;
  std::shared_ptr<const Program> prog_;
};

Partition GenericSpace::partition(bool materialize, bool epilogue) const {
  const Program& prog = *prog_;
  Partition p;
  p.stored.assign(prog.values.size(), false);
  for (size_t v = 0; v < prog.values.size(); ++v) {
    const Value& val = prog.values[v];
    p.stored[v] = val.kind != Kind::Map;
    if (materialize && val.kind == Kind::Map && val.elementwise && reads_into_reduction(prog, static_cast<int>(v))) p.stored[v] = true;
  }
  for (int o : prog.outputs) p.stored[static_cast<size_t>(o)] = true;
  if (epilogue) {
    for (const auto& [e, ac] : epilogue_candidates(prog, p.stored)) {
      if (p.epilogue.count(e)) continue;
      p.epilogue[e] = ac.first;
      p.chain[e] = ac.second;
      p.stored[static_cast<size_t>(ac.first)] = false;
    }
  }
  return p;
}

// One genome's source, written in order: the buffers every stored value gets, an accessor per
// value read, a kernel (two for a split reduction) per stored value, then the parameters (every
// buffer, then every size symbol the kernels used, numbered as first used).
class GenericRender {
 public:
  GenericRender(const Task& task, const Program& prog, const Partition& part, std::map<std::string, int64_t> knobs)
      : task_(task), prog_(prog), part_(part), k_(std::move(knobs)), block_(k_["kBlock"]), split_(k_["kSplit"]) {}

  // The source after the template includes: parameters, the reference's graph as a comment, the
  // accessors and the kernels. `graph` is the reference's op graph as text.
  std::string source(const std::string& graph);
  nlohmann::json plan() const;

 private:
  Code code() { return Code(prog_, accessor_, [this](const std::string& e) { return size(e); }); }
  std::string size(const std::string& e);
  void assign_buffers();
  void write_accessors();
  void write_kernel(int v);
  void write_scan(int v, std::ostringstream& b, const std::string& name);
  void write_reduce(int v, int source, std::ostringstream& b, const std::string& name);
  std::string store(int v, int source, const std::string& result);
  void add_kernel(const std::string& v, const std::string& body, const std::string& launch, const std::string& grid);
  void add_partial_kernels(int v, const Value& src, const std::string& body, const std::string& name, const std::string& shape,
                           int64_t per_block);
  std::string store_into(int target, Code& c, const std::string& o, const std::string& value) const {
    return "kevo::st(p.b_" + ident(buffer_.at(target)) + " + " + c.flat(target, o) + ", " + value + ");";
  }
  std::string all_sms() { return std::to_string(k_["kWaves"]) + " * num_sms"; }
  DType dtype_of(const std::string& name) const;
  std::vector<std::string> parameters(std::vector<std::string>* fields);

  const Task& task_;
  const Program& prog_;
  const Partition& part_;
  std::map<std::string, int64_t> k_;
  const int64_t block_, split_;
  const Code::Reader accessor_ = [](Code&, int u, const std::string& idx) { return "a" + std::to_string(u) + "(p, " + idx + ")"; };

  std::map<int, std::string> buffer_;  // inputs and outputs by their contract names, scratch as t<value>
  nlohmann::json scratch_ = nlohmann::json::object();
  std::vector<std::pair<std::string, DType>> partials_;  // kSplit > 1: each split reduction's partials (and picks)
  std::map<std::string, std::string> symbols_;           // plan expression -> p.sN
  std::ostringstream accessors_, kernels_;
  nlohmann::json steps_ = nlohmann::json::array(), args_ = nlohmann::json::array();
};

std::string GenericRender::size(const std::string& e) {
  if (is_literal(e)) return "(Idx)" + e;
  auto it = symbols_.find(e);
  if (it == symbols_.end()) it = symbols_.emplace(e, "p.s" + std::to_string(symbols_.size())).first;
  return "(Idx)" + it->second;
}

void GenericRender::assign_buffers() {
  for (size_t v = 0; v < prog_.values.size(); ++v)
    if (prog_.values[v].kind == Kind::Input) buffer_[static_cast<int>(v)] = task_.inputs[static_cast<size_t>(prog_.values[v].input)].name;
  for (size_t o = 0; o < prog_.outputs.size(); ++o) {
    const int v = prog_.outputs[o];
    if (buffer_.count(v))  // an output that is an input or another output
      throw std::runtime_error("an output that is an input or another output is not lowered by the generic family yet");
    buffer_[v] = task_.outputs[o].name;
  }
  for (size_t v = 0; v < prog_.values.size(); ++v)
    if (part_.stored[v] && !buffer_.count(static_cast<int>(v))) {
      buffer_[static_cast<int>(v)] = "t" + std::to_string(v);
      scratch_["t" + std::to_string(v)] = {{"dtype", "float32"}, {"shape", prog_.values[v].dims}};
    }
}

// Accessors: a stored value loads; a map computes inline from its operands.
void GenericRender::write_accessors() {
  std::set<int> inlined;  // epilogue chains: read only inside their kernel's store
  for (const auto& [e, chain] : part_.chain) inlined.insert(chain.begin(), chain.end());
  for (size_t v = 0; v < prog_.values.size(); ++v) {
    const Value& val = prog_.values[v];
    if ((!part_.stored[v] && val.kind != Kind::Map) || inlined.count(static_cast<int>(v))) continue;
    Code c = code();
    std::string e;
    if (part_.stored[v]) {
      e = "kevo::ld(p.b_" + ident(buffer_.at(static_cast<int>(v))) + " + " + c.flat(static_cast<int>(v), "i") + ")";
    } else {
      e = val.map(c, "i");
    }
    accessors_ << "// " << val.what << "\n__device__ __forceinline__ float a" << v << "(const Params& p, const Idx* i) {\n"
               << c.text() << "    return " << e << ";\n}\n";
  }
}

void GenericRender::add_kernel(const std::string& v, const std::string& body, const std::string& launch, const std::string& grid) {
  kernels_ << body << "extern \"C\" __global__ void __launch_bounds__(" << block_ << ") kevo_generic_" << v
           << "(KEVO_GENERIC_PARAMS) {\n  const Params p = KEVO_GENERIC_FIELDS;\n  " << launch << "\n}\n\n";
  steps_.push_back({{"kernel", "kevo_generic_" + v}, {"grid", {grid}}, {"block", {block_}}, {"args", nullptr}});
}

void GenericRender::write_kernel(int v) {
  const Value& val = prog_.values[static_cast<size_t>(v)];
  const int source = part_.epilogue.count(v) ? part_.epilogue.at(v) : v;  // whose terms the kernel reduces
  const Value& src = prog_.values[static_cast<size_t>(source)];
  const std::string name = "K" + std::to_string(v);
  std::ostringstream b;
  b << "// Kernel " << v << ": " << val.what << (source != v ? " (fused into the store of " + src.what + ")" : "") << "\n";
  b << "struct " << name << " {\n  using Params = ::Params;\n";
  if (val.kind == Kind::Scan) return write_scan(v, b, name);
  write_reduce(v, source, b, name);
}

void GenericRender::write_scan(int v, std::ostringstream& b, const std::string& name) {
  const Value& val = prog_.values[static_cast<size_t>(v)];
  const int r = val.rank(), d = val.scan_dim;
  std::vector<std::string> rest;
  for (int q = 0; q < r; ++q)
    if (q != d) rest.push_back(val.dims[static_cast<size_t>(q)]);
  auto index_of = [&](Code& c) {
    const std::string j = c.unflat_dims(rest, "row");
    std::vector<std::string> e;
    for (int q = 0, o = 0; q < r; ++q) e.push_back(q == d ? "at" : generic::at(j, o++));
    return c.index(e);
  };
  Code lc = code(), sc = code();
  const std::string li = index_of(lc), term = val.term(lc, li, "");
  const std::string si = index_of(sc), st = store_into(v, sc, si, "v");
  b << "  using Op = kevo::" << val.op << ";\n"
    << "  static __device__ __forceinline__ float load(const Params& p, Idx row, Idx at) {\n" << lc.text() << "    return " << term << ";\n  }\n"
    << "  static __device__ __forceinline__ void store(const Params& p, Idx row, Idx at, float v) {\n" << sc.text() << "    " << st << "\n  }\n};\n";
  Code gc = code();
  const std::string rows = product(rest), len = val.dims[static_cast<size_t>(d)];
  const std::string launch = "kevo::generic_scan<" + std::to_string(block_) + ", Idx, " + name + ">(p, " +
                             gc.size(rows == "1" ? "1" : rows) + ", " + gc.size(len) + ");";
  add_kernel(std::to_string(v), b.str(), launch, k_["kWaves"] ? all_sms() : rows);
}

void GenericRender::write_reduce(int v, int source, std::ostringstream& b, const std::string& name) {
  const Value& src = prog_.values[static_cast<size_t>(source)];
  const bool reduce = src.kind == Kind::Reduce;
  const int64_t kl = !reduce ? 1 : src.contraction ? std::min(k_["kContractLanes"], block_) : std::min(k_["kLanes"], block_);
  const int r = src.rank();
  Code oc = code();
  const std::string oj = oc.unflat(source, "f");
  b << "  using Op = kevo::" << (reduce ? src.op : "GSum") << ";\n  struct Out { Idx i[" << std::max(r, 1) << "]; };\n"
    << "  static __device__ __forceinline__ Out at(const Params& p, Idx f) {\n" << oc.text() << "    Out o;\n";
  for (int q = 0; q < std::max(r, 1); ++q) b << "    o.i[" << q << "] = " << oj << "[" << q << "];\n";
  b << "    return o;\n  }\n";
  Code tc = code();
  const std::string term = reduce ? src.term(tc, "o.i", tc.unflat_dims(src.extents, "kf")) : src.map(tc, "o.i");
  b << "  static __device__ __forceinline__ float term(const Params& p, const Out& o, Idx kf) {\n" << tc.text()
    << "    return " << term << ";\n  }\n";
  b << store(v, source, reduce ? "" : "acc");
  Code gc = code();
  const std::string n_out = product(src.dims), K = reduce ? product(src.extents) : "1";
  const std::string shape = std::to_string(block_) + ", " + std::to_string(kl) + ", " + std::to_string(k_["kItems"]) + ", " +
                            std::to_string(k_["kUnroll"]);
  const int64_t per_block = block_ / kl * k_["kItems"];
  if (!reduce || src.contraction || split_ == 1) {
    const std::string launch = "kevo::generic_reduce<" + shape + ", Idx, " + name + ">(p, " + gc.size(n_out) + ", " + gc.size(K) + ");";
    add_kernel(std::to_string(v), b.str(), launch, k_["kWaves"] ? all_sms() : tiles(n_out, per_block));
    return;
  }
  add_partial_kernels(v, src, b.str(), name, shape, per_block);
}

// The kernel's store: the reduction's finished value (or, for a map, `acc`), and where an
// elementwise tail is fused in, the tail computed from it (the chain between inline, the rest read).
std::string GenericRender::store(int v, int source, const std::string& result_of_map) {
  const Value& val = prog_.values[static_cast<size_t>(v)];
  const Value& src = prog_.values[static_cast<size_t>(source)];
  Code sc = code();
  const std::string result = result_of_map.empty() ? src.finish(sc, "o.i", "acc", "arg") : result_of_map;
  if (source != v) {
    const std::set<int> chain = part_.chain.at(v);
    sc.line("const float r = " + result + ";");
    Code::Reader inline_read = [&](Code& c, int u, const std::string& idx) {
      if (u == source) return std::string("r");
      if (chain.count(u)) return prog_.values[static_cast<size_t>(u)].map(c, idx);
      return accessor_(c, u, idx);
    };
    Code ec(prog_, inline_read, [this](const std::string& e) { return size(e); });
    const std::string ev = val.map(ec, "o.i");
    sc.line("{");
    std::istringstream lines(ec.text());
    for (std::string l; std::getline(lines, l);) sc.line(l.substr(l.find_first_not_of(' ')));
    sc.line(store_into(v, sc, "o.i", ev));
    sc.line("}");
  } else {
    sc.line(store_into(v, sc, "o.i", result));
  }
  return "  static __device__ __forceinline__ void store(const Params& p, const Out& o, float acc, Idx arg) {\n"
         "    (void)arg;\n" + sc.text() + "  }\n};\n";
}

// kSplit > 1: the partial kernel over (tile, split) pairs, then the combine's thread per output.
void GenericRender::add_partial_kernels(int v, const Value& src, const std::string& body, const std::string& name,
                                        const std::string& shape, int64_t per_block) {
  Code gc = code();
  const std::string n_out = product(src.dims), K = product(src.extents);
  const std::string pv = "t" + std::to_string(v) + "_partials", pi = "t" + std::to_string(v) + "_picks";
  const std::string split = std::to_string(split_);
  const bool arg = src.op == "GArgMax" || src.op == "GArgMin";
  partials_.emplace_back(pv, DType::Float32);
  scratch_[pv] = {{"dtype", "float32"}, {"shape", nlohmann::json::array({split, n_out})}};
  if (arg) {
    partials_.emplace_back(pi, DType::Int64);
    scratch_[pi] = {{"dtype", "int64"}, {"shape", nlohmann::json::array({split, n_out})}};
  }
  const std::string buffers = "p.b_" + pv + ", " + (arg ? "p.b_" + pi : std::string("nullptr")) + ");";
  const bool waves = k_["kWaves"] != 0;
  add_kernel(std::to_string(v) + "_partial", body,
             "kevo::generic_reduce_partial<" + shape + ", " + split + ", Idx, " + name + ">(p, " + gc.size(n_out) + ", " +
                 gc.size(K) + ", " + buffers,
             waves ? all_sms() : "(" + tiles(n_out, per_block) + ") * " + split);
  add_kernel(std::to_string(v), "",
             "kevo::generic_combine<" + std::to_string(block_) + ", " + split + ", Idx, " + name + ">(p, " + gc.size(n_out) +
                 ", " + buffers,
             waves ? all_sms() : tiles(n_out, block_));
}

DType GenericRender::dtype_of(const std::string& name) const {
  for (const TensorDecl& t : task_.inputs)
    if (t.name == name) return t.dtype;
  for (const TensorDecl& t : task_.outputs)
    if (t.name == name) return t.dtype;
  return DType::Float32;
}

// Every buffer, then every size symbol: fields b_<buffer> and s<N>; the kernels' parameters are
// the same names with "arg_" (no contract name can shadow the kernel's `p`). Fills the steps' args.
std::vector<std::string> GenericRender::parameters(std::vector<std::string>* fields) {
  std::vector<std::string> params;
  for (const auto& [v, name] : buffer_) {
    const bool input = prog_.values[static_cast<size_t>(v)].kind == Kind::Input;
    const DType t = scratch_.contains(name) ? DType::Float32 : dtype_of(name);
    params.push_back(std::string(input ? "const " : "") + pointer_type(t) + "* b_" + ident(name));
    fields->push_back("b_" + ident(name));
    args_.push_back(name);
  }
  for (const auto& [name, t] : partials_) {
    params.push_back(pointer_type(t) + "* b_" + name);
    fields->push_back("b_" + name);
    args_.push_back(name);
  }
  std::vector<std::string> symbol_exprs(symbols_.size());
  for (const auto& [e, f] : symbols_) symbol_exprs[static_cast<size_t>(std::stoi(f.substr(3)))] = e;
  for (size_t s = 0; s < symbol_exprs.size(); ++s) {
    params.push_back("long long s" + std::to_string(s));
    fields->push_back("s" + std::to_string(s));
    args_.push_back({{"int64", symbol_exprs[s]}});
  }
  for (auto& step : steps_) step["args"] = args_;
  return params;
}

std::string GenericRender::source(const std::string& graph) {
  assign_buffers();
  write_accessors();
  for (size_t v = 0; v < prog_.values.size(); ++v)
    if (part_.stored[v] && prog_.values[v].kind != Kind::Input) write_kernel(static_cast<int>(v));
  std::vector<std::string> fields;
  const std::vector<std::string> params = parameters(&fields);
  std::ostringstream src;
  src << "using Idx = " << (k_["kIndex32"] ? "int" : "long long") << ";\n\nstruct Params {\n";
  for (const std::string& p : params) src << "  " << p << ";\n";
  src << "};\n\n#define KEVO_GENERIC_PARAMS ";
  for (size_t i = 0; i < params.size(); ++i) {
    const size_t name = params[i].rfind(' ') + 1;
    src << (i ? ", " : "") << params[i].substr(0, name) << "arg_" << params[i].substr(name);
  }
  src << "\n#define KEVO_GENERIC_FIELDS Params{";
  for (size_t i = 0; i < fields.size(); ++i) src << (i ? ", " : "") << "arg_" << fields[i];
  src << "}\n\n// The reference's op graph (first workload):\n";
  std::istringstream ref(graph);
  for (std::string line; std::getline(ref, line);) src << "//   " << line << "\n";
  src << "\n" << accessors_.str() << "\n" << kernels_.str();
  return src.str();
}

nlohmann::json GenericRender::plan() const {
  nlohmann::json plan = {{"steps", steps_}};
  if (!scratch_.empty()) plan["buffers"] = scratch_;
  return plan;
}

std::string genome_comment(const std::string& space, const Genome& g, std::map<std::string, int64_t> k) {
  const int64_t split = k["kSplit"];
  std::ostringstream comment;
  comment << "Generated by kevo from template family 'generic' (space " << space << ").\nGenome: " << g.to_string() << " = kBlock "
          << k["kBlock"] << ", kLanes " << k["kLanes"] << ", kContractLanes " << k["kContractLanes"] << ", kItems " << k["kItems"]
          << ", kUnroll " << k["kUnroll"] << ", kWaves " << k["kWaves"] << ", " << (k["kIndex32"] ? "32" : "64") << "-bit indices, "
          << (k["kMaterialize"] ? "elementwise operands of reductions stored" : "elementwise operands of reductions inlined") << ", "
          << (k["kEpilogue"] ? "elementwise tails fused into reductions' stores" : "elementwise tails as their own kernels") << ", "
          << (split > 1 ? "kSplit " + std::to_string(split) + ": each non-contraction reduction's terms split over " +
                              std::to_string(split) + " blocks (a kernel of partials into scratch, then a thread per output combines them)"
                        : std::string("kSplit 1: a reduction's terms summed within one block per output")) << ".";
  return comment.str();
}

std::string GenericSpace::render(const Genome& g) const {
  const auto k = values(g);
  const Task& task = tg_->task();
  const Partition part = partition(k.at("kMaterialize") != 0, k.at("kEpilogue") != 0);
  GenericRender r(task, *prog_, part, k);
  const std::string src = r.source(tg_->graph().to_string());
  return candidate_text(task, task.name + "_generic", r.plan(), genome_comment(id(), g, k),
                        candidate_templates(manifest()) + "\n" + src);
}

}  // namespace

std::string generic_refusal(const TaskGraph& tg) {
  try {
    generic::ProgramBuilder(tg).build();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string generic_refusal(const Task& task) { return generic_refusal(TaskGraph(task)); }

bool generic_everywhere() {
  const char* e = std::getenv("KEVO_GENERIC");
  return e && std::string(e) == "everywhere";
}

std::vector<std::unique_ptr<DesignSpace>> lower_generic(const TaskGraphPtr& tg) {
  std::vector<std::unique_ptr<DesignSpace>> out;
  std::shared_ptr<const Program> prog;
  try {
    prog = std::make_shared<const Program>(generic::ProgramBuilder(*tg).build());
  } catch (const std::exception&) {
    return out;  // an op the family does not lower yet (kevo space says which with --why)
  }
  std::set<int> outs;
  for (int o : prog->outputs)
    if (prog->values[static_cast<size_t>(o)].kind == Kind::Input || !outs.insert(o).second) return out;  // a copy: not yet
  bool reduce = false, contract = false, materialize = false, split = false;
  for (size_t v = 0; v < prog->values.size(); ++v) {
    const Value& val = prog->values[v];
    reduce = reduce || (val.kind == Kind::Reduce && !val.contraction) || val.kind == Kind::Scan;
    split = split || (val.kind == Kind::Reduce && !val.contraction);
    contract = contract || (val.kind == Kind::Reduce && val.contraction);
    const bool output = std::find(prog->outputs.begin(), prog->outputs.end(), static_cast<int>(v)) != prog->outputs.end();
    materialize = materialize || (val.kind == Kind::Map && val.elementwise && !output && reads_into_reduction(*prog, static_cast<int>(v)));
  }
  std::vector<bool> stored(prog->values.size(), false);
  for (size_t v = 0; v < prog->values.size(); ++v) stored[v] = prog->values[v].kind != Kind::Map;
  for (int o : prog->outputs) stored[static_cast<size_t>(o)] = true;
  const bool epilogue = !epilogue_candidates(*prog, stored).empty();
  std::vector<Facts> facts;
  for (size_t w = 0; w < tg->workloads(); ++w) {
    // reduce_k, reduce_out: of non-contraction reductions; contract_k: of products and convolutions
    int64_t most = 1, outputs = 1, reduce_k = 1, reduce_out = 1, contract_k = 1;
    for (const Value& val : prog->values) {
      most = std::max(most, val.numel(w));
      if (val.kind != Kind::Input) outputs = std::max(outputs, val.numel(w));
      if (val.kind == Kind::Reduce) {
        int64_t k = 1;
        for (const std::string& e : val.extents) k *= AxisExpr::parse(e).eval(tg->task().axis_values(tg->task().workloads[w]));
        most = std::max(most, k);
        if (!val.contraction) reduce_k = std::max(reduce_k, k), reduce_out = std::max(reduce_out, val.numel(w));
        else contract_k = std::max(contract_k, k);
      }
    }
    facts.push_back({{"max_elems", most}, {"max_out", outputs}, {"has_reduce", reduce}, {"has_contract", contract},
                     {"has_materialize", materialize}, {"has_epilogue", epilogue}, {"has_split", split},
                     {"max_reduce_k", reduce_k}, {"max_reduce_out", reduce_out}, {"max_contract_k", contract_k}});
  }
  out.push_back(std::make_unique<GenericSpace>(tg, prog, std::move(facts)));
  // The largest value (and reduction) and the largest computed value, as the largest of their sizes.
  std::vector<std::string> elems{"1"}, outs_sizes{"1"}, reduce_k{"1"}, reduce_out{"1"}, contract_k{"1"};
  auto product = [](const std::vector<std::string>& dims) {
    std::string p;
    for (const std::string& d : dims) p += (p.empty() ? "" : " * ") + ("(" + d + ")");
    return p.empty() ? std::string("1") : p;
  };
  for (const Value& val : prog->values) {
    elems.push_back(product(val.dims));
    if (val.kind != Kind::Input) outs_sizes.push_back(product(val.dims));
    if (val.kind == Kind::Reduce) elems.push_back(product(val.extents));
    if (val.kind == Kind::Reduce && !val.contraction) reduce_k.push_back(product(val.extents)), reduce_out.push_back(product(val.dims));
    if (val.kind == Kind::Reduce && val.contraction) contract_k.push_back(product(val.extents));
  }
  out.back()->express_max("max_elems", elems);
  out.back()->express_max("max_out", outs_sizes);
  out.back()->express_max("max_reduce_k", reduce_k);
  out.back()->express_max("max_reduce_out", reduce_out);
  out.back()->express_max("max_contract_k", contract_k);
  for (const char* flag : {"has_reduce", "has_contract", "has_materialize", "has_epilogue", "has_split"})  // of the graph
    out.back()->express(flag, std::to_string(out.back()->facts().front().at(flag)));
  return out;
}

}  // namespace kevo::lower
