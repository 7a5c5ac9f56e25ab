// The launcher's names (contract names made free C++ names) and axis expressions as C++ (through
// core's AxisExpr::reduce, so the grammar and the arithmetic are core's).
#include "store/export_names.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "core/source_scan.h"
#include "store/export_text.h"

namespace kevo::store::exporter {

Names::Names() {
  static const char* const keywords[] = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char16_t", "char32_t", "class", "compl", "const", "constexpr", "const_cast", "continue", "decltype",
      "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept",
      "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "char8_t", "concept", "requires",
      "co_await", "co_return", "co_yield", "final", "override", "main", "std", "size_t", "int64_t", "int32_t",
      "uint32_t", "uintptr_t", "dim3", "cudaStream_t", "cudaError_t", "cudaSuccess", "cudaErrorInvalidValue",
      "kevo_export", "source", "run", "workspace_bytes", "workspace_offsets", "validated_workload", "Workload",
      "kValidatedWorkloads", "kVerifiedWorkloads", "supported_shape", "in_axis_ranges", "plan_fits",
      "conditions_hold", "plan_fits_device", "max_shared", "stream", "workspace", "NULL", "__half", "__nv_bfloat16", "half"};
  for (const char* k : keywords) taken_.insert(k);
}

std::string Names::take(const std::string& want) {
  std::string name;
  for (char c : want) name += source_scan::is_identifier_char(c) ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
  if (name.size() >= 2 && name[0] == '_' && (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1]))))
    name = "v" + name;  // reserved identifiers
  while (taken_.count(name)) name += '_';
  taken_.insert(name);
  return name;
}

namespace {

// `x` as an operand of an operator of precedence `need`; `strict` for the right operand of a
// left-associative operator (a - (b - c)) and the operand of unary minus.
std::string operand(const CppExpr& x, int need, bool strict) {
  return (strict ? x.precedence <= need : x.precedence < need) ? "(" + x.text + ")" : x.text;
}

CppExpr number(int64_t v) { return CppExpr{std::to_string(v), v < 0 ? 3 : 4, v}; }

}  // namespace

CppExpr axis_expr_cpp(const AxisExpr& e, const std::function<std::string(const std::string&)>& name) {
  return e.reduce<CppExpr>(
      number, [&](const std::string& n) { return CppExpr{name(n), 4, std::nullopt}; },
      [](const CppExpr& a) {
        if (a.literal && *a.literal != INT64_MIN) return number(-*a.literal);
        return CppExpr{"-" + operand(a, 3, true), 3, std::nullopt};
      },
      [](const std::string& op, const CppExpr& a, const CppExpr& b) {
        int64_t r = 0;
        if (a.literal && b.literal && AxisExpr::apply(op, *a.literal, *b.literal, &r)) return number(r);
        if (op == "//" || op == "%")
          return CppExpr{std::string(op == "//" ? "kevo_export::floordiv(" : "kevo_export::mod(") + a.text + ", " +
                             b.text + ")",
                         4, std::nullopt};
        const int p = op == "*" ? 2 : 1;
        return CppExpr{operand(a, p, false) + " " + op + " " + operand(b, p, true), p, std::nullopt};
      });
}

LauncherNames::LauncherNames(const Task& task, const Candidate& c) : task_(task), c_(c) {
  for (const Axis& a : task.axes) has_axis_[a.name] = true;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list) tensor_[t.name] = names_.take(t.name);
  for (const Axis& a : task.axes) {
    axis_[a.name] = names_.take(a.name);
    if (a.value) const_axes_.push_back(&a);
    else var_axes_.push_back(&a);
  }
  num_sms_ = has_axis_.count(kNumSms) ? axis_[kNumSms] : names_.take("num_sms");
  err_ = names_.take("err");
  offsets_ = names_.take("offsets");
  for (const ScratchBuffer& s : c.plan.buffers) scratch_[s.name] = names_.take(s.name);
  for (const Step& s : c.plan.steps)
    if (!std::holds_alternative<KernelStep>(s.op)) has_library_ = true;
  if (has_library_) library_ = names_.take("library_workspace");
}

