// Candidate files (JSON, or .cu with an embedded plan): parsing, validation against a task, resolution.
#include "core/candidate.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <climits>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "core/json_doc.h"
#include "core/json_positions.h"
#include "core/tensor_map.h"

namespace kevo {

namespace {


// A kernel's parameters fit CUDA's parameter space: 32,764 bytes since CUDA 12.1 on Volta and
// later (every architecture kevo builds for; whole models' generic kernels take every buffer, 768
// for DenseNet-121), each argument counted at 8 bytes (a pointer or a scalar, as aligned), a
// tensor map at 128.
constexpr size_t kParamBytes = 32764;
constexpr size_t kArgBytes = 8, kTensorMapBytes = 128;
const char* kKnownLibraries = "cublaslt.matmul, cudnn.conv2d_forward";
const char* const kEpilogueNames[] = {"none", "relu", "gelu", "bias", "bias_relu", "bias_gelu"};  // in enum order
const char* const kEmulationNames[] = {"off", "performant", "eager"};                              // in enum order

// ---- the candidate's C++ source, read as text ---------------------------------------------

// The source with comments and string/character literals blanked to spaces (newlines kept, so
// offsets still match), and the [begin, end) of every block comment. Enough lexing to find
// `__global__` functions and kevo-plan comments without being fooled by text inside either.
struct SourceScan {
  std::string code;
  std::vector<std::pair<size_t, size_t>> block_comments;
};

SourceScan scan_source(const std::string& src) {
  SourceScan s{src, {}};
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < src.size(); ++k)
      if (src[k] != '\n') s.code[k] = ' ';
  };
  size_t i = 0;
  while (i < src.size()) {
    char c = src[i];
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
      size_t end = src.find('\n', i);
      end = end == std::string::npos ? src.size() : end;
      blank(i, end);
      i = end;
    } else if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
      size_t close = src.find("*/", i + 2);
      size_t end = close == std::string::npos ? src.size() : close + 2;
      s.block_comments.push_back({i, end});
      blank(i, end);
      i = end;
    } else if (c == '"' || c == '\'') {
      size_t k = i + 1;
      while (k < src.size() && src[k] != c && src[k] != '\n') k += src[k] == '\\' ? 2 : 1;
      blank(i, k + 1);
      i = k + 1;
    } else {
      ++i;
    }
  }
  return s;
}

// Path helpers on plain strings: std::filesystem is avoided because LibTorch 2.x wheels export
// their own copies of its symbols, which crash when a program built with a newer GCC binds to them.
std::string parent_dir(const std::string& file) {
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

std::string file_name(const std::string& file) {
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

std::string extension(const std::string& file) {
  std::string name = file_name(file);
  size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? std::string() : name.substr(dot);
}

// The whole file; nullopt unless it is a readable regular file.
std::optional<std::string> read_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || in.bad()) return std::nullopt;
  return text.str();
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Names of the functions declared `__global__` in blanked source. Attributes that take
// parentheses (`__launch_bounds__(256)`) may stand between `__global__` and the name.
std::set<std::string> global_functions(const std::string& code) {
  static const std::set<std::string> attributes = {"__launch_bounds__", "__cluster_dims__", "__maxnreg__",
                                                   "__attribute__",     "__declspec",       "alignas"};
  std::set<std::string> names;
  const std::string kw = "__global__";
  for (size_t at = code.find(kw); at != std::string::npos; at = code.find(kw, at + kw.size())) {
    if ((at > 0 && is_ident_char(code[at - 1])) || is_ident_char(code[std::min(at + kw.size(), code.size() - 1)]))
      continue;
    std::string last;
    for (size_t i = at + kw.size(); i < code.size() && code[i] != ';' && code[i] != '{';) {
      if (is_ident_char(code[i])) {
        size_t start = i;
        while (i < code.size() && is_ident_char(code[i])) ++i;
        last = code.substr(start, i - start);
      } else if (code[i] == '(' && !attributes.count(last)) {
        if (!last.empty()) names.insert(last);
        break;
      } else if (code[i] == '(') {  // an attribute's arguments
        int depth = 0;
        do {
          depth += code[i] == '(' ? 1 : code[i] == ')' ? -1 : 0;
          ++i;
        } while (i < code.size() && depth > 0);
        last.clear();
      } else {
        ++i;
      }
    }
  }
  return names;
}

// "ns::softmax_rows<256, 4>" -> "softmax_rows": the name a __global__ definition spells.
std::string kernel_base_name(const std::string& expr) {
  std::string head;
  for (char c : expr.substr(0, expr.find('<')))
    if (!std::isspace(static_cast<unsigned char>(c))) head += c;
  size_t colons = head.rfind("::");
  return colons == std::string::npos ? head : head.substr(colons + 2);
}

// ---- the plan's JSON, with positions in the user's file -------------------------------------

Origin origin_of(const Doc& doc, const Path& p) { return {doc.loc(p), p.field}; }

std::string joined(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool is_identifier(const std::string& s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), is_ident_char);
}

