// Header export: provenance comment, the candidate's source namespaced, and a host launcher that
// carries out the plan (kernels, cuBLASLt, cuDNN) for the validated workloads' shapes only.
#include "store/export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

namespace kevo::store {

namespace {

[[noreturn]] void fail(const Candidate& c, const std::string& where, const std::string& what) {
  throw InputError(Location{c.file, 0, 0}, where, what);
}

std::string joined(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Text for a `//` comment: one line, no control characters.
std::string one_line(const std::string& s, const std::string& unknown = "unknown") {
  std::string out;
  for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  size_t a = out.find_first_not_of(' '), b = out.find_last_not_of(' ');
  return a == std::string::npos ? unknown : out.substr(a, b - a + 1);
}

// The shortest decimal text that reads back as `d`, always with a '.' or an exponent.
std::string double_literal(double d) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "n": inf and nan never reach here (JSON)
  return s;
}

// A float literal with the value static_cast<float>(d), which is how kevo passes {"float": d}.
std::string float_literal(double d) {
  std::string s = double_literal(d);
  if (std::strtof(s.c_str(), nullptr) == static_cast<float>(d)) return s + "f";
  return "static_cast<float>(" + s + ")";
}

std::string speedup_text(double x) {
  if (!(x > 0) || !std::isfinite(x)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", x);
  return buf;
}

// ---- C++ names for the launcher: contract names where they are free, else suffixed with '_' ----

class Names {
 public:
  Names() {
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
        "kValidatedWorkloads", "stream", "workspace", "NULL", "__half", "__nv_bfloat16", "half"};
    for (const char* k : keywords) taken_.insert(k);
  }
  // Takes `want` (made an identifier) or the first of want_, want__, ... that is free.
  std::string take(const std::string& want) {
    std::string name;
    for (char c : want) name += is_ident_char(c) ? c : '_';
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
    if (name.size() >= 2 && name[0] == '_' && (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1]))))
      name = "v" + name;  // reserved identifiers
    while (taken_.count(name)) name += '_';
    taken_.insert(name);
    return name;
  }
  void reserve(const std::string& name) { taken_.insert(name); }

 private:
  std::set<std::string> taken_;
};

// ---- axis expressions as C++ over int64_t values ----------------------------------------------
// `//` and `%` are Python's (floor), so they become kevo_export::floordiv/mod; literal-only parts
// are folded so that what remains always has an int64_t operand (no int overflow in literals).

struct Ex {
  enum Kind { Num, Name, Neg, Bin } kind = Num;
  int64_t num = 0;
  std::string text;  // Name: the axis; Bin: the operator
  std::shared_ptr<Ex> a, b;
};
using ExPtr = std::shared_ptr<Ex>;

int precedence(const std::string& op) {
  if (op == "neg") return 3;
  if (op == "*" || op == "//" || op == "%") return 2;
  return 1;
}

bool checked(const std::string& op, int64_t a, int64_t b, int64_t& r) {
  if (op == "+") return !__builtin_add_overflow(a, b, &r);
  if (op == "-") return !__builtin_sub_overflow(a, b, &r);
  if (op == "*") return !__builtin_mul_overflow(a, b, &r);
  if (b == 0 || (a == INT64_MIN && b == -1)) return false;
  int64_t q = a / b, m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) {
    --q;
    m += b;
  }
  r = op == "//" ? q : m;
  return true;
}

ExPtr make(Ex::Kind kind, int64_t num, std::string text, ExPtr a = nullptr, ExPtr b = nullptr) {
  auto e = std::make_shared<Ex>();
  e->kind = kind;
  e->num = num;
  e->text = std::move(text);
  e->a = std::move(a);
  e->b = std::move(b);
  return e;
}

// The grammar of core/axis_expr.cpp (the text was validated when the candidate was loaded).
ExPtr parse_expr(const std::string& text) {
  std::vector<ExPtr> out;
  std::vector<std::string> ops;
  auto apply = [&](const std::string& op) {
    if (op == "neg") {
      if (out.empty()) throw std::invalid_argument("bad expression '" + text + "'");
      ExPtr a = out.back();
      out.back() = a->kind == Ex::Num && a->num != INT64_MIN ? make(Ex::Num, -a->num, "") : make(Ex::Neg, 0, "", a);
      return;
    }
    if (out.size() < 2) throw std::invalid_argument("bad expression '" + text + "'");
    ExPtr b = out.back();
    out.pop_back();
    ExPtr a = out.back();
    int64_t r = 0;
    if (a->kind == Ex::Num && b->kind == Ex::Num && checked(op, a->num, b->num, r))
      out.back() = make(Ex::Num, r, "");
    else
      out.back() = make(Ex::Bin, 0, op, a, b);
  };
  auto pop_while = [&](int prec) {
    while (!ops.empty() && ops.back() != "(" && precedence(ops.back()) >= prec) {
      apply(ops.back());
      ops.pop_back();
    }
  };
  bool expect_operand = true;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (expect_operand && std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      out.push_back(make(Ex::Num, std::stoll(text.substr(start, i - start)), ""));
      expect_operand = false;
    } else if (expect_operand && (std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      size_t start = i;
      while (i < text.size() && is_ident_char(text[i])) ++i;
      out.push_back(make(Ex::Name, 0, text.substr(start, i - start)));
      expect_operand = false;
    } else if (expect_operand && c == '(') {
      ops.push_back("(");
      ++i;
    } else if (expect_operand && c == '-') {
      ops.push_back("neg");
      ++i;
    } else if (expect_operand && c == '+') {
      ++i;
    } else if (!expect_operand && c == ')') {
      pop_while(0);
      if (ops.empty()) throw std::invalid_argument("bad expression '" + text + "'");
      ops.pop_back();
      ++i;
    } else if (!expect_operand && (c == '+' || c == '-' || c == '*' || c == '%' || text.compare(i, 2, "//") == 0)) {
      std::string op = c == '/' ? "//" : std::string(1, c);
      pop_while(precedence(op));
      ops.push_back(op);
      i += op.size();
      expect_operand = true;
    } else {
      throw std::invalid_argument("bad expression '" + text + "'");
    }
  }
  pop_while(0);
  if (out.size() != 1 || !ops.empty()) throw std::invalid_argument("bad expression '" + text + "'");
  return out.back();
}

// Precedence of the emitted C++: 1 + -, 2 *, 3 unary minus and negative literals, 4 atoms.
std::string emit(const ExPtr& e, const std::function<std::string(const std::string&)>& name, int* prec_out) {
  auto operand = [&](const ExPtr& x, int need, bool strict) {
    int p = 0;
    std::string s = emit(x, name, &p);
    return (strict ? p <= need : p < need) ? "(" + s + ")" : s;
  };
  switch (e->kind) {
    case Ex::Num:
      *prec_out = e->num < 0 ? 3 : 4;
      return std::to_string(e->num);
    case Ex::Name:
      *prec_out = 4;
      return name(e->text);
    case Ex::Neg:
      *prec_out = 3;
      return "-" + operand(e->a, 3, true);
    case Ex::Bin:
      break;
  }
  if (e->text == "//" || e->text == "%") {
    *prec_out = 4;
    int ignored = 0;
    return std::string(e->text == "//" ? "kevo_export::floordiv(" : "kevo_export::mod(") +
           emit(e->a, name, &ignored) + ", " + emit(e->b, name, &ignored) + ")";
  }
  const int p = precedence(e->text);
  *prec_out = p;
  return operand(e->a, p, false) + " " + e->text + " " + operand(e->b, p, true);
}

// ---- the candidate's source, read as text -----------------------------------------------------