bool LauncherNames::uses_num_sms_anywhere() const {
  bool uses = false;
  for (const ScratchBuffer& s : c_.plan.buffers)
    for (const PlanExpr& e : s.shape) uses |= uses_num_sms(e.expr);
  for (const Step& s : c_.plan.steps)
    if (const auto* k = std::get_if<KernelStep>(&s.op)) {
      for (const auto* list : {&k->grid, &k->block})
        for (const PlanExpr& e : *list) uses |= uses_num_sms(e.expr);
      uses |= uses_num_sms(k->shared_bytes.expr);
      for (const KernelArg& a : k->args) {
        if (a.kind == ArgKind::Int32 || a.kind == ArgKind::Int64) uses |= uses_num_sms(a.value.expr);
        for (const auto* list : {&a.tensor_map.dims, &a.tensor_map.strides})
          for (const PlanExpr& e : *list) uses |= uses_num_sms(e.expr);
      }
    }
  return uses;
}

bool LauncherNames::scratch_uses_num_sms() const {
  bool uses = false;
  for (const ScratchBuffer& s : c_.plan.buffers)
    for (const PlanExpr& e : s.shape) uses |= uses_num_sms(e.expr);
  return uses;
}

std::string LauncherNames::axis_params() const {
  std::vector<std::string> out;
  for (const Axis* a : var_axes_) out.push_back("int64_t " + axis_.at(a->name));
  return joined(out);
}

std::string LauncherNames::axis_args() const {
  std::vector<std::string> out;
  for (const Axis* a : var_axes_) out.push_back(axis_.at(a->name));
  return joined(out);
}

std::string LauncherNames::axis_params_commented() const {
  std::vector<std::string> out;
  for (const Axis* a : var_axes_) out.push_back("int64_t /*" + axis_.at(a->name) + "*/");
  return joined(out);
}

std::string LauncherNames::pointer(const std::string& buffer) const {
  auto t = tensor_.find(buffer);
  return t != tensor_.end() ? t->second : scratch_.at(buffer);
}

std::vector<std::string> LauncherNames::shape(const std::string& buffer) const {
  std::vector<std::string> out;
  for (const auto* list : {&task_.inputs, &task_.outputs})
    for (const TensorDecl& t : *list)
      if (t.name == buffer) {
        for (const Dim& d : t.shape) out.push_back(dim_cpp(d));
        return out;
      }
  for (const ScratchBuffer& s : c_.plan.buffers)
    if (s.name == buffer)
      for (const PlanExpr& e : s.shape) out.push_back(cpp(e));
  return out;
}

bool LauncherNames::uses_num_sms(const AxisExpr& e) const {
  if (has_axis_.count(kNumSms)) return false;
  const auto& n = e.names();
  return std::find(n.begin(), n.end(), kNumSms) != n.end();
}

std::string LauncherNames::name_of_axis(const std::string& n) const {
  auto it = axis_.find(n);
  if (it != axis_.end()) return it->second;
  if (n == kNumSms) return num_sms_;
  throw std::invalid_argument("unknown axis '" + n + "'");
}

std::string LauncherNames::cpp(const AxisExpr& e) const {
  return axis_expr_cpp(e, [&](const std::string& n) { return name_of_axis(n); }).text;
}

bool LauncherNames::is_literal(const AxisExpr& e) const {
  return axis_expr_cpp(e, [](const std::string& n) { return n; }).literal.has_value();
}

std::string shape_text(const TensorDecl& t) {
  std::vector<std::string> dims;
  for (const Dim& d : t.shape) dims.push_back(d.expr.empty() ? std::to_string(d.size) : d.expr);
  return "[" + joined(dims) + "]";
}

std::string plan_expr_list(const std::vector<PlanExpr>& v) {
  std::vector<std::string> out;
  for (const PlanExpr& e : v) out.push_back(e.expr.text());
  return "[" + joined(out) + "]";
}

}  // namespace kevo::store::exporter
