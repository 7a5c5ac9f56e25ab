// Loading and validating task contracts: every error names the file, line, column and field.
#include "core/task.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "core/axis_expr.h"
#include "core/json_doc.h"
#include "core/json_positions.h"
#include "core/reference_parser.h"

namespace kevo {

namespace {


const char* kSupportedDtypes = "float32, float64, float16, bfloat16, int64, int32, bool";

// Walks the parsed document with the positions of its text, so each check can fail precisely.
class Reader {
 public:
  Reader(std::string file, const std::string& text) : doc_(std::move(file), text) {}

  json parse() { return doc_.parse(); }

  [[noreturn]] void fail(const std::string& ptr, const std::string& message, bool at_key = false) const {
    doc_.fail(Path{ptr, field_name(ptr)}, message, at_key);
  }

  Location loc(const std::string& ptr) const { return doc_.loc(Path{ptr, ""}); }

  // "/inputs/x/shape/1" -> "inputs.x.shape[1]"
  static std::string field_name(const std::string& ptr) {
    std::string out;
    size_t i = 1;
    while (i <= ptr.size() && !ptr.empty()) {
      size_t j = ptr.find('/', i);
      std::string tok = ptr.substr(i, j == std::string::npos ? std::string::npos : j - i);
      std::string plain;
      for (size_t k = 0; k < tok.size(); ++k) {
        if (tok[k] == '~' && k + 1 < tok.size()) {
          plain += tok[k + 1] == '1' ? '/' : '~';
          ++k;
        } else {
          plain += tok[k];
        }
      }
      bool index = !plain.empty() && plain.find_first_not_of("0123456789") == std::string::npos;
      if (index) out += "[" + plain + "]";
      else out += (out.empty() ? "" : ".") + plain;
      if (j == std::string::npos) break;
      i = j + 1;
    }
    return out;
  }

  const json& object(const json& v, const std::string& ptr) const {
    if (!v.is_object()) fail(ptr, "must be an object, got " + kind_of(v));
    return v;
  }

  std::string string(const json& v, const std::string& ptr) const {
    if (!v.is_string()) fail(ptr, "must be a string, got " + kind_of(v));
    return v.get<std::string>();
  }

  double number(const json& v, const std::string& ptr) const {
    if (!v.is_number()) fail(ptr, "must be a number, got " + kind_of(v));
    double d = v.get<double>();
    if (!std::isfinite(d)) fail(ptr, "must be finite");
    return d;
  }

  // A positive size that fits in int64.
  int64_t size(const json& v, const std::string& ptr) const {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(ptr, "size " + v.dump() + " overflows 64 bits");
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::fabs(d) >= 9.2e18) fail(ptr, "size " + v.dump() + " overflows 64 bits");
      fail(ptr, "size must be an integer, got " + v.dump());
    }
    if (!v.is_number_integer()) fail(ptr, "size must be an integer, got " + kind_of(v));
    int64_t n = v.get<int64_t>();
    if (n <= 0) fail(ptr, "size must be positive, got " + std::to_string(n));
    return n;
  }

  void only_keys(const json& obj, const std::string& ptr, const std::set<std::string>& allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (allowed.count(it.key())) continue;
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(ptr + "/" + pointer_token(it.key()), "unknown field '" + it.key() + "' (expected one of: " + list + ")", true);
    }
  }

 private:
  Doc doc_;
};

bool is_identifier(const std::string& s) {
  static const std::regex id("[A-Za-z_][A-Za-z0-9_]*");
  return std::regex_match(s, id);
}