// The source with comments and string/character literals blanked to spaces (newlines kept).
std::string blank_source(const std::string& s) {
  std::string code = s;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < s.size(); ++k)
      if (s[k] != '\n') code[k] = ' ';
  };
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      size_t end = s.find('\n', i);
      end = end == std::string::npos ? s.size() : end;
      blank(i, end);
      i = end;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t close = s.find("*/", i + 2);
      size_t end = close == std::string::npos ? s.size() : close + 2;
      blank(i, end);
      i = end;
    } else if (c == '"' && i > 0 && s[i - 1] == 'R' && (i < 2 || !is_ident_char(s[i - 2]) || s[i - 2] == '8' ||
                                                         s[i - 2] == 'u' || s[i - 2] == 'U' || s[i - 2] == 'L')) {
      size_t open = s.find('(', i);
      std::string delim = open == std::string::npos ? "" : ")" + s.substr(i + 1, open - i - 1) + "\"";
      size_t close = open == std::string::npos ? std::string::npos : s.find(delim, open);
      size_t end = close == std::string::npos ? s.size() : close + delim.size();
      blank(i, end);
      i = end;
    } else if (c == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1])) && i + 1 < s.size() &&
               std::isxdigit(static_cast<unsigned char>(s[i + 1]))) {
      ++i;  // a digit separator (1'000'000)
    } else if (c == '"' || c == '\'') {
      size_t k = i + 1;
      while (k < s.size() && s[k] != c && s[k] != '\n') k += s[k] == '\\' ? 2 : 1;
      blank(i, k + 1);
      i = k + 1;
    } else {
      ++i;
    }
  }
  return code;
}

// A preprocessing directive: [begin, end) of its logical line (continuations included, the final
// newline not), its word and the first identifier after it.
struct Directive {
  size_t begin = 0, end = 0;
  std::string word, name;
};

std::vector<Directive> directives(const std::string& src, const std::string& code) {
  std::vector<Directive> out;
  for (size_t line = 0; line < src.size();) {
    size_t end = line;
    while (true) {  // the logical line: physical lines joined by a trailing backslash
      size_t nl = src.find('\n', end);
      if (nl == std::string::npos) {
        end = src.size();
        break;
      }
      size_t last = nl;
      while (last > end && (src[last - 1] == '\r' || src[last - 1] == ' ' || src[last - 1] == '\t')) --last;
      if (last > end && src[last - 1] == '\\') {
        end = nl + 1;
        continue;
      }
      end = nl;
      break;
    }
    size_t i = line;
    while (i < end && (code[i] == ' ' || code[i] == '\t')) ++i;
    if (i < end && code[i] == '#') {
      Directive d;
      d.begin = line;
      d.end = end;
      size_t w = i + 1;
      while (w < end && (code[w] == ' ' || code[w] == '\t')) ++w;
      size_t we = w;
      while (we < end && is_ident_char(code[we])) ++we;
      d.word = code.substr(w, we - w);
      size_t n = we;
      while (n < end && (code[n] == ' ' || code[n] == '\t' || code[n] == '\\' || code[n] == '\r' || code[n] == '\n'))
        ++n;
      size_t ne = n;
      while (ne < end && is_ident_char(code[ne])) ++ne;
      d.name = code.substr(n, ne - n);
      out.push_back(d);
    }
    line = end < src.size() ? end + 1 : end;
  }
  return out;
}

struct Edit {
  size_t begin, end;
  std::string text;
};

struct PreparedSource {
  std::string text;                 // the source with the edits below applied
  std::vector<std::string> macros;  // names it #defines or #undefs, to save and restore
  int includes = 0;                 // #include lines the namespaces were closed around
  int extern_c = 0;                 // `extern "C"` specifiers and blocks dropped
  bool clusters = false;            // uses __cluster_dims__
};

// Edits the source so that it can sit inside `open` ... `close` (the namespaces) in a header that
// a program includes next to other exported headers:
// - `extern "C"` is dropped from definitions, from __global__ declarations and around blocks: C
//   linkage ignores namespaces, so two headers with a kernel of the same name would clash.
//   (Kernels need no C linkage here: the launcher takes their address by name.) It stays on
//   other declarations without a body, which name functions defined elsewhere.
// - an #include closes the namespaces before it and reopens them after it, so that a toolkit
//   header (cuda_fp16.h) is declared at global scope, under whatever #if surrounds it.
PreparedSource prepare_source(const Candidate& c, const std::string& open, const std::string& close) {
  const std::string& src = c.source;
  const std::string code = blank_source(src);
  const std::vector<Directive> dirs = directives(src, code);
  std::string code_only = code;  // without directive lines: braces in macros do not count
  for (const Directive& d : dirs)
    for (size_t k = d.begin; k < d.end; ++k)
      if (code_only[k] != '\n') code_only[k] = ' ';
  auto in_directive = [&](size_t at) {
    for (const Directive& d : dirs)
      if (at >= d.begin && at < d.end) return true;
    return false;
  };
  auto line_of = [&](size_t at) { return 1 + static_cast<int>(std::count(src.begin(), src.begin() + at, '\n')); };

  PreparedSource out;
  out.clusters = code.find("__cluster_dims__") != std::string::npos;
  std::vector<Edit> edits;
  std::set<std::string> macros;
  for (const Directive& d : dirs) {
    if ((d.word == "define" || d.word == "undef") && !d.name.empty()) macros.insert(d.name);
    if (d.word != "include") continue;
    int depth = 0;
    for (size_t k = 0; k < d.begin; ++k) depth += code_only[k] == '{' ? 1 : code_only[k] == '}' ? -1 : 0;
    if (depth != 0)
      fail(c, "source line " + std::to_string(line_of(d.begin)),
           "an #include inside a block cannot be exported: the header closes its namespaces around each #include");
    edits.push_back({d.begin, d.end,
                     close + "  // (closed around the source's #include)\n" + src.substr(d.begin, d.end - d.begin) +
                         "\n" + open + "  // (reopened)"});
    ++out.includes;
  }
  out.macros.assign(macros.begin(), macros.end());

  auto skip_blank = [&](size_t i) {
    while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i])) && src[i] != '"') ++i;
    return i;
  };
  for (size_t at = code.find("extern"); at != std::string::npos; at = code.find("extern", at + 6)) {
    if ((at > 0 && is_ident_char(code[at - 1])) || (at + 6 < code.size() && is_ident_char(code[at + 6]))) continue;
    size_t q = skip_blank(at + 6);
    if (src.compare(q, 3, "\"C\"") != 0) continue;
    size_t after = q + 3;
    size_t k = after;
    while (k < code.size() && std::isspace(static_cast<unsigned char>(code[k]))) ++k;
    if (!in_directive(at) && k < code.size() && code_only[k] == '{') {
      int depth = 0;
      size_t m = k;
      for (; m < code_only.size(); ++m) {
        depth += code_only[m] == '{' ? 1 : code_only[m] == '}' ? -1 : 0;
        if (depth == 0) break;
      }
      if (m >= code_only.size())
        fail(c, "source line " + std::to_string(line_of(at)), "unbalanced braces after extern \"C\" {");
      edits.push_back({at, k + 1, "/* extern \"C\" { (dropped by kevo export) */"});
      edits.push_back({m, m + 1, "/* } (extern \"C\") */"});
      ++out.extern_c;
      continue;
    }
    bool drop = in_directive(at);
    if (!drop) {
      int parens = 0;
      for (size_t m = after; m < code_only.size(); ++m) {
        char ch = code_only[m];
        if (ch == '(') ++parens;
        if (ch == ')') --parens;
        if (code_only.compare(m, 10, "__global__") == 0) drop = true;
        if (parens == 0 && (ch == '{' || ch == '=')) drop = true;
        if (parens == 0 && (ch == ';' || ch == '{' || ch == '=')) break;
      }
    }
    if (!drop) continue;
    edits.push_back({at, after, "/* extern \"C\" */"});
    ++out.extern_c;
  }

  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string text;
  size_t from = 0;
  for (const Edit& e : edits) {
    text += src.substr(from, e.begin - from) + e.text;
    from = e.end;
  }
  text += src.substr(from);
  out.text = std::move(text);
  return out;
}

// ---- the shared runtime: identical in every exported header, defined once per translation unit ----

const char* kRuntime = R"(// ---- kevo export runtime: helpers shared by every header kevo exports (defined once per translation unit)
#ifndef KEVO_EXPORT_RUNTIME_V1
#define KEVO_EXPORT_RUNTIME_V1
namespace kevo_export {
inline namespace v1 {

// Python's floor division and modulo: what `//` and `%` mean in kevo's plan expressions.
constexpr int64_t floordiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0 && ((a % b < 0) != (b < 0))) ? 1 : 0);
}
constexpr int64_t mod(int64_t a, int64_t b) {
  return a % b + ((a % b != 0 && ((a % b < 0) != (b < 0))) ? b : 0);
}

// Scratch buffers start at multiples of 256 bytes of the caller's workspace.
constexpr size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The workspace cuBLASLt and cuDNN steps share, as in kevo's evaluation (algorithms needing more
// are passed over).
constexpr size_t kLibraryWorkspaceBytes = size_t{32} << 20;