struct KnownBuffer {
  DType dtype;
  ResolvedBuffer::Role role;
};

// Reads the candidate document into a Candidate, checking everything a workload does not decide.
class PlanReader {
 public:
  PlanReader(const Doc& doc, const Task& task, Candidate& c) : doc_(doc), task_(task), c_(c) {
    for (const Axis& a : task.axes) axes_.insert(a.name);
    for (const TensorDecl& t : task.inputs) buffers_[t.name] = {t.dtype, ResolvedBuffer::Input};
    for (const TensorDecl& t : task.outputs) buffers_[t.name] = {t.dtype, ResolvedBuffer::Output};
  }

  // The top level. `embedded`: the .cu form, whose source (already in the candidate) is the file
  // itself, scanned by the caller to find the plan.
  void read(const json& root, SourceScan* embedded) {
    const Path top;
    std::vector<std::string> keys = {"name", "plan", "task"};
    if (!embedded) keys.insert(keys.end(), {"source", "source_file"});
    object(root, top, keys);
    if (root.contains("name")) {
      c_.name = string(root["name"], top.key("name"));
      static const std::regex name_re("[A-Za-z0-9_.\\-]+");
      if (!std::regex_match(c_.name, name_re))
        doc_.fail(top.key("name"), "must be letters, digits, '_', '.' or '-', got '" + c_.name + "'");
    }
    if (root.contains("task")) {
      std::string t = string(root["task"], top.key("task"));
      if (t != task_.name)
        doc_.fail(top.key("task"), "the candidate is for task '" + t + "' but the task is '" + task_.name + "'");
    }
    if (!embedded) read_source(root);
    const std::string code = embedded ? std::move(embedded->code) : scan_source(c_.source).code;
    globals_ = global_functions(code);
    if (code.find_first_not_of(" \t\r\n") == std::string::npos) {
      if (embedded) doc_.fail(top, "the file holds no code besides its plan");
      doc_.fail(top.key(root.contains("source") ? "source" : "source_file"), "the source is empty");
    }
    if (!root.contains("plan")) doc_.fail(top, "missing required field 'plan'");
    read_plan(root["plan"], top.key("plan"));
  }

 private:
  // ---- typed access; each failure names the field ----