InitSpec read_init(const Reader& r, const json& v, const std::string& ptr, DType dtype) {
  InitSpec init;
  r.object(v, ptr);
  if (!v.contains("dist")) r.fail(ptr, "missing field 'dist'");
  init.dist = r.string(v["dist"], ptr + "/dist");
  static const std::map<std::string, std::set<std::string>> params = {
      {"uniform", {"low", "high"}},   {"normal", {"mean", "std"}},   {"kaiming_uniform", {"a"}},
      {"fan_in_uniform", {"fan_in_of"}}, {"randint", {"low", "high"}}, {"choice", {"values"}},
      {"ones", {}},                   {"zeros", {}},                 {"constant", {"value"}}};
  auto p = params.find(init.dist);
  if (p == params.end())
    r.fail(ptr + "/dist", "unknown distribution '" + init.dist +
                              "' (expected uniform, normal, kaiming_uniform, fan_in_uniform, randint, choice, ones, "
                              "zeros or constant)");
  std::set<std::string> allowed = p->second;
  allowed.insert("dist");
  r.only_keys(v, ptr, allowed);
  auto num = [&](const char* key, double dflt) {
    return v.contains(key) ? r.number(v[key], ptr + "/" + key) : dflt;
  };
  if (init.dist == "uniform" || init.dist == "randint") {
    init.low = num("low", 0.0);
    init.high = num("high", 1.0);
    if (!(init.low < init.high)) r.fail(ptr, "low must be below high");
    if (init.dist == "randint" && (init.low != std::floor(init.low) || init.high != std::floor(init.high)))
      r.fail(ptr, "randint bounds must be integers");
  } else if (init.dist == "normal") {
    init.mean = num("mean", 0.0);
    init.std = num("std", 1.0);
    if (!(init.std > 0)) r.fail(ptr + "/std", "std must be positive");
  } else if (init.dist == "kaiming_uniform") {
    init.a = num("a", std::sqrt(5.0));
    if (init.a < 0) r.fail(ptr + "/a", "a must be non-negative");
  } else if (init.dist == "fan_in_uniform") {
    if (!v.contains("fan_in_of")) r.fail(ptr, "missing field 'fan_in_of' (the weight whose fan-in sets the bound)");
    init.fan_in_of = r.string(v["fan_in_of"], ptr + "/fan_in_of");
  } else if (init.dist == "choice") {
    if (!v.contains("values") || !v["values"].is_array() || v["values"].empty())
      r.fail(ptr, "choice needs a non-empty array 'values'");
    for (size_t i = 0; i < v["values"].size(); ++i)
      init.values.push_back(r.number(v["values"][i], ptr + "/values/" + std::to_string(i)));
  } else if (init.dist == "constant") {
    if (!v.contains("value")) r.fail(ptr, "missing field 'value'");
    init.value = r.number(v["value"], ptr + "/value");
  }
  bool continuous = init.dist == "uniform" || init.dist == "normal" || init.dist == "kaiming_uniform" ||
                    init.dist == "fan_in_uniform";
  if (continuous && !is_floating(dtype))
    r.fail(ptr + "/dist", "'" + init.dist + "' draws real numbers but the input is " + dtype_name(dtype));
  return init;
}

Domain read_domain(const Reader& r, const json& v, const std::string& ptr) {
  r.object(v, ptr);
  r.only_keys(v, ptr, {"min", "max"});
  Domain d;
  if (v.contains("min")) d.min = r.number(v["min"], ptr + "/min");
  if (v.contains("max")) d.max = r.number(v["max"], ptr + "/max");
  if (d.min && d.max && !(*d.min < *d.max)) r.fail(ptr, "min must be below max");
  return d;
}