// The current device's SM count: `num_sms` in plan expressions.
inline cudaError_t num_sms(int64_t* out) {
  int device = 0, count = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
  *out = count;
  return err;
}

// One kernel launch. The arguments are packed by the plan's declared types (as kevo's evaluation
// packs them for cuLaunchKernel), not converted to the kernel's parameter types; kernels asking for
// more than 48 KiB of dynamic shared memory are opted in first. __cluster_dims__ in the kernel's
// source sets its thread-block cluster shape.
inline cudaError_t launch(const void* kernel, dim3 grid, dim3 block, size_t shared_bytes, void** args,
                          cudaStream_t stream) {
  if (shared_bytes > 48 * 1024) {
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(shared_bytes));
    if (err != cudaSuccess) return err;
  }
  return cudaLaunchKernel(kernel, grid, block, args, shared_bytes, stream);
}

}  // namespace v1
}  // namespace kevo_export
#endif  // KEVO_EXPORT_RUNTIME_V1
)";

const char* kCublasLtRuntime = R"(
// ---- kevo export runtime: cuBLASLt matmul steps (link with -lcublasLt)
#ifndef KEVO_EXPORT_CUBLASLT_V3
#define KEVO_EXPORT_CUBLASLT_V3
namespace kevo_export {
inline namespace v3 {

// d[m,n] = epilogue(alpha * op(a)[m,k] @ op(b)[k,n] (+ bias[n])) on row-major fp32 matrices, with
// the bias added after the alpha scaling (cuBLASLt's order) and gelu cuBLASLt's tanh approximation.
struct MatmulShape {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  float alpha;
  cublasLtEpilogue_t epilogue;
  int algo;  // index into the heuristic's usable results (0: its first choice), as the plan's "algo";
             // -1 (the plan's "auto"): the fastest of them, timed at the first call of each shape
};

namespace detail {

inline cudaError_t from_cublas(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return cudaSuccess;
    case CUBLAS_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
    case CUBLAS_STATUS_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUBLAS_STATUS_NOT_SUPPORTED: return cudaErrorNotSupported;  // no algorithm for the shape
    case CUBLAS_STATUS_ARCH_MISMATCH: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
  }
}

// The largest power of two up to 256 dividing the address: what cuBLASLt's heuristic may assume.
inline uint32_t alignment(const void* p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

struct MatmulPlan {
  int device;
  MatmulShape shape;
  uint32_t align_a, align_b, align_d;
  size_t workspace_bytes;
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;  // our a, b, d
  cublasLtMatmulAlgo_t algo;
};

// The heuristic's results that fit the workspace, best first (kevo asks for 8, as here).
struct UsableAlgos {
  cublasLtMatmulAlgo_t algo[8];
  int count;
};

inline bool same(const MatmulShape& x, const MatmulShape& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.transpose_a == y.transpose_a &&
         x.transpose_b == y.transpose_b && x.epilogue == y.epilogue && x.algo == y.algo;
}

inline void release(MatmulPlan& p) {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.d) cublasLtMatrixLayoutDestroy(p.d);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
}

// A row-major [rows, cols] fp32 matrix is a column-major [cols, rows] one with leading dimension cols.
inline cublasStatus_t layout(cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols) {
  return cublasLtMatrixLayoutCreate(l, CUDA_R_32F, static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), cols);
}

// Descriptors and the heuristic's usable results; for a fixed "algo", the algo-th of them.
inline cublasStatus_t build(MatmulPlan& p, UsableAlgos& usable) {
  const MatmulShape& s = p.shape;
  // Row-major d = op(a) op(b) is column-major d^T = op(b)^T op(a)^T: cuBLASLt's A is our b, its B our a.
  // CUBLAS_COMPUTE_32F is plain fp32; TF32 would be CUBLAS_COMPUTE_32F_FAST_TF32.
  cublasStatus_t st = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t op_a = s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &s.epilogue, sizeof s.epilogue);
  if (st == CUBLAS_STATUS_SUCCESS) st = s.transpose_a ? layout(&p.a, s.k, s.m) : layout(&p.a, s.m, s.k);
  if (st == CUBLAS_STATUS_SUCCESS) st = s.transpose_b ? layout(&p.b, s.n, s.k) : layout(&p.b, s.k, s.n);
  if (st == CUBLAS_STATUS_SUCCESS) st = layout(&p.d, s.m, s.n);
  cublasLtMatmulPreference_t pref = nullptr;
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t max_workspace = p.workspace_bytes;
  const uint32_t aligns[4] = {p.align_b, p.align_a, p.align_d, p.align_d};  // cuBLASLt's A, B, C, D
  const cublasLtMatmulPreferenceAttributes_t align_attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                              sizeof max_workspace);
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i)
    st = cublasLtMatmulPreferenceSetAttribute(pref, align_attrs[i], &aligns[i], sizeof aligns[i]);
  cublasLtMatmulHeuristicResult_t results[8] = {};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(p.handle, p.desc, p.b, p.a, p.d, p.d, pref, 8, results, &found);
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  usable.count = 0;
  for (int i = 0; i < found && i < 8; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= p.workspace_bytes)
      usable.algo[usable.count++] = results[i].algo;
  if (s.algo >= usable.count || usable.count == 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (s.algo >= 0) p.algo = usable.algo[s.algo];
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t matmul(const MatmulPlan& p, const cublasLtMatmulAlgo_t& algo, const void* a, const void* b,
                             void* d, void* workspace, cudaStream_t stream) {
  const float beta = 0.0f;
  return cublasLtMatmul(p.handle, p.desc, &p.shape.alpha, b, p.b, a, p.a, &beta, d, p.d, d, p.d, &algo, workspace,
                        p.workspace_bytes, stream);
}

// An autotuned plan's algorithm: the usable result with the smallest median time on the call's own
// operands and stream. Each runs once (a warm-up), then 5 times back to back with a CUDA event after
// each; one that cuBLASLt refuses to launch is passed over. Waits for the runs and leaves d
// overwritten (the call that follows rewrites it); refused during stream capture, where nothing
// can be waited for.
inline cudaError_t tune(MatmulPlan& p, const UsableAlgos& usable, const void* a, const void* b, void* d,
                        void* workspace, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(stream, &capture);
  if (err != cudaSuccess) return err;
  if (capture != cudaStreamCaptureStatusNone) return cudaErrorStreamCaptureUnsupported;
  cudaEvent_t events[6] = {};
  for (int i = 0; i < 6 && err == cudaSuccess; ++i) err = cudaEventCreate(&events[i]);
  float best = -1.0f;
  for (int i = 0; i < usable.count && err == cudaSuccess; ++i) {
    bool ran = matmul(p, usable.algo[i], a, b, d, workspace, stream) == CUBLAS_STATUS_SUCCESS;
    if (ran) err = cudaEventRecord(events[0], stream);
    for (int r = 0; r < 5 && ran && err == cudaSuccess; ++r) {
      ran = matmul(p, usable.algo[i], a, b, d, workspace, stream) == CUBLAS_STATUS_SUCCESS;
      if (ran) err = cudaEventRecord(events[r + 1], stream);
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    if (!ran || err != cudaSuccess) continue;
    float ms[5];
    for (int r = 0; r < 5 && err == cudaSuccess; ++r) err = cudaEventElapsedTime(&ms[r], events[r], events[r + 1]);
    for (int r = 1; r < 5; ++r)  // insertion sort: ms[2] is the median
      for (int j = r; j > 0 && ms[j] < ms[j - 1]; --j) {
        const float t = ms[j];
        ms[j] = ms[j - 1];
        ms[j - 1] = t;
      }
    if (err == cudaSuccess && (best < 0 || ms[2] < best)) {
      best = ms[2];
      p.algo = usable.algo[i];
    }
  }
  for (cudaEvent_t e : events)
    if (e) cudaEventDestroy(e);
  if (err != cudaSuccess) return err;
  return best < 0 ? cudaErrorNotSupported : cudaSuccess;
}

}  // namespace detail

// Queues the matmul on `stream` (of the current device). A handle per device, and descriptors and
// the algorithm per distinct (device, shape, operand alignment), are made on first use and kept for
// the life of the process (deliberately never destroyed: destruction at exit may run after the
// CUDA context is gone). An autotuned shape ("algo" -1) times its candidates on that first call,
// which therefore waits for the stream and must not be inside stream capture
// (cudaErrorStreamCaptureUnsupported). A mutex serialises the calls: a cached descriptor carries the
// bias pointer.
inline cudaError_t cublaslt_matmul(const void* a, const void* b, void* d, const void* bias, const MatmulShape& s,
                                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  static std::mutex mutex;
  static std::vector<detail::MatmulPlan>& plans = *new std::vector<detail::MatmulPlan>;
  static std::vector<std::pair<int, cublasLtHandle_t>>& handles = *new std::vector<std::pair<int, cublasLtHandle_t>>;
  std::lock_guard<std::mutex> lock(mutex);
  const uint32_t align_a = detail::alignment(a), align_b = detail::alignment(b), align_d = detail::alignment(d);
  detail::MatmulPlan* plan = nullptr;
  for (detail::MatmulPlan& q : plans)
    if (q.device == device && detail::same(q.shape, s) && q.align_a == align_a && q.align_b == align_b &&
        q.align_d == align_d && q.workspace_bytes == workspace_bytes)
      plan = &q;
  if (!plan) {
    detail::MatmulPlan q{};
    q.device = device;
    q.shape = s;
    q.align_a = align_a;
    q.align_b = align_b;
    q.align_d = align_d;
    q.workspace_bytes = workspace_bytes;
    for (const auto& h : handles)
      if (h.first == device) q.handle = h.second;
    if (!q.handle) {
      cublasStatus_t st = cublasLtCreate(&q.handle);
      if (st != CUBLAS_STATUS_SUCCESS) return detail::from_cublas(st);
      handles.emplace_back(device, q.handle);
    }
    detail::UsableAlgos usable{};
    cublasStatus_t st = detail::build(q, usable);
    if (st == CUBLAS_STATUS_SUCCESS && bias)
      st = cublasLtMatmulDescSetAttribute(q.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    err = st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : detail::from_cublas(st);
    if (err == cudaSuccess && s.algo < 0) err = detail::tune(q, usable, a, b, d, workspace, stream);
    if (err != cudaSuccess) {
      detail::release(q);
      return err;
    }
    plans.push_back(q);
    plan = &plans.back();
  }
  if (bias) {
    cublasStatus_t st =
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (st != CUBLAS_STATUS_SUCCESS) return detail::from_cublas(st);
  }
  return detail::from_cublas(detail::matmul(*plan, plan->algo, a, b, d, workspace, stream));
}

}  // namespace v3
}  // namespace kevo_export
#endif  // KEVO_EXPORT_CUBLASLT_V3
)";