  const json& object(const json& v, const Path& p) const {
    if (!v.is_object()) doc_.fail(p, "must be an object, got " + kind_of(v));
    return v;
  }
  const json& object(const json& v, const Path& p, const std::vector<std::string>& allowed) const {
    object(v, p);
    for (auto it = v.begin(); it != v.end(); ++it)
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
        doc_.fail(p.key(it.key()), "unknown field '" + it.key() + "' (expected one of: " + joined(allowed) + ")", true);
    return v;
  }
  const json& required(const json& obj, const Path& p, const char* key) const {
    if (!obj.contains(key)) doc_.fail(p, std::string("missing required field '") + key + "'");
    return obj[key];
  }
  std::string string(const json& v, const Path& p) const {
    if (!v.is_string()) doc_.fail(p, "must be a string, got " + kind_of(v));
    return v.get<std::string>();
  }
  double number(const json& v, const Path& p) const {
    if (!v.is_number()) doc_.fail(p, "must be a number, got " + kind_of(v));
    return v.get<double>();
  }
  bool boolean(const json& v, const Path& p) const {
    if (!v.is_boolean()) doc_.fail(p, "must be true or false, got " + kind_of(v));
    return v.get<bool>();
  }
  int64_t integer(const json& v, const Path& p, int64_t lo, int64_t hi) const {
    bool ok = v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi));
    if (!ok || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      doc_.fail(p, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v.dump());
    return v.get<int64_t>();
  }

  // An axis expression (a string) or an integer; its axes must be the task's.
  PlanExpr expr(const json& v, const Path& p) const {
    PlanExpr e;
    e.at = origin_of(doc_, p);
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        doc_.fail(p, v.dump() + " overflows 64 bits");
      e.expr = AxisExpr::parse(std::to_string(v.get<int64_t>()));
      return e;
    }
    if (!v.is_string())
      doc_.fail(p,
                "must be an axis expression (a string) or an integer, got " + (v.is_number() ? v.dump() : kind_of(v)));
    try {
      e.expr = AxisExpr::parse(v.get<std::string>());
    } catch (const std::invalid_argument& err) {
      doc_.fail(p, std::string("bad expression ") + err.what());
    }
    for (const std::string& name : e.expr.names())
      if (!axes_.count(name) && name != kNumSms)
        doc_.fail(p, "unknown axis '" + name + "' (the task's axes: " + joined({axes_.begin(), axes_.end()}) +
                         "; and num_sms, the GPU's SM count)");
    return e;
  }

  std::string buffer(const json& v, const Path& p) const {
    std::string name = string(v, p);
    if (!buffers_.count(name)) {
      std::vector<std::string> known;
      for (const auto* list : {&task_.inputs, &task_.outputs})
        for (const TensorDecl& t : *list) known.push_back(t.name);
      for (const ScratchBuffer& s : c_.plan.buffers) known.push_back(s.name);
      doc_.fail(p, "unknown buffer '" + name + "' (known: " + joined(known) + ")");
    }
    return name;
  }

  // ---- the document ----

  void read_source(const json& root) {
    const Path top;
    bool inline_source = root.contains("source"), from_file = root.contains("source_file");
    if (inline_source && from_file) doc_.fail(top.key("source_file"), "give 'source' or 'source_file', not both", true);
    if (!inline_source && !from_file) doc_.fail(top, "missing 'source' (the CUDA C++ text) or 'source_file' (a path)");
    if (inline_source) {
      c_.source = string(root["source"], top.key("source"));
      return;
    }
    Path p = top.key("source_file");
    std::string rel = string(root["source_file"], p);
    if (rel.empty()) doc_.fail(p, "must name a file");
    std::string path = rel[0] == '/' ? rel : parent_dir(doc_.file()) + rel;
    std::optional<std::string> text = read_text(path);
    if (!text) doc_.fail(p, "cannot read '" + rel + "'" + (path == rel ? "" : " (looked at " + path + ")"));
    c_.source = std::move(*text);
    c_.source_file = path;
  }

  void read_plan(const json& v, const Path& p) {
    object(v, p, {"buffers", "steps"});
    if (v.contains("buffers")) read_buffers(object(v["buffers"], p.key("buffers")), p.key("buffers"));
    const json& steps = required(v, p, "steps");
    Path sp = p.key("steps");
    if (!steps.is_array()) doc_.fail(sp, "must be an array of steps, got " + kind_of(steps));
    if (steps.empty()) doc_.fail(sp, "a plan needs at least one step");
    for (size_t i = 0; i < steps.size(); ++i) c_.plan.steps.push_back(read_step(steps[i], sp.index(i)));
    for (const TensorDecl& out : task_.outputs)
      if (!written_.count(out.name))
        doc_.fail(sp, "no step writes the task's output '" + out.name +
                          "' (pass it to a kernel or make it a library step's output)");
  }

  void read_buffers(const json& v, const Path& p) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      Path bp = p.key(it.key());
      ScratchBuffer b;
      b.name = it.key();
      b.at = origin_of(doc_, bp);
      if (!is_identifier(b.name)) doc_.fail(bp, "'" + b.name + "' is not an identifier", true);
      auto known = buffers_.find(b.name);
      if (known != buffers_.end())
        doc_.fail(bp,
                  "the scratch buffer '" + b.name + "' shadows the task's " +
                      (known->second.role == ResolvedBuffer::Input ? "input" : "output"),
                  true);
      object(it.value(), bp, {"dtype", "shape"});
      std::string dt = string(required(it.value(), bp, "dtype"), bp.key("dtype"));
      auto dtype = parse_dtype(dt);
      if (!dtype)
        doc_.fail(bp.key("dtype"), "unsupported dtype '" + dt +
                                       "' (supported: float32, float64, float16, bfloat16, int64, int32, bool)");
      b.dtype = *dtype;
      const json& shape = required(it.value(), bp, "shape");
      Path shp = bp.key("shape");
      if (!shape.is_array()) doc_.fail(shp, "must be an array of sizes, got " + kind_of(shape));
      for (size_t i = 0; i < shape.size(); ++i) b.shape.push_back(expr(shape[i], shp.index(i)));
      buffers_[b.name] = {b.dtype, ResolvedBuffer::Scratch};
      c_.plan.buffers.push_back(std::move(b));
    }
  }

  Step read_step(const json& v, const Path& p) {
    object(v, p);
    Step step;
    step.at = origin_of(doc_, p);
    if (v.contains("kernel") && v.contains("library"))
      doc_.fail(p, "a step is a 'kernel' or a 'library' call, not both");
    if (v.contains("kernel")) {
      step.op = read_kernel(v, p);
      return step;
    }
    if (!v.contains("library")) doc_.fail(p, "a step needs 'kernel' (a launch) or 'library' (a library call)");
    std::string lib = string(v["library"], p.key("library"));
    if (lib == "cublaslt.matmul")
      step.op = read_matmul(v, p);
    else if (lib == "cudnn.conv2d_forward")
      step.op = read_conv2d(v, p);
    else
      doc_.fail(p.key("library"), "unknown library '" + lib + "' (known: " + kKnownLibraries + ")");
    return step;
  }

  KernelStep read_kernel(const json& v, const Path& p) {
    object(v, p, {"kernel", "grid", "block", "shared_bytes", "args"});
    KernelStep k;
    Path kp = p.key("kernel");
    k.kernel = string(v["kernel"], kp);
    static const std::regex name_re(R"(\s*(::)?[A-Za-z_]\w*(\s*::\s*[A-Za-z_]\w*)*\s*(<.*>)?\s*)");
    if (!std::regex_match(k.kernel, name_re))
      doc_.fail(kp, "'" + k.kernel + "' is not a kernel name or a template instantiation such as k<256, 4>");
    std::string base = kernel_base_name(k.kernel);
    if (!globals_.count(base))
      doc_.fail(kp, "the source defines no __global__ function '" + base + "' (it defines: " +
                        (globals_.empty() ? "none" : joined({globals_.begin(), globals_.end()})) + ")");
    for (const char* dim : {"grid", "block"}) {
      Path dp = p.key(dim);
      const json& a = required(v, p, dim);
      if (!a.is_array() || a.empty() || a.size() > 3) doc_.fail(dp, "must be an array of 1 to 3 sizes");
      for (size_t i = 0; i < a.size(); ++i) (dim[0] == 'g' ? k.grid : k.block).push_back(expr(a[i], dp.index(i)));
    }
    k.shared_bytes = v.contains("shared_bytes") ? expr(v["shared_bytes"], p.key("shared_bytes"))
                                                : PlanExpr{AxisExpr::parse("0"), origin_of(doc_, p)};
    if (v.contains("args")) {
      Path ap = p.key("args");
      const json& args = v["args"];
      if (!args.is_array()) doc_.fail(ap, "must be an array, got " + kind_of(args));
      if (args.size() * kArgBytes > kParamBytes)
        doc_.fail(ap, std::to_string(args.size()) + " arguments; a kernel takes at most " + std::to_string(kParamBytes / kArgBytes));
      size_t bytes = 0;
      for (size_t i = 0; i < args.size(); ++i) {
        k.args.push_back(read_arg(args[i], ap.index(i)));
        bytes += k.args.back().kind == ArgKind::TensorMap ? kTensorMapBytes : kArgBytes;
      }
      if (bytes > kParamBytes)
        doc_.fail(ap, std::to_string(bytes) + " bytes of arguments; a kernel takes at most " + std::to_string(kParamBytes) +
                          " (a tensor map is 128)");
    }
    return k;
  }

  KernelArg read_arg(const json& v, const Path& p) {
    KernelArg a;
    if (v.is_string()) {
      a.buffer = buffer(v, p);
      written_.insert(a.buffer);  // a kernel may write any buffer it is given
      return a;
    }
    if (v.is_number())
      doc_.fail(
          p, "give scalar arguments a type: {\"int\": ...}, {\"int64\": ...}, {\"float\": ...} or {\"double\": ...}");
    if (!v.is_object())
      doc_.fail(p, "must be a buffer name or a typed scalar such as {\"int\": \"D\"}, got " + kind_of(v));
    object(v, p, {"int", "int64", "float", "double", "tensor_map"});
    if (v.size() != 1) doc_.fail(p, "a typed argument has exactly one key: int, int64, float, double or tensor_map");
    const std::string type = v.begin().key();
    Path vp = p.key(type);
    a.at = origin_of(doc_, vp);
    if (type == "tensor_map") {
      a.kind = ArgKind::TensorMap;
      a.tensor_map = read_tensor_map(v.begin().value(), vp);
      written_.insert(a.tensor_map.buffer);  // TMA may store through it
    } else if (type == "int" || type == "int64") {
      a.kind = type == "int" ? ArgKind::Int32 : ArgKind::Int64;
      a.value = expr(v.begin().value(), vp);
    } else {
      a.kind = type == "float" ? ArgKind::Float32 : ArgKind::Float64;
      a.real = number(v.begin().value(), vp);
      if (a.kind == ArgKind::Float32 && std::fabs(a.real) > FLT_MAX)
        doc_.fail(vp, v.begin().value().dump() + " does not fit a float32 (use {\"double\": ...})");
    }
    return a;
  }

  // {"buffer": ..., "dims": [...], "strides": [...], "box": [...], "swizzle": ...}: what the plan
  // fixes is checked here (cuTensorMapEncodeTiled's limits), sizes per workload at resolution.
  TensorMapArg read_tensor_map(const json& v, const Path& p) const {
    object(v, p, {"buffer", "dtype", "dims", "strides", "box", "swizzle"});
    TensorMapArg t;
    t.buffer = buffer(required(v, p, "buffer"), p.key("buffer"));
    const DType dtype = buffers_.at(t.buffer).dtype;
    if (!tensor_map_dtype_supported(dtype))
      doc_.fail(p.key("buffer"), "'" + t.buffer + "' holds " + dtype_name(dtype) + "; a tensor map cannot");
    if (v.contains("dtype") && string(v["dtype"], p.key("dtype")) != dtype_name(dtype))
      doc_.fail(p.key("dtype"), "'" + t.buffer + "' holds " + dtype_name(dtype) + ", not " + v["dtype"].get<std::string>());
    auto list = [&](const char* key) -> const json& {
      const json& a = required(v, p, key);
      if (!a.is_array() || a.empty() || a.size() > static_cast<size_t>(kMaxTensorMapRank))
        doc_.fail(p.key(key), "must be an array of 1 to " + std::to_string(kMaxTensorMapRank) + " entries (innermost dim first)");
      return a;
    };
    const json& dims = list("dims");
    for (size_t i = 0; i < dims.size(); ++i) t.dims.push_back(expr(dims[i], p.key("dims").index(i)));
    if (v.contains("strides")) {
      Path sp = p.key("strides");
      const json& s = v["strides"];
      if (!s.is_array() || s.size() + 1 != dims.size())
        doc_.fail(sp, "must be an array of " + std::to_string(dims.size() - 1) +
                          " strides in elements, one per dim after the first");
      for (size_t i = 0; i < s.size(); ++i) t.strides.push_back(expr(s[i], sp.index(i)));
    }
    const json& box = list("box");
    if (box.size() != dims.size())
      doc_.fail(p.key("box"), "has " + std::to_string(box.size()) + " entries but 'dims' has " + std::to_string(dims.size()));
    for (size_t i = 0; i < box.size(); ++i) t.box.push_back(integer(box[i], p.key("box").index(i), 1, kMaxTensorMapBox));
    const int64_t inner = t.box[0] * dtype_size(dtype);
    if (inner % 16 != 0)
      doc_.fail(p.key("box").index(0), std::to_string(t.box[0]) + " elements of " + dtype_name(dtype) + " are " +
                                           std::to_string(inner) + " bytes; TMA moves rows of a multiple of 16 bytes");
    if (v.contains("swizzle")) {
      Path sw = p.key("swizzle");
      t.swizzle = static_cast<int>(integer(v["swizzle"], sw, 0, 128));
      if (t.swizzle != 0 && t.swizzle != 32 && t.swizzle != 64 && t.swizzle != 128)
        doc_.fail(sw, "must be 0 (none), 32, 64 or 128 (bytes), got " + std::to_string(t.swizzle));
      if (t.swizzle != 0 && inner > t.swizzle)
        doc_.fail(sw, "a " + std::to_string(t.swizzle) + "-byte swizzle takes box rows of at most " + std::to_string(t.swizzle) +
                          " bytes; box[0] is " + std::to_string(inner) + " bytes");
    }
    return t;
  }

  // A library step's operand: a float32 buffer. An output must not be one of the task's inputs.
  std::string operand(const json& v, const Path& p, const char* key, const std::string& library, bool output) {
    Path op = p.key(key);
    std::string name = buffer(required(v, p, key), op);
    const KnownBuffer& b = buffers_.at(name);
    if (b.dtype != DType::Float32)
      doc_.fail(op, library + " takes float32 operands (fp32 only for now); '" + name + "' is " + dtype_name(b.dtype));
    if (output && b.role == ResolvedBuffer::Input)
      doc_.fail(op, "'" + name + "' is an input of the task; no step may write it");
    if (output) written_.insert(name);
    return name;
  }

  // Convolutions take only the first two epilogues.
  Epilogue epilogue(const json& v, const Path& p, bool with_bias_kinds) const {
    if (!v.contains("epilogue")) return Epilogue::None;
    Path ep = p.key("epilogue");
    std::string e = string(v["epilogue"], ep);
    std::vector<std::string> allowed(kEpilogueNames, kEpilogueNames + (with_bias_kinds ? 6 : 2));
    for (size_t i = 0; i < allowed.size(); ++i)
      if (allowed[i] == e) return static_cast<Epilogue>(i);
    doc_.fail(ep, "unknown epilogue '" + e + "' (expected " + joined(allowed, ", ") + ")");
  }

  MatmulStep read_matmul(const json& v, const Path& p) {
    const std::string lib = "cublaslt.matmul";
    object(v, p,
           {"library", "a", "b", "d", "bias", "transpose_a", "transpose_b", "alpha", "epilogue", "algo", "emulation"});
    MatmulStep m;
    m.a = operand(v, p, "a", lib, false);
    m.b = operand(v, p, "b", lib, false);
    if (v.contains("bias")) m.bias = operand(v, p, "bias", lib, false);
    m.d = operand(v, p, "d", lib, true);
    if (v.contains("transpose_a")) m.transpose_a = boolean(v["transpose_a"], p.key("transpose_a"));
    if (v.contains("transpose_b")) m.transpose_b = boolean(v["transpose_b"], p.key("transpose_b"));
    if (v.contains("alpha")) m.alpha = number(v["alpha"], p.key("alpha"));
    m.epilogue = epilogue(v, p, true);
    if (v.contains("algo")) {  // whether the list is that long is known only on the GPU (a launch error there)
      const json& a = v["algo"];
      const bool index = a.is_number_integer() && (a.is_number_unsigned() ? a.get<uint64_t>() <= INT32_MAX
                                                                          : a.get<int64_t>() >= 0 && a.get<int64_t>() <= INT32_MAX);
      if (a.is_string() && a.get<std::string>() == "auto")
        m.algo = kAutotunedAlgo;
      else if (index)
        m.algo = a.get<int64_t>();
      else
        doc_.fail(p.key("algo"),
                  "must be a non-negative integer, an index into cuBLASLt's heuristic list (0: its first choice), or "
                  "\"auto\" (the fastest of its first 8, timed at first use); got " + a.dump());
    }
    if (v.contains("emulation")) m.emulation = emulation(v["emulation"], p.key("emulation"));
    bool adds_bias =
        m.epilogue == Epilogue::Bias || m.epilogue == Epilogue::BiasRelu || m.epilogue == Epilogue::BiasGelu;
    if (adds_bias && m.bias.empty())
      doc_.fail(p.key("epilogue"), "epilogue '" + epilogue_name(m.epilogue) + "' needs a 'bias' buffer");
    if (!adds_bias && !m.bias.empty())
      doc_.fail(p.key("bias"),
                "epilogue '" + epilogue_name(m.epilogue) + "' adds no bias (use bias, bias_relu or bias_gelu)");
    distinct_output(p.key("d"), m.d, {m.a, m.b, m.bias});
    return m;
  }

  // Whether the architecture emulates is known where the plan meets a GPU (resolve_plan's limits).
  Emulation emulation(const json& v, const Path& p) const {
    for (int e = 0; e <= static_cast<int>(Emulation::Eager); ++e)
      if (v.is_string() && v.get<std::string>() == kEmulationNames[e]) return static_cast<Emulation>(e);
    doc_.fail(p, "must be \"off\", or cuBLASLt's bf16x9 fp32 emulation with cuBLAS's strategy \"performant\" or "
                 "\"eager\" (sm_100a and sm_103a only); got " + v.dump());
  }

  Conv2dStep read_conv2d(const json& v, const Path& p) {
    const std::string lib = "cudnn.conv2d_forward";
    object(v, p, {"library", "x", "w", "y", "bias", "stride", "padding", "dilation", "groups", "epilogue"});
    Conv2dStep c;
    c.x = operand(v, p, "x", lib, false);
    c.w = operand(v, p, "w", lib, false);
    if (v.contains("bias")) c.bias = operand(v, p, "bias", lib, false);
    c.y = operand(v, p, "y", lib, true);
    for (auto [key, out, lo] : {std::make_tuple("stride", &c.stride, 1), std::make_tuple("padding", &c.padding, 0),
                                std::make_tuple("dilation", &c.dilation, 1)}) {
      if (!v.contains(key)) continue;
      Path kp = p.key(key);
      if (!v[key].is_array() || v[key].size() != 2) doc_.fail(kp, "must be an array of 2 integers (height, width)");
      for (size_t i = 0; i < 2; ++i) (*out)[i] = integer(v[key][i], kp.index(i), lo, INT32_MAX);
    }
    if (v.contains("groups")) c.groups = integer(v["groups"], p.key("groups"), 1, INT32_MAX);
    c.epilogue = epilogue(v, p, false);
    distinct_output(p.key("y"), c.y, {c.x, c.w, c.bias});
    return c;
  }

  // Libraries read their operands while writing: the output may not alias one.
  void distinct_output(const Path& p, const std::string& out, const std::vector<std::string>& operands) const {
    if (std::find(operands.begin(), operands.end(), out) != operands.end())
      doc_.fail(p, "'" + out + "' is both an operand and the output of this step");
  }

  const Doc& doc_;
  const Task& task_;
  Candidate& c_;
  std::set<std::string> axes_;
  std::map<std::string, KnownBuffer> buffers_;
  std::set<std::string> written_;
  std::set<std::string> globals_;  // the source's __global__ function names
};