TensorDecl read_tensor(const Reader& r, const std::string& name, const json& v, const std::string& ptr,
                       const std::map<std::string, Axis>& axes, bool is_input) {
  TensorDecl t;
  t.name = name;
  t.loc = r.loc(ptr);
  r.object(v, ptr);
  if (!is_identifier(name)) r.fail(ptr, "'" + name + "' is not a valid Python identifier", true);
  std::set<std::string> keys = {"shape", "dtype", "description"};
  if (is_input) keys.insert({"init", "domain"});
  r.only_keys(v, ptr, keys);
  if (!v.contains("shape")) r.fail(ptr, "missing field 'shape'");
  if (!v.contains("dtype")) r.fail(ptr, "missing field 'dtype'");
  const json& shape = v["shape"];
  if (!shape.is_null()) {  // null is FlashInfer-Bench's spelling of a scalar
    if (!shape.is_array()) r.fail(ptr + "/shape", "must be an array of axis names and sizes");
    for (size_t i = 0; i < shape.size(); ++i) {
      std::string dp = ptr + "/shape/" + std::to_string(i);
      Dim d;
      if (shape[i].is_string()) {
        d.expr = shape[i].get<std::string>();
        try {
          AxisExpr e = AxisExpr::parse(d.expr);
          for (const std::string& name : e.names())
            if (!axes.count(name)) r.fail(dp, "unknown axis '" + name + "'");
        } catch (const std::invalid_argument& e) {
          r.fail(dp, std::string("bad size expression ") + e.what());
        }
      } else {
        d.size = r.size(shape[i], dp);
      }
      t.shape.push_back(d);
    }
  }
  std::string dt = r.string(v["dtype"], ptr + "/dtype");
  auto parsed = parse_dtype(dt);
  if (!parsed) r.fail(ptr + "/dtype", "unsupported dtype '" + dt + "' (supported: " + kSupportedDtypes + ")");
  t.dtype = *parsed;
  if (v.contains("description")) t.description = r.string(v["description"], ptr + "/description");
  if (is_input && v.contains("domain")) t.domain = read_domain(r, v["domain"], ptr + "/domain");
  if (is_input && v.contains("init")) {
    t.init = read_init(r, v["init"], ptr + "/init", t.dtype);
  } else if (!is_floating(t.dtype)) {
    // Integers default to small non-negative values, booleans to fair coin flips.
    t.init.dist = "randint";
    t.init.high = t.dtype == DType::Bool ? 2 : 10;
  }
  return t;
}

int64_t checked_mul(const Reader& r, const std::string& ptr, int64_t a, int64_t b, const std::string& what) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) r.fail(ptr, what + " overflows 64 bits");
  return out;
}

// "min", "max", "multiple_of" of a var axis: positive integers, min <= max, and a multiple_of
// that some size in [min, max] is a multiple of. The default max is set once the workloads are read.
void read_axis_range(const Reader& r, const json& a, const std::string& ptr, Axis& axis) {
  if (a.contains("min")) axis.min = r.size(a["min"], ptr + "/min");
  if (a.contains("max")) axis.max = r.size(a["max"], ptr + "/max");
  if (a.contains("multiple_of")) axis.multiple_of = r.size(a["multiple_of"], ptr + "/multiple_of");
  axis.declared = a.contains("min") || a.contains("max") || a.contains("multiple_of");
  if (a.contains("min") && a.contains("max") && axis.min > axis.max)
    r.fail(ptr, "min (" + std::to_string(axis.min) + ") is above max (" + std::to_string(axis.max) + ")");
  if (a.contains("max") && axis.max / axis.multiple_of * axis.multiple_of < axis.min)
    r.fail(ptr, "no size in [" + std::to_string(axis.min) + ", " + std::to_string(axis.max) + "] is a multiple of " +
                    std::to_string(axis.multiple_of));
}

// Every workload inside its axes' declared ranges; an axis without a declared max takes the largest
// workload value as its max.
void settle_axis_ranges(const Reader& r, const json& doc, Task& task) {
  const json& wl = doc.at("workloads");
  for (Axis& axis : task.axes) {
    if (axis.value) continue;
    const bool has_max = doc.at("axes").at(axis.name).contains("max");
    for (size_t i = 0; i < task.workloads.size(); ++i) {
      const int64_t v = task.workloads[i].axes.at(axis.name);
      if (!has_max) axis.max = std::max(axis.max, v);
      std::string what;
      if (v < axis.min) what = "is below the axis's min " + std::to_string(axis.min);
      else if (has_max && v > axis.max) what = "is above the axis's max " + std::to_string(axis.max);
      else if (v % axis.multiple_of != 0) what = "is not a multiple of " + std::to_string(axis.multiple_of);
      if (what.empty()) continue;
      const std::string wp = "/workloads/" + std::to_string(i);
      const std::string vp = wl[i].contains("axes") && wl[i].at("axes").is_object()
                                 ? wp + "/axes/" + pointer_token(axis.name)
                                 : wp + "/" + pointer_token(axis.name);
      r.fail(vp, std::to_string(v) + " " + what + " (axes." + axis.name + ")");
    }
  }
}

// The keys of a workload that say how it is used rather than a size: never axis names there.
bool is_workload_use(const std::string& key) { return key == "weight" || key == "timed"; }