const char* kCudnnRuntime = R"(
// ---- kevo export runtime: cuDNN convolution steps (link with -lcudnn; cuDNN 9's legacy API)
#ifndef KEVO_EXPORT_CUDNN_V1
#define KEVO_EXPORT_CUDNN_V1
namespace kevo_export {
inline namespace v1 {

// y[N,K,P,Q] = epilogue(conv2d(x[N,C,H,W], w[K,C/groups,R,S]) (+ bias[K])), NCHW fp32, the
// cross-correlation torch's conv2d computes; the bias and the ReLU are two more cuDNN calls.
struct Conv2dShape {
  int64_t x[4], w[4], y[4];
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
  bool relu;
};

namespace detail {

inline cudaError_t from_cudnn(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_SUCCESS: return cudaSuccess;
    case CUDNN_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
    case CUDNN_STATUS_BAD_PARAM: return cudaErrorInvalidValue;
    case CUDNN_STATUS_NOT_SUPPORTED: return cudaErrorNotSupported;  // no fp32 algorithm for the shape
    default: return cudaErrorUnknown;
  }
}

struct Conv2dPlan {
  int device;
  Conv2dShape shape;
  bool bias;
  size_t workspace_bytes;
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t x, y, bias_desc;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnActivationDescriptor_t relu;
  cudnnConvolutionFwdAlgo_t algo;
};

inline bool same(const Conv2dShape& a, const Conv2dShape& b) {
  for (int i = 0; i < 4; ++i)
    if (a.x[i] != b.x[i] || a.w[i] != b.w[i] || a.y[i] != b.y[i]) return false;
  for (int i = 0; i < 2; ++i)
    if (a.stride[i] != b.stride[i] || a.padding[i] != b.padding[i] || a.dilation[i] != b.dilation[i]) return false;
  return a.groups == b.groups && a.relu == b.relu;
}

inline void release(Conv2dPlan& p) {
  if (p.x) cudnnDestroyTensorDescriptor(p.x);
  if (p.y) cudnnDestroyTensorDescriptor(p.y);
  if (p.bias_desc) cudnnDestroyTensorDescriptor(p.bias_desc);
  if (p.w) cudnnDestroyFilterDescriptor(p.w);
  if (p.conv) cudnnDestroyConvolutionDescriptor(p.conv);
  if (p.relu) cudnnDestroyActivationDescriptor(p.relu);
}

inline cudnnStatus_t tensor(cudnnTensorDescriptor_t* t, const int64_t* d) {
  cudnnStatus_t st = cudnnCreateTensorDescriptor(t);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  return cudnnSetTensor4dDescriptor(*t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(d[0]),
                                    static_cast<int>(d[1]), static_cast<int>(d[2]), static_cast<int>(d[3]));
}

// Descriptors and the first fp32 algorithm of cuDNN's heuristic ranking (no trial runs, as LibTorch
// without benchmark mode) whose workspace fits.
inline cudnnStatus_t build(Conv2dPlan& p) {
  const Conv2dShape& s = p.shape;
  cudnnStatus_t st = tensor(&p.x, s.x);
  if (st == CUDNN_STATUS_SUCCESS) st = tensor(&p.y, s.y);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateFilterDescriptor(&p.w);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(s.w[0]),
                                    static_cast<int>(s.w[1]), static_cast<int>(s.w[2]), static_cast<int>(s.w[3]));
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateConvolutionDescriptor(&p.conv);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnSetConvolution2dDescriptor(p.conv, static_cast<int>(s.padding[0]), static_cast<int>(s.padding[1]),
                                         static_cast<int>(s.stride[0]), static_cast<int>(s.stride[1]),
                                         static_cast<int>(s.dilation[0]), static_cast<int>(s.dilation[1]),
                                         CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnSetConvolutionGroupCount(p.conv, static_cast<int>(s.groups));
  // CUDNN_DEFAULT_MATH allows TF32 from sm_80 on; FMA math is full fp32, as the reference.
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnSetConvolutionMathType(p.conv, CUDNN_FMA_MATH);
  if (st == CUDNN_STATUS_SUCCESS && p.bias) {
    const int64_t bias_shape[4] = {1, s.y[1], 1, 1};
    st = tensor(&p.bias_desc, bias_shape);
  }
  if (st == CUDNN_STATUS_SUCCESS && s.relu) st = cudnnCreateActivationDescriptor(&p.relu);
  if (st == CUDNN_STATUS_SUCCESS && s.relu)
    st = cudnnSetActivationDescriptor(p.relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0);
  cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
  int found = 0;
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnGetConvolutionForwardAlgorithm_v7(p.handle, p.x, p.w, p.conv, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                &found, results);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  for (int i = 0; i < found; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS || r.mathType == CUDNN_TENSOR_OP_MATH ||
        r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(p.handle, p.x, p.w, p.conv, p.y, r.algo, &bytes) !=
            CUDNN_STATUS_SUCCESS ||
        bytes > p.workspace_bytes)
      continue;
    p.algo = r.algo;
    return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_NOT_SUPPORTED;
}

}  // namespace detail

// Queues the convolution (and its bias and ReLU) on `stream` (of the current device). A handle per
// device, and descriptors and the algorithm per distinct (device, shape), are made on first use and
// kept for the life of the process (never destroyed, as for cuBLASLt). A mutex serialises the calls:
// the handle is bound to the call's stream.
inline cudaError_t cudnn_conv2d_forward(const void* x, const void* w, void* y, const void* bias,
                                        const Conv2dShape& s, void* workspace, size_t workspace_bytes,
                                        cudaStream_t stream) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  static std::mutex mutex;
  static std::vector<detail::Conv2dPlan>& plans = *new std::vector<detail::Conv2dPlan>;
  static std::vector<std::pair<int, cudnnHandle_t>>& handles = *new std::vector<std::pair<int, cudnnHandle_t>>;
  std::lock_guard<std::mutex> lock(mutex);
  detail::Conv2dPlan* plan = nullptr;
  for (detail::Conv2dPlan& q : plans)
    if (q.device == device && detail::same(q.shape, s) && q.bias == (bias != nullptr) &&
        q.workspace_bytes == workspace_bytes)
      plan = &q;
  if (!plan) {
    detail::Conv2dPlan q{};
    q.device = device;
    q.shape = s;
    q.bias = bias != nullptr;
    q.workspace_bytes = workspace_bytes;
    for (const auto& h : handles)
      if (h.first == device) q.handle = h.second;
    if (!q.handle) {
      cudnnStatus_t st = cudnnCreate(&q.handle);
      if (st != CUDNN_STATUS_SUCCESS) return detail::from_cudnn(st);
      handles.emplace_back(device, q.handle);
    }
    cudnnStatus_t st = detail::build(q);
    if (st != CUDNN_STATUS_SUCCESS) {
      detail::release(q);
      return detail::from_cudnn(st);
    }
    plans.push_back(q);
    plan = &plans.back();
  }
  const float one = 1.0f, zero = 0.0f;
  cudnnStatus_t st = cudnnSetStream(plan->handle, stream);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnConvolutionForward(plan->handle, &one, plan->x, x, plan->w, w, plan->conv, plan->algo, workspace,
                                 workspace_bytes, &zero, plan->y, y);
  if (st == CUDNN_STATUS_SUCCESS && bias)
    st = cudnnAddTensor(plan->handle, &one, plan->bias_desc, bias, &one, plan->y, y);
  if (st == CUDNN_STATUS_SUCCESS && s.relu)
    st = cudnnActivationForward(plan->handle, plan->relu, &one, plan->y, y, &zero, plan->y, y);
  return detail::from_cudnn(st);
}

}  // namespace v1
}  // namespace kevo_export
#endif  // KEVO_EXPORT_CUDNN_V1
)";