// The JSON text of a .cu candidate: the one block comment that opens with "kevo-plan".
std::pair<size_t, size_t> plan_comment(const std::string& file, const std::string& text, const SourceScan& scan) {
  const std::string tag = "kevo-plan";
  std::optional<std::pair<size_t, size_t>> json;
  for (auto [begin, end] : scan.block_comments) {
    bool closed = end - begin >= 4 && text.compare(end - 2, 2, "*/") == 0;
    size_t body_end = closed ? end - 2 : end;
    size_t at = std::min(text.find_first_not_of(" \t\r\n", begin + 2), body_end);
    size_t after = at + tag.size();
    bool tagged = after <= body_end && text.compare(at, tag.size(), tag) == 0 &&
                  (after == body_end || (!is_ident_char(text[after]) && text[after] != '-'));
    if (!tagged) continue;
    TextPos p = position_of_offset(text, begin);
    if (!closed) throw InputError({file, p.line, p.col}, "", "the kevo-plan comment is never closed");
    if (json)
      throw InputError({file, p.line, p.col}, "", "a second kevo-plan comment; a .cu candidate has exactly one");
    json = {after, body_end};
  }
  if (!json)
    throw InputError({file, 1, 1}, "",
                     "no /* kevo-plan ... */ comment: a .cu candidate carries its launch plan in one");
  return *json;
}