// "weight" (how often the shape occurs, > 0) and "timed" (false: checked, not timed).
void read_workload_use(const Reader& r, const json& v, const std::string& ptr, Workload& w) {
  if (v.contains("weight")) {
    w.weight = r.number(v["weight"], ptr + "/weight");
    if (!(w.weight > 0)) r.fail(ptr + "/weight", "must be positive (how often the shape occurs), got " + v["weight"].dump());
  }
  if (v.contains("timed")) {
    if (!v["timed"].is_boolean()) r.fail(ptr + "/timed", "must be true or false, got " + kind_of(v["timed"]));
    w.timed = v["timed"].get<bool>();
  }
}

}  // namespace

std::map<std::string, int64_t> Task::axis_values(const Workload& w) const {
  std::map<std::string, int64_t> values = w.axes;
  for (const Axis& a : axes)
    if (a.value) values[a.name] = *a.value;
  return values;
}

Shape Task::shape_of(const TensorDecl& t, const Workload& w) const {
  std::map<std::string, int64_t> values = axis_values(w);
  Shape s;
  for (const Dim& d : t.shape) s.push_back(d.expr.empty() ? d.size : AxisExpr::parse(d.expr).eval(values));
  return s;
}

std::vector<InputSpec> Task::input_specs(const Workload& w) const {
  std::vector<InputSpec> specs;
  for (const TensorDecl& t : inputs) specs.push_back({t.name, t.dtype, shape_of(t, w)});
  return specs;
}

bool Task::is_timed(int i) const {
  return i >= 0 && static_cast<size_t>(i) < workloads.size() && workloads[static_cast<size_t>(i)].timed;
}

Graph Task::graph(const Workload& w) const { return lower_reference(program, input_specs(w)); }

int64_t Task::bytes_moved(const Workload& w) const {
  int64_t bytes = 0;
  for (const auto* list : {&inputs, &outputs})
    for (const TensorDecl& t : *list) bytes += numel(shape_of(t, w)) * dtype_size(t.dtype);
  return bytes;
}