// ---- the launcher ------------------------------------------------------------------------------

const char* c_type(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "__half";
    case DType::BFloat16: return "__nv_bfloat16";
    case DType::Int64: return "int64_t";
    case DType::Int32: return "int32_t";
    case DType::Bool: return "bool";
  }
  return "void";
}

std::string cublaslt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::None: return "CUBLASLT_EPILOGUE_DEFAULT";
    case Epilogue::Relu: return "CUBLASLT_EPILOGUE_RELU";
    case Epilogue::Gelu: return "CUBLASLT_EPILOGUE_GELU";
    case Epilogue::Bias: return "CUBLASLT_EPILOGUE_BIAS";
    case Epilogue::BiasRelu: return "CUBLASLT_EPILOGUE_RELU_BIAS";
    case Epilogue::BiasGelu: return "CUBLASLT_EPILOGUE_GELU_BIAS";
  }
  return "CUBLASLT_EPILOGUE_DEFAULT";
}

// Everything the launcher's code generation needs to know about names and sizes.
class Launcher {
 public:
  Launcher(const Task& task, const Candidate& c) : task_(task), c_(c) {
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

  bool uses_num_sms_anywhere() const {
    bool uses = false;
    for (const ScratchBuffer& s : c_.plan.buffers)
      for (const PlanExpr& e : s.shape) uses |= uses_num_sms(e.expr);
    for (const Step& s : c_.plan.steps)
      if (const auto* k = std::get_if<KernelStep>(&s.op)) {
        for (const auto* list : {&k->grid, &k->block})
          for (const PlanExpr& e : *list) uses |= uses_num_sms(e.expr);
        uses |= uses_num_sms(k->shared_bytes.expr);
        for (const KernelArg& a : k->args)
          if (a.kind == ArgKind::Int32 || a.kind == ArgKind::Int64) uses |= uses_num_sms(a.value.expr);
      }
    return uses;
  }
  bool scratch_uses_num_sms() const {
    bool uses = false;
    for (const ScratchBuffer& s : c_.plan.buffers)
      for (const PlanExpr& e : s.shape) uses |= uses_num_sms(e.expr);
    return uses;
  }

  // An axis expression as C++ (int64_t arithmetic over the launcher's names).
  std::string cpp(const std::string& text) const {
    int prec = 0;
    return emit(parse_expr(text), [&](const std::string& n) { return name_of_axis(n); }, &prec);
  }
  bool is_literal(const std::string& text) const { return parse_expr(text)->kind == Ex::Num; }
  std::string cpp(const PlanExpr& e) const { return cpp(e.expr.text()); }
  std::string dim_cpp(const Dim& d) const { return d.expr.empty() ? std::to_string(d.size) : cpp(d.expr); }

  // A launch dimension: `unsigned(...)` unless a literal.
  std::string unsigned_cpp(const PlanExpr& e) const {
    return is_literal(e.expr.text()) ? cpp(e) : "unsigned(" + cpp(e) + ")";
  }

  // The var axes as parameters ("int64_t B, int64_t D") and as arguments ("B, D").
  std::string axis_params() const {
    std::vector<std::string> out;
    for (const Axis* a : var_axes_) out.push_back("int64_t " + axis_.at(a->name));
    return joined(out);
  }
  std::string axis_args() const {
    std::vector<std::string> out;
    for (const Axis* a : var_axes_) out.push_back(axis_.at(a->name));
    return joined(out);
  }
  std::string axis_params_commented() const {
    std::vector<std::string> out;
    for (const Axis* a : var_axes_) out.push_back("int64_t /*" + axis_.at(a->name) + "*/");
    return joined(out);
  }

  // The pointer a step passes for a buffer name.
  std::string pointer(const std::string& buffer) const {
    auto t = tensor_.find(buffer);
    return t != tensor_.end() ? t->second : scratch_.at(buffer);
  }

  // The shape of a buffer as C++ expressions.
  std::vector<std::string> shape(const std::string& buffer) const {
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

  const std::vector<const Axis*>& var_axes() const { return var_axes_; }
  const std::vector<const Axis*>& const_axes() const { return const_axes_; }
  const std::string& axis_name(const std::string& a) const { return axis_.at(a); }
  const std::string& tensor_name(const std::string& t) const { return tensor_.at(t); }
  const std::string& scratch_name(const std::string& s) const { return scratch_.at(s); }
  const std::string& num_sms() const { return num_sms_; }
  const std::string& err() const { return err_; }
  const std::string& offsets() const { return offsets_; }
  const std::string& library() const { return library_; }
  bool has_library() const { return has_library_; }
  Names& names() { return names_; }

 private:
  bool uses_num_sms(const AxisExpr& e) const {
    if (has_axis_.count(kNumSms)) return false;
    const auto& n = e.names();
    return std::find(n.begin(), n.end(), kNumSms) != n.end();
  }
  std::string name_of_axis(const std::string& n) const {
    auto it = axis_.find(n);
    if (it != axis_.end()) return it->second;
    if (n == kNumSms) return num_sms_;
    throw std::invalid_argument("unknown axis '" + n + "'");
  }

  const Task& task_;
  const Candidate& c_;
  Names names_;
  std::map<std::string, bool> has_axis_;
  std::map<std::string, std::string> tensor_, axis_, scratch_;
  std::vector<const Axis*> var_axes_, const_axes_;
  std::string num_sms_, err_, offsets_, library_;
  bool has_library_ = false;
};

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

}  // namespace

std::string export_namespace(const Task& task) {
  std::string n = "kevo_";
  for (char c : task.name) n += is_ident_char(c) ? c : '_';
  return n;
}

std::string export_file_name(const Task& task) { return task.name + ".cuh"; }

std::string export_header(const Task& task, const Candidate& c, const ExportProvenance& p) {
  // ---- the validated workloads: the only shapes the launcher accepts ----
  std::vector<int> validated = p.validated_workloads;
  std::sort(validated.begin(), validated.end());
  validated.erase(std::unique(validated.begin(), validated.end()), validated.end());
  if (validated.empty())
    fail(c, "export", "no validated workloads: the header's launcher accepts only the shapes the kernel was validated on");
  for (int w : validated)
    if (w < 0 || static_cast<size_t>(w) >= task.workloads.size())
      fail(c, "export", "validated workload " + std::to_string(w) + " is not one of task '" + task.name + "''s " +
                            std::to_string(task.workloads.size()) + " workloads");
  for (int w : validated) resolve_plan(c, task, task.workloads[static_cast<size_t>(w)], DeviceLimits{});

  const std::string ns = export_namespace(task);
  Launcher L(task, c);
  const bool needs_sms = L.uses_num_sms_anywhere();
  bool has_matmul = false, has_conv = false;
  for (const Step& s : c.plan.steps) {
    has_matmul |= std::holds_alternative<MatmulStep>(s.op);
    has_conv |= std::holds_alternative<Conv2dStep>(s.op);
  }
  bool needs_fp16 = false, needs_bf16 = false;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list) {
      needs_fp16 |= t.dtype == DType::Float16;
      needs_bf16 |= t.dtype == DType::BFloat16;
    }