bool is_cuda_file(const std::string& file) {
  std::string ext = extension(file);
  return ext == ".cu" || ext == ".cuh";
}

}  // namespace

std::string epilogue_name(Epilogue e) { return kEpilogueNames[static_cast<int>(e)]; }

std::string emulation_name(Emulation e) { return kEmulationNames[static_cast<int>(e)]; }

bool emulation_runs_on(const std::string& arch) { return arch == "sm_100a" || arch == "sm_103a"; }

std::vector<std::string> Candidate::kernel_names() const {
  std::vector<std::string> names;
  for (const Step& s : plan.steps)
    if (auto* k = std::get_if<KernelStep>(&s.op))
      if (std::find(names.begin(), names.end(), k->kernel) == names.end()) names.push_back(k->kernel);
  return names;
}

Candidate parse_candidate(const std::string& text, const std::string& file, const Task& task,
                          const DeviceLimits& limits) {
  Candidate c;
  c.file = file;
  c.name = file_name(file).substr(0, file_name(file).size() - extension(file).size());
  bool embedded = is_cuda_file(file);
  std::pair<size_t, size_t> range{0, text.size()};
  SourceScan scan;
  if (embedded) {
    scan = scan_source(text);
    range = plan_comment(file, text, scan);
    c.source = text;
    c.source_file = file;
  }
  Doc doc(file, text, range.first, range.second);
  // A scratch buffer declared twice reads better as such than as a JSON key given twice.
  json root = doc.parse([](const Path& p, const std::string& key) {
    return p.ptr == "/plan/buffers/" + pointer_token(key) ? "the buffer '" + key + "' is declared twice" : "";
  });
  PlanReader(doc, task, c).read(root, embedded ? &scan : nullptr);
  for (const Workload& w : task.workloads) resolve_plan(c, task, w, limits);
  return c;
}

Candidate load_candidate(const std::string& path, const Task& task, const DeviceLimits& limits) {
  std::optional<std::string> text = read_text(path);
  if (!text) throw InputError({path, 0, 0}, "", "cannot read the file");
  return parse_candidate(*text, path, task, limits);
}

}  // namespace kevo