Task parse_task(const std::string& text, const std::string& file) {
  Reader r(file, text);
  json doc = r.parse();
  Task task;
  task.file = file;
  r.object(doc, "");
  r.only_keys(doc, "", {"name", "description", "op_type", "tags", "axes", "inputs", "outputs", "reference",
                        "workloads", "tolerance", "notes", "constraints"});
  for (const char* required : {"name", "axes", "inputs", "outputs", "reference", "workloads"})
    if (!doc.contains(required)) r.fail("", std::string("missing required field '") + required + "'");

  task.name = r.string(doc["name"], "/name");
  static const std::regex name_re("[A-Za-z0-9_.\\-]+");
  if (!std::regex_match(task.name, name_re))
    r.fail("/name", "must be letters, digits, '_', '.' or '-', got '" + task.name + "'");
  if (doc.contains("description")) task.description = r.string(doc["description"], "/description");
  if (doc.contains("notes")) {
    const json& n = doc["notes"];
    if (n.is_array()) {
      for (size_t i = 0; i < n.size(); ++i) task.notes += (i ? "\n" : "") + r.string(n[i], "/notes/" + std::to_string(i));
    } else {
      task.notes = r.string(n, "/notes");
    }
  }

  std::map<std::string, Axis> axes;
  for (auto it = r.object(doc["axes"], "/axes").begin(); it != doc["axes"].end(); ++it) {
    std::string ptr = "/axes/" + pointer_token(it.key());
    if (!is_identifier(it.key())) r.fail(ptr, "axis name '" + it.key() + "' is not an identifier", true);
    if (is_workload_use(it.key()))
      r.fail(ptr, "axis name '" + it.key() + "' is reserved: a workload's \"" + it.key() + "\" says how it is used", true);
    const json& a = r.object(it.value(), ptr);
    r.only_keys(a, ptr, {"type", "value", "description", "min", "max", "multiple_of"});
    if (!a.contains("type")) r.fail(ptr, "missing field 'type' (\"var\" or \"const\")");
    std::string type = r.string(a["type"], ptr + "/type");
    Axis axis{it.key(), std::nullopt};
    if (type == "const") {
      if (!a.contains("value")) r.fail(ptr, "a const axis needs a 'value'");
      axis.value = r.size(a["value"], ptr + "/value");
      for (const char* bound : {"min", "max", "multiple_of"})
        if (a.contains(bound)) r.fail(ptr + "/" + bound, "a const axis has one size; ranges are for var axes", true);
    } else if (type == "var") {
      if (a.contains("value")) r.fail(ptr + "/value", "a var axis takes its value from each workload", true);
      read_axis_range(r, a, ptr, axis);
    } else {
      r.fail(ptr + "/type", "axis type must be \"var\" or \"const\", got \"" + type + "\"");
    }
    axes[axis.name] = axis;
    task.axes.push_back(axis);
  }

  std::set<std::string> names;
  for (const char* section : {"inputs", "outputs"}) {
    std::string sp = std::string("/") + section;
    const json& obj = r.object(doc[section], sp);
    if (obj.empty()) r.fail(sp, std::string("a contract needs at least one ") + (section[0] == 'i' ? "input" : "output"));
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      std::string ptr = sp + "/" + pointer_token(it.key());
      if (!names.insert(it.key()).second) r.fail(ptr, "the name '" + it.key() + "' is declared twice", true);
      TensorDecl t = read_tensor(r, it.key(), it.value(), ptr, axes, section[0] == 'i');
      (section[0] == 'i' ? task.inputs : task.outputs).push_back(std::move(t));
    }
  }
  for (const TensorDecl& t : task.inputs) {
    if (t.init.dist == "kaiming_uniform" && t.shape.size() < 2)
      r.fail("/inputs/" + pointer_token(t.name) + "/init", "kaiming_uniform needs a tensor of rank 2 or more");
    if (t.init.dist == "fan_in_uniform") {
      auto w = std::find_if(task.inputs.begin(), task.inputs.end(),
                            [&](const TensorDecl& d) { return d.name == t.init.fan_in_of; });
      if (w == task.inputs.end() || w->shape.size() < 2)
        r.fail("/inputs/" + pointer_token(t.name) + "/init/fan_in_of",
               "'" + t.init.fan_in_of + "' is not an input of rank 2 or more");
    }
  }

  if (doc.contains("tolerance")) {
    const json& tol = r.object(doc["tolerance"], "/tolerance");
    r.only_keys(tol, "/tolerance", {"atol", "rtol"});
    for (const char* k : {"atol", "rtol"}) {
      if (!tol.contains(k)) continue;
      double v = r.number(tol[k], std::string("/tolerance/") + k);
      if (v < 0) r.fail(std::string("/tolerance/") + k, "must not be negative");
      (k[0] == 'a' ? task.tolerance.atol : task.tolerance.rtol) = v;
    }
  }

  // Workloads: every var axis given a positive size; sizes and byte counts fit in 64 bits.
  const json& wl = doc["workloads"];
  if (!wl.is_array()) r.fail("/workloads", "must be an array of axis assignments");
  if (wl.empty()) r.fail("/workloads", "a contract needs at least one workload");
  for (size_t i = 0; i < wl.size(); ++i) {
    std::string ptr = "/workloads/" + std::to_string(i);
    const json* assign = &r.object(wl[i], ptr);
    std::string aptr = ptr;
    if (assign->contains("axes") && (*assign)["axes"].is_object()) {  // FlashInfer-Bench's layout
      aptr = ptr + "/axes";
      assign = &(*assign)["axes"];
    }
    Workload w;
    w.loc = r.loc(ptr);
    read_workload_use(r, wl[i], ptr, w);
    for (auto it = assign->begin(); it != assign->end(); ++it) {
      if (assign == &wl[i] && is_workload_use(it.key())) continue;
      std::string vp = aptr + "/" + pointer_token(it.key());
      auto ax = axes.find(it.key());
      if (ax == axes.end()) r.fail(vp, "unknown axis '" + it.key() + "'", true);
      if (ax->second.value) r.fail(vp, "axis '" + it.key() + "' is const (" + std::to_string(*ax->second.value) + ")", true);
      w.axes[it.key()] = r.size(it.value(), vp);
    }
    for (const Axis& a : task.axes)
      if (!a.value && !w.axes.count(a.name)) r.fail(ptr, "workload gives no size for axis '" + a.name + "'");
    int64_t total_bytes = 0;
    for (const auto* list : {&task.inputs, &task.outputs}) {
      for (const TensorDecl& t : *list) {
        Shape shape;
        try {
          shape = task.shape_of(t, w);
        } catch (const std::invalid_argument& e) {
          r.fail(ptr, std::string("the shape of '") + t.name + "': " + e.what());
        }
        int64_t n = 1;
        for (size_t k = 0; k < shape.size(); ++k) {
          if (shape[k] <= 0)
            r.fail(ptr, "dim " + std::to_string(k) + " of '" + t.name + "' (" + t.shape[k].expr + ") is " +
                            std::to_string(shape[k]) + " in this workload; sizes must be positive");
          n = checked_mul(r, ptr, n, shape[k], "the size of '" + t.name + "'");
        }
        int64_t bytes = checked_mul(r, ptr, n, dtype_size(t.dtype), "the byte count of '" + t.name + "'");
        if (__builtin_add_overflow(total_bytes, bytes, &total_bytes)) r.fail(ptr, "the workload's byte count overflows 64 bits");
      }
    }
    task.workloads.push_back(std::move(w));
  }
  settle_axis_ranges(r, doc, task);
  if (std::none_of(task.workloads.begin(), task.workloads.end(), [](const Workload& w) { return w.timed; }))
    r.fail("/workloads", "no workload is timed: the fitness needs at least one (drop \"timed\": false from one)");

  // The reference: parsed once, then lowered for every workload so that shapes are checked.
  task.reference = r.string(doc["reference"], "/reference");
  task.reference_loc = r.loc("/reference");
  auto reference_error = [&](const ReferenceError& e, const std::string& suffix) {
    return InputError(task.reference_loc, "reference:" + std::to_string(e.line()) + ":" + std::to_string(e.col()),
                      e.message() + suffix);
  };
  try {
    task.program = ref::parse_reference(task.reference);
  } catch (const ReferenceError& e) {
    throw reference_error(e, "");
  }
  for (size_t i = 0; i < task.program.params.size(); ++i) {
    const std::string& p = task.program.params[i];
    bool declared = std::any_of(task.inputs.begin(), task.inputs.end(), [&](const TensorDecl& t) { return t.name == p; });
    if (!declared)
      throw reference_error(ReferenceError(task.program.param_pos[i].line, task.program.param_pos[i].col,
                                           "parameter '" + p + "' is not a declared input"), "");
  }
  for (const TensorDecl& t : task.inputs) {
    if (std::find(task.program.params.begin(), task.program.params.end(), t.name) == task.program.params.end())
      throw reference_error(ReferenceError(task.program.function_pos.line, task.program.function_pos.col,
                                           task.program.function_name + "() has no parameter for input '" + t.name + "'"),
                            "");
  }
  for (size_t i = 0; i < task.workloads.size(); ++i) {
    const Workload& w = task.workloads[i];
    std::string which = task.workloads.size() > 1 ? " (workload " + std::to_string(i) + ")" : "";
    Graph g;
    try {
      g = task.graph(w);
    } catch (const ReferenceError& e) {
      throw reference_error(e, which);
    }
    if (g.outputs.size() != task.outputs.size())
      throw InputError(task.reference_loc, "reference",
                       "returns " + std::to_string(g.outputs.size()) + " tensor" + (g.outputs.size() == 1 ? "" : "s") +
                           " but the contract declares " + std::to_string(task.outputs.size()) + " output" +
                           (task.outputs.size() == 1 ? "" : "s") + which);
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const TensorDecl& out = task.outputs[k];
      const ValueInfo& got = g.values[g.outputs[k]];
      Shape want = task.shape_of(out, w);
      if (got.shape != want || got.dtype != out.dtype)
        r.fail("/outputs/" + pointer_token(out.name),
               "the reference returns " + dtype_name(got.dtype) + shape_string(got.shape) + " but the contract declares " +
                   dtype_name(out.dtype) + shape_string(want) + which);
    }
  }
  return task;
}

std::string read_input_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError({path, 0, 0}, "", "is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "", "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError({path, 0, 0}, "", "cannot read the file");
  return ss.str();
}

Task load_task(const std::string& path) { return parse_task(read_input_file(path), path); }

}  // namespace kevo