  // ---- the source, namespaced ----
  const std::string code = blank_source(c.source);
  std::string kernel_fn = "kevo_export_kernel_";
  while (code.find(kernel_fn) != std::string::npos) kernel_fn += "x_";
  const std::string open = "namespace " + ns + " {\nnamespace source {\nnamespace {";
  const std::string close = "}  // namespace\n}  // namespace source\n}  // namespace " + ns;
  PreparedSource src = prepare_source(c, open, close);
  const std::vector<std::string> kernels = c.kernel_names();

  std::ostringstream h;
  // ---- provenance ----
  const std::string eager = speedup_text(p.speedup_eager), compiled = speedup_text(p.speedup_compile);
  std::string speedup;
  if (!eager.empty()) speedup += eager + " over PyTorch eager";
  if (!compiled.empty()) speedup += std::string(speedup.empty() ? "" : ", ") + compiled + " over torch.compile";
  if (speedup.empty()) speedup = "unknown";
  std::string kevo = one_line(p.kevo_version);
  if (!p.kevo_commit.empty()) kevo += ", commit " + one_line(p.kevo_commit);

  h << "// " << export_file_name(task) << ": the kernel kevo found for task '" << one_line(task.name)
    << "'. Generated by kevo export; regenerate rather than edit.\n"
    << "//\n"
    << "// Task          " << one_line(task.name) << ": " << one_line(task.description, "(no description)") << "\n"
    << "// Candidate     " << one_line(c.name) << ", variant " << one_line(p.variant) << "\n"
    << "// Speedup       " << speedup << "\n"
    << "// Measured on   GPU " << one_line(p.gpu) << ", date " << one_line(p.date) << "\n"
    << "// kevo          " << kevo << "\n"
    << "// Campaign      " << one_line(p.campaign_id) << "\n"
    << "// Tolerance     atol " << double_literal(task.tolerance.atol) << ", rtol "
    << double_literal(task.tolerance.rtol) << " against the task's reference\n"
    << "//\n"
    << "// Validated on these workloads, the only shapes run() accepts (kValidatedWorkloads below):\n";
  for (int w : validated) {
    std::vector<std::string> vals;
    for (const Axis* a : L.var_axes()) vals.push_back(a->name + "=" + std::to_string(task.workloads[w].axes.at(a->name)));
    h << "//   workload " << w << ": " << (vals.empty() ? "(no var axes)" : joined(vals)) << "\n";
  }
  if (!L.const_axes().empty()) {
    std::vector<std::string> vals;
    for (const Axis* a : L.const_axes()) vals.push_back(a->name + "=" + std::to_string(*a->value));
    h << "// Constant axes: " << joined(vals) << "\n";
  }
  h << "//\n// Tensors: device pointers to contiguous row-major (C order) arrays.\n";
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list)
      h << "//   " << L.tensor_name(t.name) << "  " << dtype_name(t.dtype) << " " << shape_text(t) << "  "
        << (list == &task.inputs ? "input" : "output")
        << (t.description.empty() ? "" : ": " + one_line(t.description)) << "\n";
  std::vector<std::string> call_args;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list) call_args.push_back(L.tensor_name(t.name));
  for (const Axis* a : L.var_axes()) call_args.push_back(L.axis_name(a->name));
  h << "//\n"
    << "// Usage:\n"
    << "//   size_t bytes = " << ns << "::workspace_bytes(" << L.axis_args() << ");  // scratch the plan needs\n"
    << "//   void* workspace = nullptr;  // cudaMalloc(&workspace, bytes) when bytes > 0\n"
    << "//   cudaError_t err = " << ns << "::run(" << joined(call_args) << ", stream, workspace, bytes);\n"
    << "// run() queues the plan's " << c.plan.steps.size() << " step" << (c.plan.steps.size() == 1 ? "" : "s")
    << " on `stream` (a stream of the current device) and returns the first error; it does not\n"
    << "// synchronise. Inputs are only read. The workspace, when needed, must be 256-byte aligned (cudaMalloc's).\n"
    << "//\n"
    << "// Build: nvcc -std=c++17 -arch=sm_90a (Hopper; sm_100a for B200)"
    << (src.clusters ? "; its kernels use thread-block clusters (sm_90 or newer)" : "") << ".\n"
    << "// kevo compiled this source with NVRTC, -std=c++17 and no fast math: do not add --use_fast_math.\n";
  if (has_matmul || has_conv) {
    std::vector<std::string> libs;
    if (has_matmul) libs.push_back("-lcublasLt");
    if (has_conv) libs.push_back("-lcudnn");
    h << "// Libraries: link " << joined(libs, " ") << " (the plan has "
      << (has_matmul && has_conv ? "cuBLASLt and cuDNN" : has_matmul ? "a cuBLASLt" : "a cuDNN") << " step"
      << "; handles are created on first use per device and cached for the life of the process).\n";
  } else {
    h << "// Libraries: none beyond the CUDA runtime.\n";
  }
  h << "//\n"
    << "// The source below is the candidate's, verbatim, inside namespace " << ns << "::source (an unnamed\n"
    << "// namespace within it gives everything internal linkage, so several translation units, and\n"
    << "// headers of other tasks, may include it). Edits, each marked where made: `extern \"C\"` is dropped\n"
    << "// from kernels and definitions (C linkage ignores namespaces: two headers' kernels of the same name\n"
    << "// would clash); each #include closes the namespaces around itself; the macros the source defines\n"
    << "// are saved before it and restored after it (#pragma push_macro/pop_macro), so none leaks out.\n"
    << "\n#pragma once\n\n"
    << "#include <cuda_runtime.h>\n\n#include <cstddef>\n#include <cstdint>\n";
  if (needs_fp16) h << "#include <cuda_fp16.h>\n";
  if (needs_bf16) h << "#include <cuda_bf16.h>\n";
  if (has_matmul || has_conv) h << "#include <mutex>\n#include <utility>\n#include <vector>\n";
  if (has_matmul) h << "\n#include <cublasLt.h>\n";
  if (has_conv) h << "\n#include <cudnn.h>\n";
  h << "\n" << kRuntime;
  if (has_matmul) h << kCublasLtRuntime;
  if (has_conv) h << kCudnnRuntime;

  // ---- the candidate's source ----
  h << "\n// ---- the candidate's source";
  if (src.extern_c > 0 || src.includes > 0)
    h << " (" << src.extern_c << " extern \"C\" dropped, " << src.includes << " #include closed around)";
  h << "\n";
  for (const std::string& m : src.macros) h << "#pragma push_macro(\"" << m << "\")\n#undef " << m << "\n";
  h << open << "\n\n" << src.text << (src.text.empty() || src.text.back() == '\n' ? "" : "\n") << "\n";
  if (!kernels.empty()) {
    h << "// The plan's kernels by the plan's name expressions (here, where the source's macros still apply).\n";
    for (size_t i = 0; i < kernels.size(); ++i)
      h << "inline const void* " << kernel_fn << i << "() { return reinterpret_cast<const void*>(&" << kernels[i]
        << "); }\n";
  }
  h << close << "\n";
  for (auto it = src.macros.rbegin(); it != src.macros.rend(); ++it) h << "#pragma pop_macro(\"" << *it << "\")\n";

  // ---- the launcher ----
  h << "\n// ---- the launcher\nnamespace " << ns << " {\nnamespace {\n\n";
  for (const Axis* a : L.const_axes())
    h << "constexpr int64_t " << L.axis_name(a->name) << " = " << *a->value << ";  // a constant axis of the task\n";
  if (!L.const_axes().empty()) h << "\n";

  // The workload table and the guard.
  std::vector<std::string> axis_list;
  for (const Axis* a : L.var_axes()) axis_list.push_back(L.axis_name(a->name));
  h << "// The shapes kevo validated this kernel on (the task's workloads " << [&] {
    std::vector<std::string> ids;
    for (int w : validated) ids.push_back(std::to_string(w));
    return joined(ids);
  }() << "). run() returns cudaErrorInvalidValue\n"
    << "// for any other shape: the plan's sizes and the kernel's results were checked only for these.\n"
    << "struct Workload {\n";
  for (const std::string& a : axis_list) h << "  int64_t " << a << ";\n";
  h << "};\nconstexpr Workload kValidatedWorkloads[] = {\n";
  for (int w : validated) {
    std::vector<std::string> vals;
    for (const Axis* a : L.var_axes()) vals.push_back(std::to_string(task.workloads[w].axes.at(a->name)));
    h << "    {" << joined(vals) << "},  // workload " << w << "\n";
  }
  h << "};\n\n"
    << "// The index in kValidatedWorkloads of this shape, or -1. Constant axes are constants above and the\n"
    << "// other dimensions of the tensors (" << [&] {
         std::vector<std::string> derived;
         for (const auto* list : {&task.inputs, &task.outputs})
           for (const TensorDecl& t : *list)
             for (const Dim& d : t.shape)
               if (!d.expr.empty() && !L.is_literal(d.expr) && std::find_if(task.axes.begin(), task.axes.end(), [&](const Axis& a) {
                                                                   return a.name == d.expr;
                                                                 }) == task.axes.end())
                 derived.push_back(d.expr);
         std::sort(derived.begin(), derived.end());
         derived.erase(std::unique(derived.begin(), derived.end()), derived.end());
         return derived.empty() ? std::string("none here") : joined(derived);
       }()
    << ") follow from the axes, so the axes decide.\n";
  {
    const std::string i = Names(L.names()).take("i");
    h << "constexpr int validated_workload(" << L.axis_params() << ") {\n"
      << "  for (int " << i << " = 0; " << i
      << " < static_cast<int>(sizeof kValidatedWorkloads / sizeof kValidatedWorkloads[0]); ++" << i << ")\n";
    std::vector<std::string> eqs;
    for (const std::string& a : axis_list) eqs.push_back("kValidatedWorkloads[" + i + "]." + a + " == " + a);
    h << "    if (" << (eqs.empty() ? "true" : joined(eqs, " && ")) << ") return " << i << ";\n";
  }
  h << "  return -1;\n}\n\n";

  // Scratch layout.
  const size_t n_scratch = c.plan.buffers.size();
  const size_t n_regions = n_scratch + (L.has_library() ? 1 : 0);
  const bool layout_sms = L.scratch_uses_num_sms();
  if (n_regions > 0) {
    h << "// Where the scratch of the plan lives in the caller's workspace: offsets[i] is where region i starts\n"
      << "// (a multiple of 256 bytes), offsets[" << n_regions << "] the total size.\n";
    for (size_t i = 0; i < n_scratch; ++i) {
      const ScratchBuffer& s = c.plan.buffers[i];
      h << "//   [" << i << "] " << s.name << "  " << dtype_name(s.dtype) << " " << plan_expr_list(s.shape) << "\n";
    }
    if (L.has_library()) h << "//   [" << n_scratch << "] the cuBLASLt/cuDNN workspace, 32 MiB\n";
    std::string params = L.axis_params();
    std::vector<std::string> used;  // only the axes the sizes use, so that no parameter goes unused
    std::set<std::string> needed;
    for (const ScratchBuffer& s : c.plan.buffers)
      for (const PlanExpr& e : s.shape)
        for (const std::string& n : e.expr.names()) needed.insert(n);
    for (const Axis* a : L.var_axes())
      used.push_back("int64_t " + (needed.count(a->name) ? L.axis_name(a->name) : "/*" + L.axis_name(a->name) + "*/"));
    if (layout_sms) used.push_back("int64_t " + L.num_sms());
    used.push_back("size_t " + L.offsets() + "[" + std::to_string(n_regions + 1) + "]");
    const std::string at = Names(L.names()).take("at");
    h << "inline void workspace_offsets(" << joined(used) << ") {\n  size_t " << at << " = 0;\n";
    for (size_t i = 0; i < n_scratch; ++i) {
      const ScratchBuffer& s = c.plan.buffers[i];
      std::string bytes = "size_t{" + std::to_string(dtype_size(s.dtype)) + "}";
      for (const PlanExpr& e : s.shape) bytes = (L.is_literal(e.expr.text()) ? L.cpp(e) : "size_t(" + L.cpp(e) + ")") + " * " + bytes;
      h << "  " << L.offsets() << "[" << i << "] = " << at << ";  // " << s.name << "\n"
        << "  " << at << " = kevo_export::align_up(" << at << " + " << bytes << ");\n";
    }
    if (L.has_library())
      h << "  " << L.offsets() << "[" << n_scratch << "] = " << at << ";  // cuBLASLt/cuDNN\n"
        << "  " << at << " = kevo_export::align_up(" << at << " + kevo_export::kLibraryWorkspaceBytes);\n";
    h << "  " << L.offsets() << "[" << n_regions << "] = " << at << ";\n}\n\n";
  }

  // workspace_bytes.
  h << "// The workspace run() needs for this shape, in bytes (0 for a shape it does not accept"
    << (layout_sms ? ", or when the\n// current device's SM count cannot be read" : "") << ").\n";
  if (n_regions == 0) {
    h << "inline size_t workspace_bytes(" << L.axis_params_commented() << ") { return 0; }  // the plan has no scratch\n\n";
  } else {
    h << "inline size_t workspace_bytes(" << L.axis_params() << ") {\n"
      << "  if (validated_workload(" << L.axis_args() << ") < 0) return 0;\n";
    std::vector<std::string> args;
    for (const Axis* a : L.var_axes()) args.push_back(L.axis_name(a->name));
    if (layout_sms) {
      h << "  int64_t " << L.num_sms() << " = 0;\n"
        << "  if (kevo_export::num_sms(&" << L.num_sms() << ") != cudaSuccess) return 0;\n";
      args.push_back(L.num_sms());
    }
    args.push_back(L.offsets());
    h << "  size_t " << L.offsets() << "[" << n_regions + 1 << "];\n"
      << "  workspace_offsets(" << joined(args) << ");\n"
      << "  return " << L.offsets() << "[" << n_regions << "];\n}\n\n";
  }

  // run.
  std::vector<std::string> params;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const TensorDecl& t : *list)
      params.push_back(std::string(list == &task.inputs ? "const " : "") + c_type(t.dtype) + "* " + L.tensor_name(t.name));
  for (const Axis* a : L.var_axes()) params.push_back("int64_t " + L.axis_name(a->name));
  params.push_back("cudaStream_t stream");
  params.push_back("void* workspace = nullptr");
  params.push_back("size_t workspace_bytes = 0");
  h << "// Runs the plan on `stream`: " << c.plan.steps.size() << " step" << (c.plan.steps.size() == 1 ? "" : "s")
    << ", in order. Returns the first error, cudaErrorInvalidValue for a shape\n"
    << "// outside kValidatedWorkloads, a null tensor, or a workspace that is too small or not 256-byte aligned.\n"
    << "inline cudaError_t run(" << joined(params, ",\n                       ") << ") {\n"
    << "  // Shape guard: only the validated workloads.\n"
    << "  if (validated_workload(" << L.axis_args() << ") < 0) return cudaErrorInvalidValue;\n";
  {
    std::vector<std::string> nulls;
    for (const auto* list : {&task.inputs, &task.outputs})
      for (const TensorDecl& t : *list) nulls.push_back("!" + L.tensor_name(t.name));
    if (!nulls.empty()) h << "  if (" << joined(nulls, " || ") << ") return cudaErrorInvalidValue;\n";
  }
  h << "  cudaError_t " << L.err() << " = cudaSuccess;\n";
  if (needs_sms)
    h << "  int64_t " << L.num_sms() << " = 0;  // the plan sizes some launches by the GPU's SM count\n"
      << "  if ((" << L.err() << " = kevo_export::num_sms(&" << L.num_sms() << ")) != cudaSuccess) return " << L.err()
      << ";\n";
  if (n_regions == 0) {
    h << "  (void)workspace;  // the plan needs no scratch\n  (void)workspace_bytes;\n";
  } else {
    std::vector<std::string> args;
    for (const Axis* a : L.var_axes()) args.push_back(L.axis_name(a->name));
    if (layout_sms) args.push_back(L.num_sms());
    args.push_back(L.offsets());
    h << "  size_t " << L.offsets() << "[" << n_regions + 1 << "];\n"
      << "  workspace_offsets(" << joined(args) << ");\n"
      << "  if (workspace == nullptr || workspace_bytes < " << L.offsets() << "[" << n_regions
      << "] || reinterpret_cast<uintptr_t>(workspace) % 256 != 0)\n"
      << "    return cudaErrorInvalidValue;\n";
    for (size_t i = 0; i < n_scratch; ++i)
      h << "  void* " << L.scratch_name(c.plan.buffers[i].name) << " = static_cast<char*>(workspace) + " << L.offsets()
        << "[" << i << "];\n";
    if (L.has_library())
      h << "  void* " << L.library() << " = static_cast<char*>(workspace) + " << L.offsets() << "[" << n_scratch
        << "];\n";
  }

  std::map<std::string, size_t> kernel_index;
  for (size_t i = 0; i < kernels.size(); ++i) kernel_index[kernels[i]] = i;
  for (size_t si = 0; si < c.plan.steps.size(); ++si) {
    const Step& step = c.plan.steps[si];
    h << "\n";
    if (const auto* k = std::get_if<KernelStep>(&step.op)) {
      std::vector<std::string> described;
      for (const KernelArg& a : k->args) {
        switch (a.kind) {
          case ArgKind::Buffer: described.push_back(a.buffer); break;
          case ArgKind::Int32: described.push_back("int " + a.value.expr.text()); break;
          case ArgKind::Int64: described.push_back("int64 " + a.value.expr.text()); break;
          case ArgKind::Float32: described.push_back("float " + double_literal(a.real)); break;
          case ArgKind::Float64: described.push_back("double " + double_literal(a.real)); break;
        }
      }
      h << "  // step " << si << ": " << k->kernel << ", grid " << plan_expr_list(k->grid) << ", block "
        << plan_expr_list(k->block);
      if (!(L.is_literal(k->shared_bytes.expr.text()) && L.cpp(k->shared_bytes) == "0"))
        h << ", " << k->shared_bytes.expr.text() << " bytes of dynamic shared memory";
      h << "\n  //         args (" << joined(described) << ")\n  {\n";
      Names local = L.names();
      std::vector<std::string> arg_ptrs;
      for (size_t ai = 0; ai < k->args.size(); ++ai) {
        const KernelArg& a = k->args[ai];
        if (a.kind == ArgKind::Buffer) {
          arg_ptrs.push_back("&" + L.pointer(a.buffer));
          continue;
        }
        std::string v = local.take("arg" + std::to_string(ai));
        switch (a.kind) {
          case ArgKind::Int32: h << "    int32_t " << v << " = static_cast<int32_t>(" << L.cpp(a.value) << ");\n"; break;
          case ArgKind::Int64: h << "    int64_t " << v << " = " << L.cpp(a.value) << ";\n"; break;
          case ArgKind::Float32: h << "    float " << v << " = " << float_literal(a.real) << ";\n"; break;
          case ArgKind::Float64: h << "    double " << v << " = " << double_literal(a.real) << ";\n"; break;
          case ArgKind::Buffer: break;
        }
        arg_ptrs.push_back("&" + v);
      }
      std::string args_name = local.take("args");
      if (arg_ptrs.empty()) h << "    void** " << args_name << " = nullptr;\n";
      else h << "    void* " << args_name << "[] = {" << joined(arg_ptrs) << "};\n";
      auto dims = [&](const std::vector<PlanExpr>& v) {
        std::vector<std::string> out;
        for (const PlanExpr& e : v) out.push_back(L.unsigned_cpp(e));
        return "dim3(" + joined(out) + ")";
      };
      std::string smem = L.is_literal(k->shared_bytes.expr.text()) ? L.cpp(k->shared_bytes)
                                                                     : "size_t(" + L.cpp(k->shared_bytes) + ")";
      h << "    " << L.err() << " = kevo_export::launch(source::" << kernel_fn << kernel_index.at(k->kernel) << "(), "
        << dims(k->grid) << ", " << dims(k->block) << ", " << smem << ", " << args_name << ", stream);\n"
        << "    if (" << L.err() << " != cudaSuccess) return " << L.err() << ";\n  }\n";
    } else if (const auto* m = std::get_if<MatmulStep>(&step.op)) {
      std::vector<std::string> a = L.shape(m->a), b = L.shape(m->b);
      const std::string rows = m->transpose_a ? a[1] : a[0], inner = m->transpose_a ? a[0] : a[1];
      const std::string cols = m->transpose_b ? b[0] : b[1];
      std::string value = (m->alpha == 1.0 ? "" : double_literal(m->alpha) + " * ") + m->a +
                          (m->transpose_a ? "^T" : "") + " @ " + m->b + (m->transpose_b ? "^T" : "") +
                          (m->bias.empty() ? "" : " + " + m->bias);
      if (m->epilogue == Epilogue::Relu || m->epilogue == Epilogue::BiasRelu) value = "relu(" + value + ")";
      if (m->epilogue == Epilogue::Gelu || m->epilogue == Epilogue::BiasGelu) value = "gelu_tanh(" + value + ")";
      h << "  // step " << si << ": cuBLASLt, " << m->d << " = " << value << ", fp32 (no TF32)\n"
        << "  " << L.err() << " = kevo_export::cublaslt_matmul(\n"
        << "      " << L.pointer(m->a) << ", " << L.pointer(m->b) << ", " << L.pointer(m->d) << ", "
        << (m->bias.empty() ? "nullptr" : L.pointer(m->bias)) << ",\n"
        << "      kevo_export::MatmulShape{" << rows << ", " << cols << ", " << inner << ", "
        << (m->transpose_a ? "true" : "false") << ", " << (m->transpose_b ? "true" : "false") << ", "
        << float_literal(m->alpha) << ", " << cublaslt_epilogue(m->epilogue) << ", " << m->algo
        << "},  // m, n, k, transpose a, b, alpha, epilogue, "
        << (m->algo == kAutotunedAlgo ? "algorithm autotuned at the first call of each shape\n"
                                      : "heuristic algorithm index\n")
        << "      " << L.library() << ", kevo_export::kLibraryWorkspaceBytes, stream);\n"
        << "  if (" << L.err() << " != cudaSuccess) return " << L.err() << ";\n";
    } else {
      const auto& cv = std::get<Conv2dStep>(step.op);
      auto list = [](const std::vector<std::string>& v) { return "{" + joined(v) + "}"; };
      auto pair = [](const std::array<int64_t, 2>& v) {
        return "{" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "}";
      };
      std::string value = "conv2d(" + cv.x + ", " + cv.w + ")" + (cv.bias.empty() ? "" : " + " + cv.bias);
      if (cv.epilogue == Epilogue::Relu) value = "relu(" + value + ")";
      h << "  // step " << si << ": cuDNN, " << cv.y << " = " << value << ", NCHW fp32 (no TF32)\n"
        << "  " << L.err() << " = kevo_export::cudnn_conv2d_forward(\n"
        << "      " << L.pointer(cv.x) << ", " << L.pointer(cv.w) << ", " << L.pointer(cv.y) << ", "
        << (cv.bias.empty() ? "nullptr" : L.pointer(cv.bias)) << ",\n"
        << "      kevo_export::Conv2dShape{" << list(L.shape(cv.x)) << ", " << list(L.shape(cv.w)) << ", "
        << list(L.shape(cv.y)) << ",\n"
        << "                               " << pair(cv.stride) << ", " << pair(cv.padding) << ", "
        << pair(cv.dilation) << ", " << cv.groups << ", " << (cv.epilogue == Epilogue::Relu ? "true" : "false")
        << "},  // x, w, y shapes; stride, padding, dilation, groups, relu\n"
        << "      " << L.library() << ", kevo_export::kLibraryWorkspaceBytes, stream);\n"
        << "  if (" << L.err() << " != cudaSuccess) return " << L.err() << ";\n";
    }
  }
  h << "  return cudaSuccess;\n}\n\n}  // namespace\n}  // namespace " << ns << "\n";
  return h.str();
}

}  // namespace kevo::store
